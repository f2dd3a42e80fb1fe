// The cross-unit step of `devcopy analyze`: the devcopy-repeated-module-move
// check hands each unit's facts (MoveFacts.h) to a collector while the units
// are analyzed; afterwards the facts are joined into findings (a move that
// repeats a constructor's move made in another file) and written to the facts
// file that devcopy-tidy, the plugin and devcopy-clangd read.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "Finding.h"
#include "Runner.h"
#include "SourceText.h"
#include "facts/MoveFacts.h"

namespace devcopy::cli {

namespace facts = clang::tidy::devcopy::facts;

/// Receives the units' facts from the worker threads while installed.
class FactsCollector {
public:
  FactsCollector();
  ~FactsCollector();
  facts::FactsFile take();

private:
  std::mutex mu_;
  facts::FactsFile facts_;
};

/// A run on some PATHs keeps the previous facts of the units it did not
/// analyze, so the join and the file still cover the whole project. An
/// unreadable previous file is replaced (with a note on stderr).
void keepPrevious(facts::FactsFile &now, const std::string &path,
                  const std::vector<TranslationUnit> &analyzed);

/// Findings for moves that repeat a constructor's move made in another unit,
/// with a note there; a NOLINT for the rule on the reported line (or
/// NOLINTNEXTLINE above it) silences one, as in clang-tidy. With `onlyUnits`
/// (a run on some PATHs) only the moves in `units` are reported: the other
/// units' facts take part in the join, their findings are nobody's question.
/// Each finding carries its unit's build directory (--export-fixes).
std::vector<Finding> joinFacts(const facts::FactsFile &all, SourceText &sources,
                               const std::vector<TranslationUnit> &units,
                               bool onlyUnits);

} // namespace devcopy::cli
