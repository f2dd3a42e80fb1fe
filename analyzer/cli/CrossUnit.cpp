#include "CrossUnit.h"
#include "checks/RepeatedModuleMoveFacts.h"

#include <map>
#include <set>

#include "devcopy/rules_catalog.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

namespace devcopy::cli {

constexpr const char *kRule = "devcopy-repeated-module-move";

FactsCollector::FactsCollector() {
  facts::setSink([this](facts::UnitFacts unit) {
    std::lock_guard<std::mutex> lock(mu_);
    facts_.Units.push_back(std::move(unit));
  });
}

FactsCollector::~FactsCollector() { facts::setSink(nullptr); }

facts::FactsFile FactsCollector::take() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::move(facts_);
}

void keepPrevious(facts::FactsFile &now, const std::string &path,
                  const std::vector<TranslationUnit> &analyzed) {
  llvm::Expected<facts::FactsFile> previous = facts::readFile(path);
  if (!previous) {
    std::string why = llvm::toString(previous.takeError());
    if (why != "No such file or directory")
      llvm::errs() << "devcopy: note: replacing unreadable facts file '" << path
                   << "': " << why << "\n";
    return;
  }
  std::set<std::string> fresh;
  for (const TranslationUnit &u : analyzed)
    fresh.insert(u.file);
  for (facts::UnitFacts &u : previous->Units)
    if (!fresh.count(u.File))
      now.Units.push_back(std::move(u));
}

namespace {

/// A NOLINT comment's check list covers the rule: none given, `*`, the name,
/// or a glob ending in `*` that the name starts with.
bool covers(llvm::StringRef text, llvm::StringRef marker) {
  size_t at = text.find(marker);
  if (at == llvm::StringRef::npos)
    return false;
  llvm::StringRef rest = text.substr(at + marker.size());
  if (!rest.consume_front("("))
    return !rest.starts_with("NEXTLINE") && !rest.starts_with("BEGIN") &&
           !rest.starts_with("END");
  llvm::SmallVector<llvm::StringRef, 4> globs;
  rest.take_until([](char c) { return c == ')'; }).split(globs, ',');
  for (llvm::StringRef g : globs) {
    g = g.trim();
    if (g == kRule ||
        (g.ends_with("*") && llvm::StringRef(kRule).starts_with(g.drop_back())))
      return true;
  }
  return false;
}

bool silenced(SourceText &sources, const std::string &file, unsigned line) {
  return covers(sources.line(file, line), "NOLINT") ||
         (line > 1 && covers(sources.line(file, line - 1), "NOLINTNEXTLINE"));
}

} // namespace

std::vector<Finding> joinFacts(const facts::FactsFile &all, SourceText &sources,
                               const std::vector<TranslationUnit> &units,
                               bool onlyUnits) {
  facts::Index index;
  for (const facts::UnitFacts &u : all.Units)
    index.add(u);
  std::map<std::string, std::string> directory; // unit file -> build dir
  for (const TranslationUnit &u : units)
    directory[u.file] = u.commands.empty() ? "" : u.commands[0].Directory;
  const rules::Rule *rule = rules::find(kRule);
  std::vector<Finding> out;
  for (const facts::UnitFacts &u : all.Units) {
    auto unit = directory.find(u.File);
    if (onlyUnits && unit == directory.end())
      continue;
    for (const facts::Move &m : u.Moves) {
      std::optional<facts::Hit> hit = index.firstMove(m, u.File);
      if (!hit || silenced(sources, u.File, m.Line))
        continue;
      Finding f;
      f.rule = kRule;
      f.level = rule ? std::string(rule->level) : "warning";
      f.message = clang::tidy::devcopy::repeatedMoveMessage(m, *hit);
      f.where = {u.File, m.Offset};
      f.end = f.where;
      if (unit != directory.end())
        f.directory = unit->second;
      Note note;
      note.where = {hit->Unit->File, hit->First->Offset};
      note.message = clang::tidy::devcopy::repeatedMoveNote(m, *hit);
      f.notes.push_back(std::move(note));
      out.push_back(std::move(f));
    }
  }
  return out;
}

} // namespace devcopy::cli
