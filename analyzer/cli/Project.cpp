#include "Project.h"

#include <algorithm>
#include <fstream>
#include <map>

#include "Input.h"
#include "Readers.h"
#include "clang-tidy/ClangTidy.h"
#include "clang-tidy/GlobList.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

namespace devcopy::cli {

using clang::tidy::ClangTidyOptions;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

static bool isUnder(const std::string &file, const std::string &dirOrFile) {
  return file == dirOrFile ||
         (file.size() > dirOrFile.size() &&
          file.compare(0, dirOrFile.size(), dirOrFile) == 0 &&
          (dirOrFile.back() == '/' || file[dirOrFile.size()] == '/'));
}

// Parsing <torch/torch.h> dwarfs everything else, so a unit that includes
// LibTorch is estimated as far costlier than any plain file.
static double estimateCost(const std::string &file) {
  std::ifstream in(file, std::ios::binary);
  std::string head(64 * 1024, '\0');
  in.read(head.data(), head.size());
  head.resize(std::size_t(in.gcount()));
  bool torch = head.find("<torch/") != std::string::npos ||
               head.find("<ATen/") != std::string::npos;
  return double(head.size()) + (torch ? 1e9 : 0);
}

/// `devcopy analyze FILE... -- FLAGS`: each FILE compiled with FLAGS in the
/// current directory, as clang-tidy's fixed compilation database does it.
static bool fixedUnits(const Options &opts, const std::string &cwd,
                       std::vector<TranslationUnit> &units,
                       std::vector<ToolError> &errors) {
  std::vector<const char *> argv{"devcopy", "--"};
  for (const std::string &flag : *opts.compileFlags)
    argv.push_back(flag.c_str());
  int argc = int(argv.size());
  std::string why;
  auto db = clang::tooling::FixedCompilationDatabase::loadFromCommandLine(
      argc, argv.data(), why, cwd);
  if (!db) {
    errors.push_back({"", "the flags after '--' are no compile command: " +
                              (why.empty() ? "clang rejects them" : why)});
    return false;
  }
  for (const std::string &p : opts.paths) {
    std::string abs = absolutePath(p, cwd);
    if (!fs::is_regular_file(abs)) {
      errors.push_back({abs, "'" + p +
                                 "' is no source file; with '--' name "
                                 "the files to analyze, not folders"});
      return false;
    }
    units.push_back({abs, db->getCompileCommands(abs), estimateCost(abs)});
  }
  return true;
}

bool selectUnits(const Options &opts, const std::string &cwd,
                 std::vector<TranslationUnit> &units,
                 std::vector<ToolError> &errors) {
  if (opts.compileFlags)
    return fixedUnits(opts, cwd, units, errors);
  std::string dbPath = absolutePath(opts.buildDir, cwd);
  if (fs::is_directory(dbPath) || !llvm::StringRef(dbPath).ends_with(".json"))
    dbPath = absolutePath("compile_commands.json", dbPath);
  if (!fs::exists(dbPath)) {
    errors.push_back(
        {dbPath, "no compile database at '" + dbPath +
                     "'; pass -p BUILD_DIR of a build configured with "
                     "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"});
    return false;
  }
  auto text = readInput(dbPath, kMaxDatabase);
  auto commands = text ? loadCompileDatabase(*text, dbPath) : text.takeError();
  if (!commands) {
    errors.push_back({dbPath, "cannot read compile database '" + dbPath +
                                  "': " + llvm::toString(commands.takeError()) +
                                  "; regenerate it with your build system"});
    return false;
  }
  // One unit per file, in the database's order, with every command for it.
  std::vector<std::string> files;
  std::map<std::string, std::vector<clang::tooling::CompileCommand>> byFile;
  for (clang::tooling::CompileCommand &c : *commands) {
    auto &slot = byFile[c.Filename];
    if (slot.empty())
      files.push_back(c.Filename);
    slot.push_back(std::move(c));
  }
  std::vector<std::string> filters;
  for (const std::string &p : opts.paths) {
    std::string abs = absolutePath(p, cwd);
    if (!fs::exists(abs)) {
      errors.push_back({abs, "path '" + p +
                                 "' does not exist; name files or directories "
                                 "holding sources of " +
                                 dbPath});
      return false;
    }
    filters.push_back(abs);
  }
  std::vector<bool> used(filters.size(), false);
  for (const std::string &abs : files) {
    bool wanted = filters.empty();
    for (std::size_t i = 0; i < filters.size(); ++i)
      if (isUnder(abs, filters[i]))
        wanted = used[i] = true;
    if (!wanted)
      continue;
    if (!fs::exists(abs) || fs::is_directory(abs)) {
      errors.push_back({abs, "'" + abs + "' is listed in " + dbPath +
                                 (fs::exists(abs) ? " as a source file but is a"
                                                    " directory"
                                                  : " but does not exist") +
                                 "; regenerate the compile database"});
      continue;
    }
    auto &cmds = byFile[abs];
    // ClangTool aborts the process when a command's directory is missing.
    auto gone = std::find_if(cmds.begin(), cmds.end(), [](const auto &c) {
      return !fs::is_directory(c.Directory);
    });
    if (gone != cmds.end()) {
      errors.push_back(
          {abs, "the compile command of '" + abs + "' runs in '" +
                    gone->Directory + "', which " +
                    (fs::exists(gone->Directory) ? "is not a directory"
                                                 : "does not exist") +
                    "; regenerate " + dbPath});
      continue;
    }
    units.push_back({abs, std::move(cmds), estimateCost(abs)});
  }
  for (std::size_t i = 0; i < filters.size(); ++i) {
    if (used[i])
      continue;
    if (opts.skipUnlisted) {
      llvm::errs() << "devcopy: note: skipping '" << opts.paths[i]
                   << "': " << dbPath << " does not list it\n";
      continue;
    }
    errors.push_back({filters[i], "no translation unit of " + dbPath +
                                      " is under '" + opts.paths[i] +
                                      "'; check the path or rebuild the "
                                      "compile database"});
    return false;
  }
  if (units.empty() && errors.empty() && !opts.skipUnlisted)
    errors.push_back({dbPath, "compile database '" + dbPath +
                                  "' lists no translation unit"});
  return !units.empty() || (opts.skipUnlisted && errors.empty());
}

/// Reads and parses a clang-tidy YAML configuration file.
static llvm::Expected<ClangTidyOptions> parseConfig(const std::string &file) {
  auto text = readInput(file, kMaxConfig);
  if (!text)
    return toolError("cannot read configuration '" + file +
                     "': " + llvm::toString(text.takeError()));
  return parseConfigText(*text, file);
}

llvm::Error loadTidyConfig(const Options &opts, TidyConfig &config) {
  config.defaults = ClangTidyOptions::getDefaults();
  config.defaults.Checks =
      "-*,devcopy-*"; // compiler warnings are not devcopy's business
  // clang-tidy's command-line layer: these win over every configuration file.
  if (opts.checks)
    config.overrides.Checks = *opts.checks;
  if (opts.headerFilter)
    config.overrides.HeaderFilterRegex = *opts.headerFilter;
  if (opts.warningsAsErrors)
    config.overrides.WarningsAsErrors = *opts.warningsAsErrors;
  if (opts.excludeHeaderFilter)
    config.overrides.ExcludeHeaderFilterRegex = *opts.excludeHeaderFilter;
  if (opts.systemHeaders)
    config.overrides.SystemHeaders = *opts.systemHeaders;
  config.fixNotes = opts.fixNotes;
  config.allowNoChecks = opts.allowNoChecks;
  config.profile = opts.enableCheckProfile;
  if (!opts.extraArgs.empty())
    config.overrides.ExtraArgs = opts.extraArgs;
  if (!opts.extraArgsBefore.empty())
    config.overrides.ExtraArgsBefore = opts.extraArgsBefore;
  // Without facts the check reads no facts file either: each unit alone.
  if (opts.noFacts)
    config.overrides.CheckOptions["devcopy-repeated-module-move.FactsFile"]
        .Value = "none";
  if (opts.config || !opts.configFile.empty()) {
    auto parsed = opts.config ? parseConfigText(*opts.config, "--config")
                              : parseConfig(opts.configFile);
    if (!parsed)
      return aboutFile(opts.configFile, parsed.takeError());
    config.configFile = std::move(*parsed);
  }
  return llvm::Error::success();
}

/// --dump-config: the effective options, with every enabled check's options
/// and their defaults, as clang-tidy prints them.
static llvm::Error dumpConfig(ClangTidyOptions effective,
                              llvm::raw_ostream &out) {
  effective.CheckOptions = clang::tidy::getCheckOptions(effective, false);
  out << clang::tidy::configurationAsText(
             ClangTidyOptions::getDefaults().merge(effective, 0))
      << "\n";
  return llvm::Error::success();
}

/// --verify-config: each glob of every Checks that selects no check and each
/// check option no check reads, named with the configuration that set it.
static llvm::Error verifyConfig(clang::tidy::ClangTidyOptionsProvider &provider,
                                const std::string &file,
                                llvm::raw_ostream &out) {
  ClangTidyOptions all = ClangTidyOptions::getDefaults();
  all.Checks = "*";
  std::vector<std::string> names = clang::tidy::getCheckNames(all, false);
  ClangTidyOptions::OptionMap known = clang::tidy::getCheckOptions(all, false);
  std::vector<std::string> problems;
  for (const auto &[options, source] : provider.getRawOptions(file)) {
    std::string checks = options.Checks.value_or("");
    llvm::SmallVector<llvm::StringRef, 8> globs;
    llvm::StringRef(checks).split(globs, ',');
    for (llvm::StringRef glob : globs) {
      glob = glob.trim();
      llvm::StringRef bare = glob.ltrim('-').trim();
      if (bare.empty() || bare == "*")
        continue;
      clang::tidy::GlobList one(bare);
      if (std::none_of(names.begin(), names.end(),
                       [&](const std::string &n) { return one.contains(n); }))
        problems.push_back(source + ": check glob '" + glob.str() +
                           "' selects no check");
    }
    for (const auto &[key, value] : options.CheckOptions)
      if (!known.count(key))
        problems.push_back(source + ": unknown check option '" + key.str() +
                           "'");
  }
  if (!problems.empty())
    return toolError(llvm::join(problems, "; ") +
                     " (devcopy analyze --list-checks shows the checks)");
  out << "No config errors detected.\n";
  return llvm::Error::success();
}

llvm::Error printChecks(const Options &opts, const TidyConfig &config,
                        const std::string &cwd, llvm::raw_ostream &out) {
  std::string file =
      absolutePath(opts.paths.empty() ? "dummy" : opts.paths.front(), cwd);
  auto provider = config.provider();
  if (opts.dumpConfig)
    return dumpConfig(provider->getOptions(file), out);
  if (opts.verifyConfig)
    return verifyConfig(*provider, file, out);
  std::vector<std::string> enabled = clang::tidy::getCheckNames(
      provider->getOptions(file), /*AllowEnablingAnalyzerAlphaCheckers=*/false);
  if (enabled.empty() && !config.allowNoChecks)
    return toolError("no check is enabled for '" + file +
                     "': --checks and .clang-tidy 'Checks' select none");
  if (opts.explainConfig) {
    auto raw = provider->getRawOptions(file);
    for (const std::string &check : enabled)
      for (auto it = raw.rbegin(); it != raw.rend(); ++it)
        if (it->first.Checks &&
            clang::tidy::GlobList(*it->first.Checks).contains(check)) {
          // clang-tidy names its built-in defaults "clang-tidy binary".
          std::string source =
              it->second == "clang-tidy binary" ? "devcopy binary" : it->second;
          out << "'" << check << "' is enabled in the " << source << ".\n";
          break;
        }
    return llvm::Error::success();
  }
  out << "Enabled checks:";
  for (const std::string &check : enabled)
    out << "\n    " << check;
  out << "\n\n";
  return llvm::Error::success();
}

llvm::Error checkConfiguration(std::vector<TranslationUnit> &units,
                               const TidyConfig &config) {
  if (!config.configFile) {
    // The directories clang-tidy's FileOptionsProvider would read, each once.
    std::map<std::string, bool>
        inherits; // dir -> config there lets the parent count
    for (const TranslationUnit &u : units)
      for (std::string dir = std::string(path::parent_path(u.file));
           !dir.empty(); dir = std::string(path::parent_path(dir))) {
        auto known = inherits.find(dir);
        if (known != inherits.end()) {
          if (!known->second)
            break;
          continue;
        }
        std::string file = absolutePath(".clang-tidy", dir);
        bool inherit = true;
        if (fs::exists(file)) {
          auto parsed = parseConfig(file);
          if (!parsed)
            return aboutFile(file, parsed.takeError());
          inherit = parsed->InheritParentConfig.value_or(false);
        }
        inherits[dir] = inherit;
        if (!inherit || dir == "/")
          break;
      }
  }
  auto provider = config.provider();
  std::vector<TranslationUnit> enabled;
  for (TranslationUnit &u : units)
    if (!clang::tidy::getCheckNames(provider->getOptions(u.file), false)
             .empty())
      enabled.push_back(std::move(u));
  if (enabled.empty() && !units.empty() && !config.allowNoChecks) {
    return toolError(
        "no devcopy check is enabled: --checks and .clang-tidy 'Checks' "
        "select none; add devcopy-* to them");
  }
  units = std::move(enabled);
  return llvm::Error::success();
}

} // namespace devcopy::cli
