// The source snippet clang prints under a diagnostic: the line(s), a caret
// line with the ranges (`~~~^~~~`) and the fix-it insertion line, with the
// ` 12 | ` line-number gutter. Mirrors clang's TextDiagnostic so devcopy's
// text output reads like clang-tidy's.
#pragma once

#include <string>
#include <vector>

#include "Finding.h"
#include "SourceText.h"
#include "llvm/Support/raw_ostream.h"

namespace devcopy::cli {

/// Writes the snippet for a diagnostic at `at` (located) highlighting
/// `ranges` and what `fixes` remove, and showing the text `fixes` insert
/// below its column.
/// Nothing when the file cannot be read.
void writeSnippet(llvm::raw_ostream &out, SourceText &sources,
                  const Position &at, const std::vector<Range> &ranges,
                  const std::vector<Edit> &fixes);

} // namespace devcopy::cli
