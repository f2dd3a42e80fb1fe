#include "Fixes.h"

#include <algorithm>
#include <map>
#include <set>

#include "AtomicFile.h"
#include "clang/Tooling/Core/Replacement.h"
#include "llvm/Support/MemoryBuffer.h"

namespace devcopy::cli {

using clang::tooling::Replacement;
using clang::tooling::Replacements;

namespace {

struct Pending {
  std::string shown; // the path as the findings name it
  Replacements edits;
};

/// Reads each file, applies its edits and stages the result; false (and an
/// error) when any file cannot be read, patched or written.
bool stage(const std::map<std::string, Pending> &byFile,
           std::vector<AtomicFile> &staged, std::vector<ToolError> &errors) {
  bool ok = true;
  for (const auto &[real, pending] : byFile) {
    const std::string &file = pending.shown;
    auto buffer = llvm::MemoryBuffer::getFile(real);
    if (!buffer) {
      errors.push_back({file, "cannot read '" + file + "' to apply fixes: " +
                                  buffer.getError().message()});
      ok = false;
      continue;
    }
    auto code = clang::tooling::applyAllReplacements((*buffer)->getBuffer(),
                                                     pending.edits);
    if (!code) {
      errors.push_back({file, "cannot apply fixes to '" + file +
                                  "': " + llvm::toString(code.takeError())});
      ok = false;
      continue;
    }
    auto out = AtomicFile::create(file);
    if (!out) {
      errors.push_back({file, llvm::toString(out.takeError()) +
                                  " (no fix was applied to any "
                                  "file)"});
      ok = false;
      continue;
    }
    out->os() << *code;
    staged.push_back(std::move(*out));
  }
  return ok;
}

} // namespace

unsigned applyFixes(std::vector<Finding> &findings, SourceText &sources,
                    std::vector<ToolError> &errors) {
  std::map<std::string, Pending> byFile; // real path -> its edits
  std::vector<std::size_t> taken;        // findings whose fix is in byFile
  for (std::size_t i = 0; i < findings.size(); ++i) {
    if (findings[i].fixes.empty())
      continue;
    std::map<std::string, Pending> trial = byFile; // all of this fix, or none
    bool ok = true;
    for (const Edit &e : findings[i].fixes) {
      const std::string &real = sources.identity(e.begin.file);
      Pending &p = trial[real];
      if (p.shown.empty())
        p.shown = e.begin.file;
      Replacement r(real, e.begin.offset, e.length, e.text);
      // The same edit reached by another path is taken already (clang would
      // merge two insertions at one offset into a double insertion).
      if (std::find(p.edits.begin(), p.edits.end(), r) != p.edits.end())
        continue;
      if (llvm::Error err = p.edits.add(r)) {
        llvm::consumeError(std::move(err));
        ok = false;
        break;
      }
    }
    if (!ok)
      continue;
    byFile = std::move(trial);
    taken.push_back(i);
  }
  std::vector<AtomicFile> staged;
  if (!stage(byFile, staged, errors))
    return 0; // `staged` discards itself
  std::set<std::string> failed;
  for (AtomicFile &f : staged)
    if (llvm::Error err = f.commit()) {
      errors.push_back({f.target(), llvm::toString(std::move(err))});
      failed.insert(f.target());
    }
  std::set<std::size_t> fixed;
  for (std::size_t i : taken) {
    bool all = true;
    for (const Edit &e : findings[i].fixes)
      all = all && !failed.count(sources.identity(e.begin.file));
    if (all)
      fixed.insert(i);
  }
  std::vector<Finding> left;
  for (std::size_t i = 0; i < findings.size(); ++i)
    if (!fixed.count(i))
      left.push_back(std::move(findings[i]));
  findings = std::move(left);
  return unsigned(fixed.size());
}

} // namespace devcopy::cli
