// --export-fixes: the findings and their fix-its as clang-tidy writes them
// (clang::tooling::TranslationUnitDiagnostics in YAML), so
// clang-apply-replacements and the tools around clang-tidy read them.
#pragma once

#include <string>
#include <vector>

#include "Finding.h"
#include "Runner.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace devcopy::cli {

/// Writes `findings` as clang-tidy's export YAML into `path`, replaced only
/// when complete (AtomicFile). MainSourceFile is the unit when there is one,
/// as in clang-tidy; "" for several. Paths are absolute; BuildDirectory is
/// the finding's unit's.
llvm::Error exportFixes(const std::string &path,
                        const std::vector<Finding> &findings,
                        const std::vector<TranslationUnit> &units);

} // namespace devcopy::cli
