// Command-line parsing for `devcopy`, with LLVM's own option library
// (llvm::cl, one cl::SubCommand per command) so options read as clang-tidy's:
// `--checks=...`, `-checks ...`, `@response-file`, `--`. Every option is
// defined in Options.cpp, in one table per subcommand.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "llvm/Support/Error.h"

namespace devcopy::cli {

struct Options {
  std::string buildDir = ".";  // -p: holds compile_commands.json
  std::string format = "text"; // text | json | sarif
  std::string output;          // --output; "" = stdout
  unsigned jobs = 0;           // --jobs; 0 = all cores
  // clang-tidy's options, with clang-tidy's meaning.
  std::optional<std::string> checks; // --checks, after .clang-tidy's
  std::optional<std::string> config; // --config: inline YAML/JSON
  std::string configFile; // --config-file: replaces .clang-tidy lookup
  std::optional<std::string> headerFilter;     // --header-filter
  std::optional<std::string> warningsAsErrors; // --warnings-as-errors
  std::string exportFixes;                  // --export-fixes: clang-tidy's YAML
  std::vector<std::string> extraArgs;       // --extra-arg
  std::vector<std::string> extraArgsBefore; // --extra-arg-before
  bool quiet = false;                       // --quiet: no summary on stderr
  bool listChecks = false;                  // --list-checks
  bool explainConfig = false;               // --explain-config
  bool fix = false;
  // clang-tidy's, continued (clang-tidy-19 --help says the same).
  // After "--": the compiler flags of every PATH, no compile database
  // (clang::tooling::FixedCompilationDatabase).
  std::optional<std::vector<std::string>> compileFlags;
  std::string lineFilter; // --line-filter: JSON, findings on these lines only
  std::optional<std::string> excludeHeaderFilter; // --exclude-header-filter
  std::optional<bool> systemHeaders;              // --system-headers
  std::optional<bool> useColor; // --use-color; unset: when stdout is a tty
  bool dumpConfig = false;      // --dump-config: effective YAML, and exit
  bool verifyConfig = false;    // --verify-config: check names and options
  bool fixErrors = false;       // --fix-errors: --fix despite compile errors
  bool fixNotes = false;        // --fix-notes: a note's single fix-it too
  bool allowNoChecks = false;   // --allow-no-checks: none enabled is no error
  bool enableCheckProfile = false; // --enable-check-profile: timing table
  /// --list-checks, --explain-config, --dump-config, --verify-config: print
  /// about the configuration and exit, analyzing nothing.
  bool configOnly() const {
    return listChecks || explainConfig || dumpConfig || verifyConfig;
  }
  // devcopy's own.
  std::string baseline;      // --baseline
  std::string writeBaseline; // --write-baseline
  std::string root;          // --root; "" = enclosing git checkout, else cwd
  std::string ruleDocs;      // --rule-docs: base URL of the rule pages in SARIF
  bool progress = true;      // --no-progress turns the terminal line off
  bool skipUnlisted =
      false;            // --skip-unlisted: PATHs the database lacks are noted
  std::string facts;    // --facts; "" = BUILD_DIR/devcopy-facts.json
  bool noFacts = false; // --no-facts: each unit alone, no facts file
  std::vector<std::string>
      paths;            // analyze: PATHs; devcopy merge: the shard files
  std::string cacheDir; // --cache-dir; "" = BUILD_DIR/.devcopy-cache
  bool noCache = false; // --no-cache: analyze every unit, store nothing
  std::string shard;    // --shard K/N: analyze one share, write a shard file
  bool merge = false;   // devcopy merge SHARD_FILE...: finish a sharded run
};

enum class Action { Analyze, Help, Version };

/// Parses argv (argv[1] is the command). A usage error is an llvm::Error
/// whose message is one line. Help and Version print nothing: the caller
/// does (printHelp, printVersion), so parsing never exits the process.
llvm::Expected<Action> parseOptions(int argc, const char *const *argv,
                                    Options &opts);

/// Prints the help of the command argv names (`devcopy analyze --help`), or
/// the overview, with the devcopy checks one line each.
void printHelp(int argc, const char *const *argv);

/// "devcopy version X" and LLVM's version lines.
void printVersion();

} // namespace devcopy::cli
