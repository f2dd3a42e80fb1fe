// The text and JSON writers. SARIF has its own file (Sarif.h).
#pragma once

#include <string>

#include "Finding.h"
#include "SourceText.h"
#include "llvm/Support/raw_ostream.h"

namespace devcopy::cli {

/// clang's `file:line:col: warning: message [rule]`, then the source line,
/// a caret line with the ranges and the fix-it text (Snippet.h); notes the
/// same way. Editors and CI log parsers already read it. File names are
/// relative to `cwd` when below it.
void writeText(llvm::raw_ostream &out, const Results &results,
               SourceText &sources, const std::string &cwd);

/// One JSON document: findings (with notes, fixes, fingerprints), tool errors
/// and counts. File names are relative to `root` when below it.
void writeJson(llvm::raw_ostream &out, const Results &results,
               const std::string &root);

} // namespace devcopy::cli
