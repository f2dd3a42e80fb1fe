// --fix: applies the checks' fix-its to the source files.
#pragma once

#include <vector>

#include "Finding.h"
#include "SourceText.h"

namespace devcopy::cli {

/// Applies each finding's fix-its, all of them or none per finding (a fix
/// that overlaps one already taken is skipped, as clang-tidy does). Edits are
/// grouped by file identity, so a file the compile database reaches by two
/// paths (a symlinked folder) is edited once. Every file is written through
/// AtomicFile, and only when all of them can be: one that cannot (read-only,
/// gone) adds an error and leaves every file, and every finding, as it was.
/// Fixed findings leave `findings`. Returns how many findings were fixed.
unsigned applyFixes(std::vector<Finding> &findings, SourceText &sources,
                    std::vector<ToolError> &errors);

} // namespace devcopy::cli
