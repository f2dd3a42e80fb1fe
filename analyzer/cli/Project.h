// Everything devcopy checks before it analyzes: the compile database, which
// translation units to run, and that every configuration file parses. Each
// failure becomes a one-line ToolError naming the file and what to do.
#pragma once

#include <string>
#include <vector>

#include "Finding.h"
#include "Options.h"
#include "Runner.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace devcopy::cli {

/// Loads the compile database and picks the units under `opts.paths` (all
/// when empty). Returns false when nothing can be analyzed; units whose file
/// is gone add an error but do not stop the others.
bool selectUnits(const Options &opts, const std::string &cwd,
                 std::vector<TranslationUnit> &units,
                 std::vector<ToolError> &errors);

/// Builds the option layers from the defaults, --config / --config-file and
/// the command line (--checks, --header-filter, ...). A bad configuration is
/// a FileProblem naming it.
llvm::Error loadTidyConfig(const Options &opts, TidyConfig &config);

/// --list-checks and --explain-config, as clang-tidy prints them, for the
/// first PATH (or a file in `cwd`). An error when no check is enabled.
llvm::Error printChecks(const Options &opts, const TidyConfig &config,
                        const std::string &cwd, llvm::raw_ostream &out);

/// Parses every .clang-tidy a unit would read (clang-tidy alone would print
/// the YAML error and carry on with defaults: a silent pass), then drops units
/// whose configuration enables no check. An error (a FileProblem naming a bad
/// configuration file) when a configuration does not parse or no unit has a
/// check enabled.
llvm::Error checkConfiguration(std::vector<TranslationUnit> &units,
                               const TidyConfig &config);

} // namespace devcopy::cli
