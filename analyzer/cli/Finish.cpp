// The run-wide steps between the analysis and the reports.
#include "Finish.h"

#include <map>
#include <set>
#include <tuple>

#include "ExportFixes.h"
#include "Fingerprint.h"
#include "Fixes.h"
#include "LineFilter.h"
#include "llvm/Support/raw_ostream.h"

namespace devcopy::cli {

namespace {

constexpr const char *kCompileError = "clang-diagnostic-error";

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

} // namespace

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

} // namespace devcopy::cli
