// devcopy: analyzes a compile database with the devcopy checks and reports
// in text, JSON or SARIF, with baselines and fix-its. Exit codes: 0 no new
// findings, 1 new findings, 2 usage or tool error.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include "AtomicFile.h"
#include "Baseline.h"
#include "CrossUnit.h"
#include "ExportFixes.h"
#include "Fingerprint.h"
#include "Fixes.h"
#include "Incremental.h"
#include "Input.h"
#include "LineFilter.h"
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

constexpr const char *kCompileError = "clang-diagnostic-error";

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

/// Lines and columns for every position; a region without a range becomes
/// the token at its start, as clangd shows it.
void locateAll(std::vector<Finding> &findings, SourceText &sources) {
  auto region = [&](Position &where, Position &end,
                    std::vector<Range> &ranges) {
    sources.locate(where);
    if (end.file.empty())
      end = where;
    sources.locate(end);
    if (end.offset <= where.offset)
      end = sources.tokenEnd(where);
    for (Range &r : ranges) {
      sources.locate(r.begin);
      sources.locate(r.end);
    }
  };
  for (Finding &f : findings) {
    region(f.where, f.end, f.ranges);
    for (Note &n : f.notes)
      region(n.where, n.end, n.ranges);
    for (Edit &e : f.fixes) {
      sources.locate(e.begin);
      sources.locate(e.end);
    }
  }
}

/// Compile errors become tool errors, one per file (the first, and a count);
/// the unit's other findings and every other unit's stay reported. Those with
/// fix-its go to `fixable` (--fix-errors applies them). Returns how many
/// files do not compile.
std::size_t splitCompileErrors(std::vector<Finding> &findings,
                               std::vector<ToolError> &errors,
                               const std::string &cwd,
                               std::vector<Finding> &fixable) {
  std::map<std::string, std::pair<const Finding *, unsigned>> firstByFile;
  std::vector<Finding> kept;
  // clang's "too many errors emitted" is no error of the file: quote the first
  // real one.
  auto isLimit = [](const Finding &f) {
    return llvm::StringRef(f.message).starts_with("too many errors emitted");
  };
  bool real = false;
  for (const Finding &f : findings)
    real = real || (f.rule == kCompileError && !isLimit(f));
  for (const Finding &f : findings)
    if (f.rule == kCompileError && !(real && isLimit(f))) {
      auto &slot = firstByFile[f.where.file];
      if (!slot.first)
        slot.first = &f;
      ++slot.second;
    }
  // clang-tidy's own errors about NOLINT comments (an open NOLINTBEGIN): the
  // file compiles; what fails the unit is the comment.
  std::set<std::string> compiles;
  for (const auto &[file, first] : firstByFile)
    compiles.insert(file);
  for (const Finding &f : findings)
    if (f.rule == kCompileError && !isLimit(f) && !isNolintError(f))
      compiles.erase(f.where.file);
  for (const auto &[file, first] : firstByFile) {
    const Finding &f = *first.first;
    std::string more =
        first.second > 1
            ? " (and " + std::to_string(first.second - 1) + " more)"
            : "";
    std::string why =
        compiles.count(file)
            ? "; clang-tidy counts a NOLINT comment it cannot pair as an "
              "error: close the NOLINTBEGIN with a NOLINTEND, or remove it"
            : "; the file does not compile with its compile_commands.json "
              "entry: fix it, or leave it out of the analyzed paths";
    errors.push_back({file, relativeTo(file, cwd) + ":" +
                                std::to_string(f.where.line) + ":" +
                                std::to_string(f.where.column) + ": " +
                                f.message + more + why});
  }
  for (Finding &f : findings)
    (f.rule != kCompileError ? kept : fixable).push_back(std::move(f));
  findings = std::move(kept);
  return firstByFile.size();
}

/// A header's finding reaches us once per unit that includes it, by as many
/// paths as the units name it (a symlinked include folder).
void dedupe(std::vector<Finding> &findings, SourceText &sources) {
  std::set<std::tuple<std::string, std::string, unsigned, std::string>> seen;
  std::vector<Finding> unique;
  for (Finding &f : findings)
    if (seen.insert({f.rule, sources.identity(f.where.file), f.where.offset,
                     f.message})
            .second)
      unique.push_back(std::move(f));
  findings = std::move(unique);
}

/// The run-wide steps between the analysis and the reports: lines and
/// columns, compile errors apart, --line-filter, one finding per place,
/// fingerprints; then --export-fixes and --fix (not where a unit does not
/// compile, unless --fix-errors, as clang-tidy).
void finish(Results &results, SourceText &sources,
            const std::vector<TranslationUnit> &units, const Options &opts,
            const std::string &cwd, const std::string &root) {
  locateAll(results.findings, sources);
  std::vector<Finding> compileErrors;
  std::size_t broken =
      splitCompileErrors(results.findings, results.errors, cwd, compileErrors);
  if (llvm::Expected<LineFilter> lines = LineFilter::parse(opts.lineFilter))
    lines->apply(results.findings);
  else
    llvm::consumeError(lines.takeError()); // parseOptions checked it
  dedupe(results.findings, sources);
  assignFingerprints(results.findings, sources, root);
  // As clang-tidy: the fixes exported are those found, before --fix applies
  // them.
  if (!opts.exportFixes.empty())
    if (llvm::Error e = exportFixes(opts.exportFixes, results.findings, units))
      results.errors.push_back(
          {opts.exportFixes, llvm::toString(std::move(e))});
  if (!opts.fix)
    return;
  if (broken && !opts.fixErrors) {
    llvm::errs() << "devcopy: note: " << broken
                 << " file(s) have errors (named above) and --fix-errors was "
                    "not given: no fix applied\n";
    return;
  }
  // Compile errors' fix-its too (clang's "did you mean"); they are errors,
  // not findings, whether applied or not.
  for (Finding &f : compileErrors)
    if (!f.fixes.empty())
      results.findings.push_back(std::move(f));
  std::size_t before = results.errors.size();
  unsigned fixed = applyFixes(results.findings, sources, results.errors);
  llvm::erase_if(results.findings,
                 [](const Finding &f) { return f.rule == kCompileError; });
  if (results.errors.size() == before && !opts.quiet)
    llvm::errs() << "devcopy: applied fixes for " << fixed << " finding(s)\n";
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
  std::string root = opts.root.empty() ? findRoot(cwd) : opts.root;
  if (!opts.root.empty()) {
    llvm::SmallString<256> abs(opts.root);
    llvm::sys::fs::make_absolute(abs);
    llvm::sys::path::remove_dots(abs, true);
    root = std::string(abs);
  }

  Results results;
  TidyConfig config;
  std::vector<TranslationUnit> units;
  std::vector<UnitRecord> records;    // what each unit contributed
  bool partial = !opts.paths.empty(); // some units only: keep the others' facts
  if (opts.merge) {
    if (llvm::Error e = readShardFiles(opts, records, units, partial,
                                       results.errors, results.analyzed))
      return fail({{"", llvm::toString(std::move(e))}});
  } else {
    if (llvm::Error e = loadTidyConfig(opts, config))
      return fail(toolErrors(std::move(e)));
    if (opts.configOnly()) {
      // As clang-tidy: for the first PATH (or a file here), no compile
      // database.
      if (llvm::Error e = printChecks(opts, config, cwd, llvm::outs()))
        return fail({{"", llvm::toString(std::move(e))}});
      return 0;
    }
    if (!selectUnits(opts, cwd, units, results.errors))
      return fail(results.errors);
    if (llvm::Error e = checkConfiguration(units, config)) {
      for (ToolError &t : toolErrors(std::move(e)))
        results.errors.push_back(std::move(t));
      return fail(results.errors);
    }
    if (llvm::Error e = selectShard(opts, root, units))
      return fail({{"", llvm::toString(std::move(e))}});
  }
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

  unsigned jobs =
      opts.jobs ? opts.jobs : std::max(1u, std::thread::hardware_concurrency());
  bool progress = opts.progress && !opts.quiet;
  std::optional<FactsCollector> collector;
  if (!opts.noFacts)
    collector.emplace();
  if (!opts.merge) {
    records = analyzeIncrementally(opts, units, config, jobs, progress,
                                   results.errors);
    results.analyzed = unsigned(units.size());
  }
  if (!opts.shard.empty()) { // the run-wide steps are the merge's
    llvm::Error e = writeShardFile(report->os(), opts, records, results.errors,
                                   results.analyzed);
    if (!e)
      e = report->commit();
    if (e)
      return fail({{opts.output, "output: " + llvm::toString(std::move(e))}});
    llvm::errs() << "devcopy: shard " << opts.shard << ": " << results.analyzed
                 << " translation unit(s); finish with 'devcopy merge' on "
                    "every shard's file\n";
    return 0;
  }
  contribute(records, results.findings);

  SourceText sources;
  if (collector) {
    // The cross-unit step: join every unit's facts, then leave them for the
    // editors and for the next run on a few PATHs.
    facts::FactsFile all = collector->take();
    collector.reset();
    std::string factsPath = opts.facts;
    if (factsPath.empty()) {
      // Beside compile_commands.json (-p may name the file itself).
      llvm::SmallString<256> p(opts.buildDir);
      if (!llvm::sys::fs::is_directory(p))
        llvm::sys::path::remove_filename(p);
      llvm::sys::path::append(p, facts::DefaultFileName);
      factsPath = std::string(p);
    }
    if (partial)
      keepPrevious(all, factsPath, units);
    // Workers finish in any order; the file and the join should not.
    std::sort(all.Units.begin(), all.Units.end(),
              [](const auto &a, const auto &b) { return a.File < b.File; });
    for (Finding &f : joinFacts(all, sources, units, partial))
      results.findings.push_back(std::move(f));
    if (llvm::Error e = writeAtomically(factsPath, [&](llvm::raw_ostream &os) {
          os << facts::toJSON(all) << "\n";
        }))
      results.errors.push_back(
          {factsPath,
           "cannot write facts file '" + factsPath +
               "': " + llvm::toString(std::move(e)) +
               "; choose a writable path with --facts, or --no-facts"});
  }
  finish(results, sources, units, opts, cwd, root);
  if (!opts.writeBaseline.empty()) {
    if (llvm::Error e =
            Baseline::write(opts.writeBaseline, results.findings, root))
      results.errors.push_back(
          {opts.writeBaseline, llvm::toString(std::move(e))});
    else if (!opts.quiet)
      llvm::errs() << "devcopy: wrote " << results.findings.size()
                   << " finding(s) to " << opts.writeBaseline << "\n";
  }
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
