#include "ExportFixes.h"

#include "AtomicFile.h"
#include "Input.h"
#include "SourceText.h"
#include "clang/Tooling/Core/Diagnostic.h"
#include "clang/Tooling/DiagnosticsYaml.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/YAMLTraits.h"

namespace devcopy::cli {

namespace tooling = clang::tooling;

/// `file` as clang-tidy names it: relative to the compile directory when below
/// it.
static std::string name(const std::string &file, const std::string &dir) {
  std::string rel = relativeTo(file, dir);
  return rel.empty() ? file : rel;
}

static tooling::DiagnosticMessage message(const std::string &text,
                                          const Position &where,
                                          const std::vector<Range> &ranges,
                                          const std::string &dir) {
  tooling::DiagnosticMessage m;
  m.Message = text;
  m.FilePath = name(where.file, dir);
  m.FileOffset = where.offset;
  for (const Range &r : ranges) {
    tooling::FileByteRange range;
    range.FilePath = name(r.begin.file, dir);
    range.FileOffset = r.begin.offset;
    range.Length = r.end.offset - r.begin.offset;
    m.Ranges.push_back(std::move(range));
  }
  return m;
}

void writeExportedFixes(llvm::raw_ostream &out,
                        const std::vector<Finding> &findings,
                        const std::string &mainFile) {
  tooling::TranslationUnitDiagnostics tu;
  tu.MainSourceFile = mainFile;
  for (const Finding &f : findings) {
    tooling::Diagnostic d;
    std::string dir =
        f.directory.empty()
            ? std::string(llvm::sys::path::parent_path(f.where.file))
            : f.directory;
    d.DiagnosticName = f.rule;
    d.Message = message(f.message, f.where, f.ranges, dir);
    for (const Edit &e : f.fixes) {
      std::string file = name(e.begin.file, dir);
      tooling::Replacement r(file, e.begin.offset, e.length, e.text);
      // Edits of one finding never overlap (Fixes.cpp relies on it too).
      llvm::consumeError(d.Message.Fix[file].add(r));
    }
    for (const Note &n : f.notes)
      d.Notes.push_back(message(n.message, n.where, n.ranges, dir));
    d.DiagLevel = f.level == "error" ? tooling::Diagnostic::Error
                                     : tooling::Diagnostic::Warning;
    d.BuildDirectory = dir;
    tu.Diagnostics.push_back(std::move(d));
  }
  llvm::yaml::Output yaml(out);
  yaml << tu;
}

llvm::Error exportFixes(const std::string &path,
                        const std::vector<Finding> &findings,
                        const std::vector<TranslationUnit> &units) {
  std::string mainFile = units.size() == 1 ? units[0].file : "";
  if (llvm::Error e = writeAtomically(path, [&](llvm::raw_ostream &out) {
        writeExportedFixes(out, findings, mainFile);
      }))
    return toolError("cannot write --export-fixes '" + path + "': " +
                     llvm::toString(std::move(e)) + "; choose a writable path");
  return llvm::Error::success();
}

} // namespace devcopy::cli
