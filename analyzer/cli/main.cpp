// devcopy: analyzes a compile database with the devcopy checks and reports
// in text, JSON or SARIF, with baselines and fix-its. Exit codes: 0 no new
// findings, 1 new findings, 2 usage or tool error.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "AtomicFile.h"
#include "Baseline.h"
#include "CrossUnit.h"
#include "Finish.h"
#include "Incremental.h"
#include "Input.h"
#include "Options.h"
#include "Output.h"
#include "Project.h"
#include "Runner.h"
#include "Sarif.h"
#include "SourceText.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

using namespace devcopy::cli;

namespace {

/// An llvm::Error as devcopy's report of it: one ToolError per error, each
/// naming its file when it is a FileProblem.
std::vector<ToolError> toolErrors(llvm::Error error) {
  std::vector<ToolError> out;
  llvm::handleAllErrors(
      std::move(error),
      [&](const FileProblem &e) { out.push_back({e.file, e.message}); },
      [&](const llvm::ErrorInfoBase &e) { out.push_back({"", e.message()}); });
  return out;
}

int fail(const std::vector<ToolError> &errors) {
  for (const ToolError &e : errors)
    llvm::errs() << "devcopy: error: " << oneLine(e.message) << "\n";
  return 2;
}

/// The enclosing git checkout, so SARIF paths are repository-relative.
std::string findRoot(const std::string &cwd) {
  for (llvm::StringRef dir = cwd; !dir.empty();
       dir = llvm::sys::path::parent_path(dir)) {
    llvm::SmallString<256> git(dir);
    llvm::sys::path::append(git, ".git");
    if (llvm::sys::fs::exists(git))
      return dir.str();
  }
  return cwd;
}

/// The report on `out` in the chosen format; text is colored as clang-tidy
/// colors it: with --use-color, or by default when stdout is a terminal.
void writeReport(llvm::raw_ostream &out, const Options &opts,
                 const Results &results, SourceText &sources,
                 const std::string &root, const std::string &cwd) {
  if (opts.format == "sarif")
    return writeSarif(out, results, sources, root, opts.ruleDocs);
  if (opts.format == "json")
    return writeJson(out, results, root);
  out.enable_colors(
      opts.useColor.value_or(opts.output.empty() && isatty(STDOUT_FILENO)));
  writeText(out, results, sources, cwd);
}

/// The summary lines on stderr, as clang-tidy words them.
void summarize(const Options &opts, const Results &results, bool baseline) {
  if (opts.quiet)
    return;
  llvm::errs() << "devcopy: " << results.findings.size()
               << (baseline ? " new" : "") << " finding(s) in "
               << results.analyzed << " translation unit(s)";
  if (baseline)
    llvm::errs() << ", " << results.baselined << " in the baseline";
  llvm::errs() << "\n";
  auto asErrors =
      std::count_if(results.findings.begin(), results.findings.end(),
                    [](const Finding &f) { return f.warningAsError; });
  if (asErrors)
    llvm::errs() << "devcopy: " << asErrors << " warning"
                 << (asErrors == 1 ? "" : "s") << " treated as error"
                 << (asErrors == 1 ? "" : "s") << "\n";
}

/// The folder SARIF paths are relative to: --root made absolute, or the
/// enclosing git checkout.
std::string projectRoot(const Options &opts, const std::string &cwd) {
  if (opts.root.empty())
    return findRoot(cwd);
  llvm::SmallString<256> abs(opts.root);
  llvm::sys::fs::make_absolute(abs);
  llvm::sys::path::remove_dots(abs, true);
  return std::string(abs);
}

/// What the run analyzes: the units and the .clang-tidy configuration, or
/// a merge's shard files (their records and units).
struct RunInput {
  TidyConfig config;
  std::vector<TranslationUnit> units;
  std::vector<UnitRecord> records; // what each unit contributed
  bool partial = false;            // some units only: keep the others' facts
};

/// Reads the run's input; an exit code when the run ends here (an error, or
/// the configuration printed without a compile database, as clang-tidy).
std::optional<int> readInput(const Options &opts, const std::string &cwd,
                             const std::string &root, RunInput &in,
                             Results &results) {
  in.partial = !opts.paths.empty();
  if (opts.merge) {
    if (llvm::Error e = readShardFiles(opts, in.records, in.units, in.partial,
                                       results.errors, results.analyzed))
      return fail({{"", llvm::toString(std::move(e))}});
    return std::nullopt;
  }
  if (llvm::Error e = loadTidyConfig(opts, in.config))
    return fail(toolErrors(std::move(e)));
  if (opts.configOnly()) {
    // As clang-tidy: for the first PATH (or a file here), no compile
    // database.
    if (llvm::Error e = printChecks(opts, in.config, cwd, llvm::outs()))
      return fail({{"", llvm::toString(std::move(e))}});
    return 0;
  }
  if (!selectUnits(opts, cwd, in.units, results.errors))
    return fail(results.errors);
  if (llvm::Error e = checkConfiguration(in.units, in.config)) {
    for (ToolError &t : toolErrors(std::move(e)))
      results.errors.push_back(std::move(t));
    return fail(results.errors);
  }
  if (llvm::Error e = selectShard(opts, root, in.units))
    return fail({{"", llvm::toString(std::move(e))}});
  return std::nullopt;
}

/// --shard ends the run with the shard file: the run-wide steps are the
/// merge's.
int writeShard(AtomicFile &report, const Options &opts, const RunInput &in,
               const Results &results) {
  llvm::Error e = writeShardFile(report.os(), opts, in.records, results.errors,
                                 results.analyzed);
  if (!e)
    e = report.commit();
  if (e)
    return fail({{opts.output, "output: " + llvm::toString(std::move(e))}});
  llvm::errs() << "devcopy: shard " << opts.shard << ": " << results.analyzed
               << " translation unit(s); finish with 'devcopy merge' on "
                  "every shard's file\n";
  return 0;
}

/// --facts, or beside compile_commands.json (-p may name the file itself).
std::string factsPath(const Options &opts) {
  if (!opts.facts.empty())
    return opts.facts;
  llvm::SmallString<256> p(opts.buildDir);
  if (!llvm::sys::fs::is_directory(p))
    llvm::sys::path::remove_filename(p);
  llvm::sys::path::append(p, facts::DefaultFileName);
  return std::string(p);
}

/// The cross-unit step: joins every unit's facts into findings, then leaves
/// the facts for the editors and for the next run on a few PATHs.
void joinUnits(facts::FactsFile all, const Options &opts, const RunInput &in,
               SourceText &sources, Results &results) {
  std::string path = factsPath(opts);
  if (in.partial)
    keepPrevious(all, path, in.units);
  // Workers finish in any order; the file and the join should not.
  std::sort(all.Units.begin(), all.Units.end(),
            [](const auto &a, const auto &b) { return a.File < b.File; });
  for (Finding &f : joinFacts(all, sources, in.units, in.partial))
    results.findings.push_back(std::move(f));
  if (llvm::Error e = writeAtomically(path, [&](llvm::raw_ostream &os) {
        os << facts::toJSON(all) << "\n";
      }))
    results.errors.push_back(
        {path, "cannot write facts file '" + path +
                   "': " + llvm::toString(std::move(e)) +
                   "; choose a writable path with --facts, or --no-facts"});
}

/// --write-baseline: the run's findings, for later runs to leave out.
void writeBaseline(const Options &opts, Results &results,
                   const std::string &root) {
  if (llvm::Error e =
          Baseline::write(opts.writeBaseline, results.findings, root))
    results.errors.push_back(
        {opts.writeBaseline, llvm::toString(std::move(e))});
  else if (!opts.quiet)
    llvm::errs() << "devcopy: wrote " << results.findings.size()
                 << " finding(s) to " << opts.writeBaseline << "\n";
}

} // namespace

int main(int argc, char **argv) {
  // LLVM's fatal errors ("IO failure", out of memory) are errors too: exit 2.
  llvm::install_fatal_error_handler([](void *, const char *reason, bool) {
    llvm::sys::RunInterruptHandlers(); // removes unfinished temporary files
    std::fprintf(stderr, "devcopy: error: %s\n", reason);
    std::_Exit(2);
  });
  Options opts;
  llvm::Expected<Action> action = parseOptions(argc, argv, opts);
  if (!action)
    return fail({{"", llvm::toString(action.takeError())}});
  switch (*action) {
  case Action::Help:
    printHelp(argc, argv);
    return 0;
  case Action::Version:
    printVersion();
    return 0;
  case Action::Analyze:
    break;
  }
  llvm::SmallString<256> cwdBuf;
  llvm::sys::fs::current_path(cwdBuf);
  std::string cwd(cwdBuf);
  std::string root = projectRoot(opts, cwd);

  Results results;
  RunInput in;
  if (std::optional<int> done = readInput(opts, cwd, root, in, results))
    return *done;
  // Read the baseline before the long analysis, so a bad one fails fast.
  std::optional<Baseline> baseline;
  if (!opts.baseline.empty()) {
    llvm::Expected<Baseline> read = Baseline::read(opts.baseline);
    if (!read)
      return fail({{opts.baseline, llvm::toString(read.takeError())}});
    baseline = std::move(*read);
  }
  // Likewise an output file that cannot be written. The previous report
  // stays until the new one is complete (AtomicFile).
  auto report = AtomicFile::create(opts.output.empty() ? "-" : opts.output);
  if (!report)
    return fail({{opts.output, "output: " + llvm::toString(report.takeError()) +
                                   "; choose a writable path"}});

  std::optional<FactsCollector> collector;
  if (!opts.noFacts)
    collector.emplace();
  if (!opts.merge) {
    unsigned jobs = opts.jobs
                        ? opts.jobs
                        : std::max(1u, std::thread::hardware_concurrency());
    in.records =
        analyzeIncrementally(opts, in.units, in.config, jobs,
                             opts.progress && !opts.quiet, results.errors);
    results.analyzed = unsigned(in.units.size());
  }
  if (!opts.shard.empty())
    return writeShard(*report, opts, in, results);
  contribute(in.records, results.findings);

  SourceText sources;
  if (collector) {
    facts::FactsFile all = collector->take();
    collector.reset();
    joinUnits(std::move(all), opts, in, sources, results);
  }
  finish(results, sources, in.units, opts, cwd, root);
  if (!opts.writeBaseline.empty())
    writeBaseline(opts, results, root);
  if (baseline) {
    baseline->classify(results.findings, results.known, results.absent, root);
    results.baselined = unsigned(results.known.size());
  }

  writeReport(report->os(), opts, results, sources, root, cwd);
  if (llvm::Error err = report->commit())
    results.errors.push_back(
        {opts.output, "output: " + llvm::toString(std::move(err))});
  summarize(opts, results, baseline.has_value());
  if (!results.errors.empty())
    return fail(results.errors);
  if (!opts.writeBaseline.empty())
    return 0; // recording findings is the point
  return results.findings.empty() ? 0 : 1;
}
