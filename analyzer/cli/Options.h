// Command-line parsing for `devcopy`. Hand-written rather than llvm::cl so a
// usage error is one line and exit code 2, like every other devcopy error.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace devcopy::cli {

struct Options {
  std::string buildDir = ".";  // -p: holds compile_commands.json
  std::string format = "text";  // text | json | sarif
  std::string output;           // --output; "" = stdout
  unsigned jobs = 0;            // --jobs; 0 = all cores
  std::optional<std::string> checks;  // --checks, appended after .clang-tidy's
  std::string configFile;       // --config-file: replaces .clang-tidy lookup
  std::string baseline;         // --baseline
  std::string writeBaseline;    // --write-baseline
  std::string root;             // --root; "" = enclosing git checkout, else cwd
  bool fix = false;
  bool progress = true;         // --no-progress turns the terminal line off
  bool skipUnlisted = false;
  std::string facts;            // --facts; "" = BUILD_DIR/devcopy-facts.json
  bool noFacts = false;         // --no-facts: each unit alone, no facts file    // --skip-unlisted: PATHs the database lacks are noted, not errors
  std::vector<std::string> paths;  // devcopy merge: the shard files
  std::string cacheDir;  // --cache-dir; "" = BUILD_DIR/.devcopy-cache
  bool noCache = false;  // --no-cache: analyze every unit, store nothing
  std::string shard;     // --shard K/N: analyze one share, write a shard file
  bool merge = false;    // devcopy merge SHARD_FILE...: finish a sharded run
};

enum class Action { Analyze, Help, Version, Error };

/// Parses argv. On Action::Error, `error` holds a one-line reason.
Action parseOptions(int argc, const char* const* argv, Options& opts, std::string& error);

extern const char* const kUsage;

}  // namespace devcopy::cli
