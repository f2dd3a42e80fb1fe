#include "ExportFixes.h"

#include <map>

#include "AtomicFile.h"
#include "Input.h"
#include "SourceText.h"
#include "clang/Tooling/Core/Diagnostic.h"
#include "clang/Tooling/DiagnosticsYaml.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/YAMLTraits.h"

namespace devcopy::cli {

namespace tooling = clang::tooling;

// Every path is absolute: clang-apply-replacements and editors read the
// file from anywhere, whatever the unit's build directory.
static tooling::DiagnosticMessage message(const std::string &text,
                                          const Position &where,
                                          const std::vector<Range> &ranges) {
  tooling::DiagnosticMessage m;
  m.Message = text;
  m.FilePath = where.file;
  m.FileOffset = where.offset;
  for (const Range &r : ranges) {
    tooling::FileByteRange range;
    range.FilePath = r.begin.file;
    range.FileOffset = r.begin.offset;
    range.Length = r.end.offset - r.begin.offset;
    m.Ranges.push_back(std::move(range));
  }
  return m;
}

static void writeExportedFixes(llvm::raw_ostream &out,
                               const std::vector<Finding> &findings,
                               const std::string &mainFile,
                               const std::map<std::string, std::string> &dirs) {
  tooling::TranslationUnitDiagnostics tu;
  tu.MainSourceFile = mainFile;
  for (const Finding &f : findings) {
    tooling::Diagnostic d;
    // A finding made after the analysis (cross-file) has no directory of its
    // own: that of its file's unit.
    auto known = dirs.find(f.where.file);
    std::string dir =
        !f.directory.empty() ? f.directory
        : known != dirs.end()
            ? known->second
            : std::string(llvm::sys::path::parent_path(f.where.file));
    d.DiagnosticName = f.rule;
    d.Message = message(f.message, f.where, f.ranges);
    for (const Edit &e : f.fixes) {
      const std::string &file = e.begin.file;
      tooling::Replacement r(file, e.begin.offset, e.length, e.text);
      // Edits of one finding never overlap (Fixes.cpp relies on it too).
      llvm::consumeError(d.Message.Fix[file].add(r));
    }
    for (const Note &n : f.notes)
      d.Notes.push_back(message(n.message, n.where, n.ranges));
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
  std::map<std::string, std::string> dirs; // unit file -> build directory
  for (const Finding &f : findings)
    if (!f.directory.empty())
      dirs.emplace(f.where.file, f.directory);
  for (const TranslationUnit &u : units)
    if (!u.commands.empty())
      dirs[u.file] = u.commands[0].Directory;
  if (llvm::Error e = writeAtomically(path, [&](llvm::raw_ostream &out) {
        writeExportedFixes(out, findings, mainFile, dirs);
      }))
    return toolError("cannot write --export-fixes '" + path + "': " +
                     llvm::toString(std::move(e)) + "; choose a writable path");
  return llvm::Error::success();
}

} // namespace devcopy::cli
