#include "Fixes.h"

#include <map>

#include "clang/Tooling/Core/Replacement.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

namespace devcopy::cli {

using clang::tooling::Replacement;
using clang::tooling::Replacements;

unsigned applyFixes(std::vector<Finding>& findings, std::vector<ToolError>& errors) {
  std::map<std::string, Replacements> byFile;
  std::vector<Finding> unfixed;
  unsigned fixed = 0;
  for (Finding& f : findings) {
    if (f.fixes.empty()) {
      unfixed.push_back(std::move(f));
      continue;
    }
    std::map<std::string, Replacements> trial = byFile;  // all of this fix, or none
    bool ok = true;
    for (const Edit& e : f.fixes)
      if (llvm::Error err = trial[e.begin.file].add(
              Replacement(e.begin.file, e.begin.offset, e.length, e.text))) {
        llvm::consumeError(std::move(err));
        ok = false;
        break;
      }
    if (!ok) {
      unfixed.push_back(std::move(f));
      continue;
    }
    byFile = std::move(trial);
    ++fixed;
  }
  for (const auto& [file, replacements] : byFile) {
    auto buffer = llvm::MemoryBuffer::getFile(file);
    if (!buffer) {
      errors.push_back({file, "cannot read '" + file + "' to apply fixes: " +
                                  buffer.getError().message()});
      continue;
    }
    auto code = clang::tooling::applyAllReplacements((*buffer)->getBuffer(), replacements);
    if (!code) {
      errors.push_back({file, "cannot apply fixes to '" + file +
                                  "': " + llvm::toString(code.takeError())});
      continue;
    }
    std::error_code ec;
    llvm::raw_fd_ostream out(file, ec);
    if (ec) {
      errors.push_back({file, "cannot write fixes to '" + file + "': " + ec.message() +
                                  "; make it writable and run again"});
      continue;
    }
    out << *code;
  }
  findings = std::move(unfixed);
  return fixed;
}

}  // namespace devcopy::cli
