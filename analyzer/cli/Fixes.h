// --fix: applies the checks' fix-its to the source files.
#pragma once

#include <vector>

#include "Finding.h"

namespace devcopy::cli {

/// Applies each finding's fix-its, all of them or none per finding (a fix
/// that overlaps one already taken is skipped, as clang-tidy does). Fixed
/// findings leave `findings`; a file that cannot be written adds an error.
/// Returns how many findings were fixed.
unsigned applyFixes(std::vector<Finding>& findings, std::vector<ToolError>& errors);

}  // namespace devcopy::cli
