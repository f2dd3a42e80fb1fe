#include "Options.h"

#include <cstdlib>

#include "Input.h"

namespace devcopy::cli {

const char* const kUsage = R"(usage: devcopy analyze [options] [PATH...]

Analyzes the translation units of a compile database (all of them, or those
under PATH...) with the devcopy checks and reports redundant device copies.

options:
  -p BUILD_DIR             directory holding compile_commands.json (default .)
  --format text|json|sarif output format (default text)
  --output FILE            write the report to FILE instead of stdout
  --jobs N                 translation units analyzed in parallel (default: all cores)
  --checks GLOBS           check selection, applied after .clang-tidy's Checks
  --config-file FILE       use this clang-tidy config instead of .clang-tidy files
  --baseline FILE          report, and fail on, only findings FILE does not hold
  --write-baseline FILE    record today's findings in FILE
  --fix                    apply the checks' fix-its
  --root DIR               paths in reports are relative to DIR (default: git checkout)
  --no-progress            no progress line, even on a terminal
  --facts FILE             write the cross-file facts (module moves) to FILE
                           (default BUILD_DIR/devcopy-facts.json, where
                           devcopy-tidy, the plugin and devcopy-clangd look)
  --no-facts               analyze each file alone: no cross-file findings, no facts file
  --skip-unlisted          a PATH the compile database does not list is skipped
                           with a note instead of an error (for pre-commit hooks)
  --cache-dir DIR          results of unchanged units are reused from DIR
                           (default BUILD_DIR/.devcopy-cache)
  --no-cache               analyze every unit again; store nothing
  --shard K/N              analyze the K-th of N stable shares of the units and
                           write a shard file (--output) for devcopy merge

usage: devcopy merge [-p BUILD_DIR] [--format ...] [--output FILE] [--baseline FILE]
                     [--write-baseline FILE] [--facts FILE] SHARD_FILE...

Joins the shard files of 'devcopy analyze --shard K/N' (K = 1..N) into the
report, baseline and facts file one unsharded run would write.

exit codes: 0 no new findings, 1 new findings, 2 usage or tool error.
)";

static bool parseJobs(const std::string& text, unsigned& jobs) {
  char* end = nullptr;
  long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end || n < 1 || n > 4096) return false;
  jobs = unsigned(n);
  return true;
}

static Action parseArgs(int argc, const char* const* argv, Options& opts, std::string& error) {
  if (argc < 2) {
    error = "missing command; run 'devcopy analyze -p BUILD_DIR' (see devcopy --help)";
    return Action::Error;
  }
  std::string command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") return Action::Help;
  if (command == "--version") return Action::Version;
  opts.merge = command == "merge";
  if (command != "analyze" && !opts.merge) {
    error = "unknown command '" + command + "'; the commands are 'devcopy analyze' and "
            "'devcopy merge' (see --help)";
    return Action::Error;
  }
  // Options taking a value accept both "--opt VALUE" and "--opt=VALUE".
  const std::pair<const char*, std::string*> valued[] = {
      {"-p", &opts.buildDir},           {"--format", &opts.format},
      {"--output", &opts.output},       {"--config-file", &opts.configFile},
      {"--baseline", &opts.baseline},   {"--write-baseline", &opts.writeBaseline},
      {"--root", &opts.root},           {"--facts", &opts.facts},
      {"--cache-dir", &opts.cacheDir},  {"--shard", &opts.shard}};
  bool onlyPaths = false;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (onlyPaths || arg.empty() || arg[0] != '-') {
      opts.paths.push_back(arg);
      continue;
    }
    if (arg == "--") { onlyPaths = true; continue; }
    if (arg == "--help" || arg == "-h") return Action::Help;
    if (arg == "--fix") { opts.fix = true; continue; }
    if (arg == "--no-progress") { opts.progress = false; continue; }
    if (arg == "--skip-unlisted") { opts.skipUnlisted = true; continue; }
    if (arg == "--no-facts") { opts.noFacts = true; continue; }
    if (arg == "--no-cache") { opts.noCache = true; continue; }
    std::string name = arg, value;
    bool hasValue = false;
    if (auto eq = arg.find('='); eq != std::string::npos && arg.rfind("--", 0) == 0) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      hasValue = true;
    }
    bool known = name == "--jobs" || name == "-j" || name == "--checks";
    for (auto& [flag, target] : valued) known |= name == flag;
    if (!known) {
      error = "unknown option '" + arg + "' (see devcopy --help)";
      return Action::Error;
    }
    if (!hasValue) {
      if (i + 1 >= argc) {
        error = "option '" + name + "' needs a value (see devcopy --help)";
        return Action::Error;
      }
      value = argv[++i];
    }
    if (name == "--jobs" || name == "-j") {
      if (!parseJobs(value, opts.jobs)) {
        error = "--jobs wants a positive number, not '" + value + "'";
        return Action::Error;
      }
    } else if (name == "--checks") {
      opts.checks = value;
    } else {
      for (auto& [flag, target] : valued)
        if (name == flag) *target = value;
    }
  }
  if (opts.format != "text" && opts.format != "json" && opts.format != "sarif") {
    error = "--format must be text, json or sarif, not '" + opts.format + "'";
    return Action::Error;
  }
  if (!opts.baseline.empty() && opts.baseline == opts.writeBaseline) {
    error = "--baseline and --write-baseline name the same file '" + opts.baseline + "'";
    return Action::Error;
  }
  if (opts.merge && !opts.shard.empty()) {
    error = "--shard belongs to 'devcopy analyze'; 'devcopy merge' takes the shard files";
    return Action::Error;
  }
  if (!opts.shard.empty()) {
    const char* clash = opts.fix ? "--fix"
                        : !opts.baseline.empty() ? "--baseline"
                        : !opts.writeBaseline.empty() ? "--write-baseline"
                        : opts.format != "text" ? "--format" : nullptr;
    if (clash) {
      error = std::string("--shard writes a shard file for 'devcopy merge', which takes ") +
              clash + "; give it to the merge instead";
      return Action::Error;
    }
  }
  if (opts.merge && opts.fix) {
    error = "devcopy merge cannot apply fixes; run 'devcopy analyze --fix' on the sources";
    return Action::Error;
  }
  return Action::Analyze;
}

Action parseOptions(int argc, const char* const* argv, Options& opts, std::string& error) {
  Action action = parseArgs(argc, argv, opts, error);
  if (action == Action::Error) error = oneLine(error);  // it quotes the arguments
  return action;
}

}  // namespace devcopy::cli
