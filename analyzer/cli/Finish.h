// The run-wide steps between the analysis and the reports, the same for
// warm, cold, sharded and merged runs.
#pragma once

#include <string>
#include <vector>

#include "Finding.h"
#include "Options.h"
#include "Runner.h"
#include "SourceText.h"

namespace devcopy::cli {

/// Lines and columns, compile errors apart (one tool error per file),
/// --line-filter, one finding per place, fingerprints; then --export-fixes
/// and --fix (not where a unit does not compile, unless --fix-errors, as
/// clang-tidy).
void finish(Results &results, SourceText &sources,
            const std::vector<TranslationUnit> &units, const Options &opts,
            const std::string &cwd, const std::string &root);

} // namespace devcopy::cli
