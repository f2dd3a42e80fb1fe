#include "Options.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "Input.h"
#include "LineFilter.h"
#include "common/ToolBanner.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace devcopy::cli {

namespace cl = llvm::cl;

namespace {

cl::OptionCategory Category("devcopy analyze options");
cl::OptionCategory
    TidyCategory("clang-tidy's options, with clang-tidy's meaning");

// Every subcommand and its options, in one place. A new subcommand adds its
// cl::SubCommand and options here and a case in parseOptions.
cl::SubCommand
    Analyze("analyze",
            "analyze the units of a compile database (those under PATH...) and "
            "report redundant device copies");

template <typename T> using Opt = cl::opt<T>;
// `devcopy merge` finishes a sharded run (Shard.h): the report, baseline
// and facts options are shared with analyze.
cl::SubCommand
    Merge("merge",
          "join the shard files of 'devcopy analyze --shard K/N' (K = 1..N) "
          "into the report, baseline and facts file of one unsharded run");

auto Sub = cl::sub(Analyze);
auto Both = cl::sub(Merge); // with Sub: an option of both commands

// clang-tidy's options: same names, same meaning.
Opt<std::string>
    BuildDir("p",
             cl::desc("directory holding compile_commands.json (default .)"),
             cl::value_desc("BUILD_DIR"), cl::init("."), Sub, Both,
             cl::cat(TidyCategory));
Opt<std::string>
    Checks("checks",
           cl::desc("check globs, applied after .clang-tidy's Checks"),
           cl::value_desc("GLOBS"), Sub, cl::cat(TidyCategory));
Opt<std::string>
    Config("config",
           cl::desc("configuration in YAML/JSON, used instead of .clang-tidy "
                    "files: --config=\"{Checks: '-*,devcopy-*'}\""),
           Sub, cl::cat(TidyCategory));
Opt<std::string>
    ConfigFile("config-file",
               cl::desc("clang-tidy configuration file used instead of "
                        ".clang-tidy files"),
               cl::value_desc("FILE"), Sub, cl::cat(TidyCategory));
Opt<std::string>
    HeaderFilter("header-filter",
                 cl::desc("regex of headers whose findings are reported too"),
                 cl::value_desc("REGEX"), Sub, cl::cat(TidyCategory));
Opt<std::string>
    WarningsAsErrors("warnings-as-errors",
                     cl::desc("check globs whose findings are errors"),
                     cl::value_desc("GLOBS"), Sub, cl::cat(TidyCategory));
Opt<std::string>
    ExportFixes("export-fixes",
                cl::desc("write the fix-its to FILE as clang-tidy's YAML "
                         "(clang-apply-replacements reads it)"),
                cl::value_desc("FILE"), Sub, cl::cat(TidyCategory));
cl::list<std::string> ExtraArgs("extra-arg",
                                cl::desc("append ARG to each compile command"),
                                cl::value_desc("ARG"), Sub,
                                cl::cat(TidyCategory));
cl::list<std::string>
    ExtraArgsBefore("extra-arg-before",
                    cl::desc("prepend ARG to each compile command"),
                    cl::value_desc("ARG"), Sub, cl::cat(TidyCategory));
Opt<bool> Quiet("quiet", cl::desc("no summary lines on stderr"), Sub, Both,
                cl::cat(TidyCategory));
Opt<bool> ListChecks("list-checks",
                     cl::desc("list the enabled checks and exit"), Sub,
                     cl::cat(TidyCategory));
Opt<bool> ExplainConfig(
    "explain-config",
    cl::desc("say where each enabled check was enabled, and exit"), Sub,
    cl::cat(TidyCategory));
Opt<bool> Fix("fix", cl::desc("apply the checks' fix-its"), Sub,
              cl::cat(TidyCategory));
// clang-tidy's, continued: same names and meaning as clang-tidy-19's.
Opt<std::string> LineFilterOpt(
    "line-filter",
    cl::desc("report findings on these lines only, as JSON: "
             "[{\"name\":\"file.cpp\",\"lines\":[[9,12]]},...] (a file "
             "not named has none)"),
    cl::value_desc("JSON"), Sub, Both, cl::cat(TidyCategory));
Opt<std::string> ExcludeHeaderFilter(
    "exclude-header-filter",
    cl::desc("regex of headers left out even when --header-filter matches"),
    cl::value_desc("REGEX"), Sub, cl::cat(TidyCategory));
Opt<bool> SystemHeaders("system-headers",
                        cl::desc("report findings in system headers too"), Sub,
                        cl::cat(TidyCategory));
cl::opt<bool> UseColor("use-color",
                       cl::desc("color the text report (default: when "
                                "stdout is a terminal); --use-color=false: "
                                "never"),
                       Sub, Both, cl::cat(TidyCategory));
Opt<bool> DumpConfig("dump-config",
                     cl::desc("print the effective configuration for the "
                              "first PATH as .clang-tidy YAML, and exit"),
                     Sub, cl::cat(TidyCategory));
Opt<bool> VerifyConfig(
    "verify-config",
    cl::desc("check the configuration's check names and check options, "
             "and exit"),
    Sub, cl::cat(TidyCategory));
Opt<bool> FixErrors("fix-errors",
                    cl::desc("apply fix-its even when a unit does not "
                             "compile, compile errors' fix-its too (--fix)"),
                    Sub, cl::cat(TidyCategory));
Opt<bool> FixNotes("fix-notes",
                   cl::desc("a finding without fix-it takes the one fix-it "
                            "of its notes"),
                   Sub, cl::cat(TidyCategory));
Opt<bool> AllowNoChecks(
    "allow-no-checks",
    cl::desc("no enabled check is no error: nothing is analyzed, exit 0"), Sub,
    cl::cat(TidyCategory));
Opt<bool> EnableCheckProfile(
    "enable-check-profile",
    cl::desc("time each check and print the table to stderr (every unit is "
             "analyzed: the results cache is not used)"),
    Sub, cl::cat(TidyCategory));

// devcopy's own.
Opt<std::string> Format(
    "format", cl::desc("output format: text, json or sarif (default text)"),
    cl::value_desc("FORMAT"), cl::init("text"), Sub, Both, cl::cat(Category));
Opt<std::string> Output(
    "output",
    cl::desc("write the report to FILE instead of stdout (with --shard: the "
             "shard file)"),
    cl::value_desc("FILE"), Sub, Both, cl::cat(Category));
Opt<std::string> Jobs(
    "jobs",
    cl::desc("translation units analyzed in parallel (default: all cores)"),
    cl::value_desc("N"), Sub, cl::cat(Category));
cl::alias JobsShort("j", cl::desc("alias for --jobs"), cl::aliasopt(Jobs));
Opt<std::string> BaselineFile(
    "baseline",
    cl::desc("report, and fail on, only findings FILE does not hold "
             "(SARIF keeps the others, marked unchanged)"),
    cl::value_desc("FILE"), Sub, Both, cl::cat(Category));
Opt<std::string> WriteBaseline("write-baseline",
                               cl::desc("record today's findings in FILE"),
                               cl::value_desc("FILE"), Sub, Both,
                               cl::cat(Category));
Opt<std::string> Root(
    "root",
    cl::desc("paths in reports are relative to DIR (default: git checkout)"),
    cl::value_desc("DIR"), Sub, Both, cl::cat(Category));
Opt<std::string> RuleDocs(
    "rule-docs",
    cl::desc("base URL of the rule pages SARIF's helpUri points at "
             "(default: the installed pages, share/doc/devcopy/rules)"),
    cl::value_desc("URL"), Sub, Both, cl::cat(Category));
Opt<bool> NoProgress("no-progress",
                     cl::desc("no progress line, even on a terminal"), Sub,
                     Both, cl::cat(Category));
Opt<std::string> Facts(
    "facts",
    cl::desc("write the cross-file facts to FILE (default "
             "BUILD_DIR/devcopy-facts.json, where devcopy-tidy, the plugin "
             "and devcopy-clangd look)"),
    cl::value_desc("FILE"), Sub, Both, cl::cat(Category));
Opt<bool> NoFacts(
    "no-facts",
    cl::desc("analyze each file alone: no cross-file findings, no facts file"),
    Sub, cl::cat(Category));
Opt<bool> SkipUnlisted(
    "skip-unlisted",
    cl::desc("a PATH the compile database does not list is skipped with a "
             "note instead of an error (for pre-commit hooks)"),
    Sub, cl::cat(Category));
Opt<std::string>
    CacheDir("cache-dir",
             cl::desc("results of unchanged units are reused from DIR "
                      "(default BUILD_DIR/.devcopy-cache)"),
             cl::value_desc("DIR"), Sub, cl::cat(Category));
Opt<bool> NoCache("no-cache",
                  cl::desc("analyze every unit again; store nothing"), Sub,
                  cl::cat(Category));
Opt<std::string> ShardOpt(
    "shard",
    cl::desc("analyze the K-th of N stable shares of the units and write "
             "a shard file (--output) for devcopy merge"),
    cl::value_desc("K/N"), Sub, cl::cat(Category));
cl::list<std::string> Paths(cl::Positional, cl::desc("[PATH...]"), Sub,
                            cl::cat(Category));
cl::list<std::string> ShardFiles(cl::Positional, cl::desc("SHARD_FILE..."),
                                 cl::sub(Merge), cl::cat(Category));

/// llvm::cl's built-in options that print and exit; parseOptions answers
/// them itself so that parsing never ends the process (the fuzz target).
std::optional<Action> builtin(llvm::StringRef arg) {
  if (!arg.consume_front("-"))
    return std::nullopt;
  arg.consume_front("-");
  arg = arg.split('=').first;
  if (arg == "version")
    return Action::Version;
  if (arg == "h" || arg.starts_with("help") ||
      arg.starts_with("print-options") || arg.starts_with("print-all-options"))
    return Action::Help;
  return std::nullopt;
}

llvm::Error usage(const llvm::Twine &message) {
  return toolError(oneLine(message.str()));
}

/// llvm::cl's first complaint, in one line ("devcopy: Unknown command line
/// argument '--x'.  Try: ..." becomes "unknown option '--x'").
std::string firstComplaint(llvm::StringRef text, llvm::StringRef program) {
  llvm::StringRef line = text.ltrim().split('\n').first;
  line.consume_front(program);
  line.consume_front(": ");
  line = line.split(".  Try:").first.rtrim();
  if (line.consume_front("Unknown command line argument ")) {
    std::string out = "unknown option " + line.rtrim('.').str();
    if (auto at = text.find("Did you mean '"); at != llvm::StringRef::npos)
      out +=
          "; did you mean " + text.substr(at + 13).split('?').first.str() + "?";
    return out;
  }
  if (line.consume_front("for the ")) {
    auto [name, why] = line.split(" option: ");
    if (why == "requires a value!")
      return "option '" + name.str() + "' needs a value";
    return "option '" + name.str() + "': " + why.rtrim('!').str();
  }
  return line.str();
}

/// What `run` writes to stderr, kept from the terminal: an option's own
/// complaint ("for the -p option: requires a value!") goes straight to
/// llvm::errs(), whatever stream ParseCommandLineOptions was given.
template <typename Fn> std::string captureStderr(Fn run) {
  llvm::errs().flush();
  std::FILE *sink = std::tmpfile();
  int saved = sink ? dup(STDERR_FILENO) : -1;
  if (saved < 0 || dup2(fileno(sink), STDERR_FILENO) < 0) {
    if (sink)
      std::fclose(sink);
    if (saved >= 0)
      close(saved);
    run();
    return "";
  }
  run();
  llvm::errs().flush();
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::string text;
  std::rewind(sink);
  char buf[4096];
  for (std::size_t n;
       (n = std::fread(buf, 1, sizeof buf, sink)) > 0 && text.size() < 65536;)
    text.append(buf, n);
  std::fclose(sink);
  return text;
}

llvm::Error validate(Options &opts) {
  if (!Jobs.empty()) {
    char *end = nullptr;
    long n = std::strtol(Jobs.c_str(), &end, 10);
    if (*end || n < 1 || n > 4096)
      return usage("--jobs wants a number from 1 to 4096, not '" + Jobs + "'");
    opts.jobs = unsigned(n);
  }
  if (opts.format != "text" && opts.format != "json" && opts.format != "sarif")
    return usage("--format must be text, json or sarif, not '" + opts.format +
                 "'");
  if (!opts.baseline.empty() && opts.baseline == opts.writeBaseline)
    return usage("--baseline and --write-baseline name the same file '" +
                 opts.baseline + "'");
  // Fingerprints are paths below the root: a wrong one unmatches a baseline.
  if (!opts.root.empty() && !llvm::sys::fs::is_directory(opts.root))
    return usage("--root '" + opts.root +
                 "' is not a directory; name the checkout's top folder");
  if (opts.config && !opts.configFile.empty())
    return usage(
        "--config and --config-file are mutually exclusive; give one of them");
  if (llvm::Expected<LineFilter> lines = LineFilter::parse(opts.lineFilter);
      !lines)
    return lines.takeError();
  if (opts.compileFlags && opts.paths.empty() && !opts.configOnly())
    return usage("the flags after '--' are the compile command of the files "
                 "to analyze: name them before '--' (devcopy analyze "
                 "FILE... -- FLAGS)");
  if (!opts.shard.empty()) {
    const char *clash = opts.fix                      ? "--fix"
                        : !opts.baseline.empty()      ? "--baseline"
                        : !opts.writeBaseline.empty() ? "--write-baseline"
                        : opts.format != "text"       ? "--format"
                                                      : nullptr;
    if (clash)
      return usage(
          llvm::Twine(
              "--shard writes a shard file for 'devcopy merge', which takes ") +
          clash + "; give it to the merge instead");
  }
  return llvm::Error::success();
}

} // namespace

llvm::Expected<Action> parseOptions(int argc, const char *const *argv,
                                    Options &opts) {
  if (argc < 2)
    return usage("missing command; run 'devcopy analyze -p BUILD_DIR' (see "
                 "devcopy --help)");
  llvm::StringRef command = argv[1];
  if (command == "help")
    return Action::Help;
  if (auto action = builtin(command))
    return *action;
  // Each subcommand defined above; a new one adds its name here, an Action,
  // and the copy of its options into Options below.
  opts.merge = command == Merge.getName();
  cl::SubCommand &sub = opts.merge ? Merge : Analyze;
  if (command != Analyze.getName() && !opts.merge)
    return usage("unknown command '" + command +
                 "'; the commands are 'devcopy analyze' and 'devcopy merge' "
                 "(see devcopy --help)");
  // As clang-tidy: what follows the first "--" is the compile command of
  // every PATH (a fixed compilation database), none of devcopy's options.
  int own = argc;
  opts.compileFlags.reset();
  for (int i = 2; i < argc && !opts.merge; ++i)
    if (llvm::StringRef(argv[i]) == "--") {
      opts.compileFlags.emplace(argv + i + 1, argv + argc);
      own = i;
      break;
    }
  for (int i = 2; i < own; ++i) {
    if (auto action = builtin(argv[i]))
      return *action;
    // llvm::cl reads an unknown "-hx" as the group "-h -x": it would print
    // the help and exit. It is an unknown option.
    llvm::StringRef name = llvm::StringRef(argv[i]).split('=').first;
    if (name.consume_front("-") && (name.consume_front("-"), name.size() > 1) &&
        name.front() == 'h' && !sub.OptionsMap.count(name))
      return usage("unknown option '" +
                   llvm::StringRef(argv[i]).split('=').first +
                   "' (see devcopy " + sub.getName() + " --help)");
  }

  // llvm::cl keeps every option's value between parses: reset them first.
  cl::ResetAllOptionOccurrences();
  std::string complaints;
  llvm::raw_string_ostream errs(complaints);
  bool parsed;
  std::string direct = captureStderr(
      [&] { parsed = cl::ParseCommandLineOptions(own, argv, "", &errs); });
  if (!parsed)
    return usage(firstComplaint(direct + errs.str(),
                                llvm::sys::path::filename(argv[0])) +
                 " (see devcopy " + sub.getName() + " --help)");

  opts.buildDir = BuildDir;
  opts.format = Format;
  opts.output = Output;
  if (Checks.getNumOccurrences())
    opts.checks = Checks;
  if (Config.getNumOccurrences())
    opts.config = Config;
  opts.configFile = ConfigFile;
  if (HeaderFilter.getNumOccurrences())
    opts.headerFilter = HeaderFilter;
  if (WarningsAsErrors.getNumOccurrences())
    opts.warningsAsErrors = WarningsAsErrors;
  opts.exportFixes = ExportFixes;
  opts.extraArgs.assign(ExtraArgs.begin(), ExtraArgs.end());
  opts.extraArgsBefore.assign(ExtraArgsBefore.begin(), ExtraArgsBefore.end());
  opts.quiet = Quiet;
  opts.listChecks = ListChecks;
  opts.explainConfig = ExplainConfig;
  opts.fix = Fix || FixErrors || FixNotes; // as clang-tidy: both imply --fix
  opts.lineFilter = LineFilterOpt;
  if (ExcludeHeaderFilter.getNumOccurrences())
    opts.excludeHeaderFilter = ExcludeHeaderFilter;
  if (SystemHeaders.getNumOccurrences())
    opts.systemHeaders = SystemHeaders;
  if (UseColor.getNumOccurrences())
    opts.useColor = UseColor;
  opts.dumpConfig = DumpConfig;
  opts.verifyConfig = VerifyConfig;
  opts.fixErrors = FixErrors;
  opts.fixNotes = FixNotes;
  opts.allowNoChecks = AllowNoChecks;
  opts.enableCheckProfile = EnableCheckProfile;
  opts.baseline = BaselineFile;
  opts.writeBaseline = WriteBaseline;
  opts.root = Root;
  opts.ruleDocs = RuleDocs;
  opts.progress = !NoProgress;
  opts.skipUnlisted = SkipUnlisted;
  opts.facts = Facts;
  opts.noFacts = NoFacts;
  opts.cacheDir = CacheDir;
  opts.noCache =
      NoCache || opts.enableCheckProfile; // a reused result times nothing
  opts.shard = ShardOpt;
  if (opts.merge)
    opts.paths.assign(ShardFiles.begin(), ShardFiles.end());
  else
    opts.paths.assign(Paths.begin(), Paths.end());
  if (llvm::Error e = validate(opts))
    return std::move(e);
  return Action::Analyze;
}

void printHelp(int argc, const char *const *argv) {
  static cl::extrahelp checksList(checksHelp());
  cl::HideUnrelatedOptions({&Category, &TidyCategory}, Analyze);
  cl::HideUnrelatedOptions({&Category, &TidyCategory}, Merge);
  cl::HideUnrelatedOptions({&Category, &TidyCategory},
                           cl::SubCommand::getTopLevel());
  llvm::StringRef command = argc > 1 ? argv[1] : "";
  bool sub = command == "analyze" || command == "merge";
  // llvm::cl prints the help of the subcommand it parsed, then exits 0.
  const char *helpArgv[] = {"devcopy", sub ? argv[1] : "--help", "--help"};
  cl::ResetAllOptionOccurrences();
  cl::ParseCommandLineOptions(
      sub ? 3 : 2, helpArgv,
      "devcopy: finds redundant device copies in LibTorch code.\n\n"
      "  devcopy analyze [options] [PATH...]   (devcopy analyze --help)\n"
      "  devcopy merge [options] SHARD_FILE... (devcopy merge --help)\n\n"
      "Exit codes: 0 no new findings, 1 new findings, 2 usage or tool "
      "error.\n");
  std::exit(0);
}

void printVersion() {
  printDevcopyVersion(llvm::outs());
  cl::PrintVersionMessage();
}

} // namespace devcopy::cli
