// The text and JSON writers. SARIF has its own file (Sarif.h).
#pragma once

#include <string>

#include "Finding.h"
#include "llvm/Support/raw_ostream.h"

namespace devcopy::cli {

/// clang's `file:line:col: warning: message [rule]`, notes as `note:` lines,
/// which editors and CI log parsers already understand. File names are
/// relative to `cwd` when below it.
void writeText(llvm::raw_ostream& out, const Results& results, const std::string& cwd);

/// One JSON document: findings (with notes, fixes, fingerprints), tool errors
/// and counts. File names are relative to `root` when below it.
void writeJson(llvm::raw_ostream& out, const Results& results, const std::string& root);

}  // namespace devcopy::cli
