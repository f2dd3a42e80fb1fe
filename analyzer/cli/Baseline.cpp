#include "Baseline.h"

#include <algorithm>
#include <map>

#include "AtomicFile.h"
#include "Input.h"
#include "SourceText.h"
#include "devcopy/rules_catalog.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace devcopy::cli {

namespace json = llvm::json;

static constexpr int kVersion = 1;

llvm::Expected<Baseline> Baseline::read(const std::string &path) {
  auto text = readInput(path, kMaxBaseline);
  if (!text)
    return toolError("cannot read baseline '" + path + "' (" +
                     llvm::toString(text.takeError()) +
                     "); write one with --write-baseline " + path);
  return parse(*text, path);
}

namespace {

/// Spans of a JSON text, found without building values: a baseline of
/// 300,000 entries is read one entry at a time, not as one tree (many times
/// the file's size). Any surprise gives nullopt: the whole text is then
/// parsed, for llvm::json's exact error.
struct Scanner {
  llvm::StringRef text;
  std::size_t at = 0;
  void space() {
    while (at < text.size() && llvm::StringRef(" \t\r\n").contains(text[at]))
      ++at;
  }
  bool eat(char c) {
    space();
    if (at >= text.size() || text[at] != c)
      return false;
    ++at;
    return true;
  }
  /// One value (the text is known to nest at most kMaxNesting deep).
  std::optional<llvm::StringRef> value() {
    space();
    std::size_t begin = at;
    unsigned depth = 0;
    for (; at < text.size(); ++at) {
      char c = text[at];
      if (c == '"') {
        for (++at; at < text.size() && text[at] != '"'; ++at)
          if (text[at] == '\\')
            ++at;
        if (at >= text.size())
          return std::nullopt;
        if (depth == 0)
          return text.slice(begin, ++at);
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']' || c == ',' || c == ' ' || c == '\n' ||
                 c == '\t' || c == '\r') {
        if (depth == 0)
          break;
        if ((c == '}' || c == ']') && --depth == 0)
          return text.slice(begin, ++at);
      }
    }
    if (depth || at == begin)
      return std::nullopt;
    return text.slice(begin, at);
  }
};

} // namespace

llvm::Expected<Baseline> Baseline::parse(llvm::StringRef text,
                                         const std::string &path) {
  auto invalid = [&](llvm::Error why) {
    return toolError("baseline '" + path + "' is not valid JSON (" +
                     llvm::toString(std::move(why)) +
                     "); regenerate it with --write-baseline");
  };
  auto notOurs = [&] {
    return toolError("baseline '" + path +
                     "' is not a devcopy baseline (version 1 with "
                     "\"entries\"); regenerate it "
                     "with --write-baseline");
  };
  if (auto deep = nestingError(text, /*json=*/true))
    return invalid(toolError(*deep));
  // The top-level object's "version" and "entries", as spans.
  Scanner scan{text};
  std::optional<llvm::StringRef> version, entries;
  bool ok = scan.eat('{');
  for (bool first = true; ok && !scan.eat('}'); first = false) {
    std::optional<llvm::StringRef> key, value;
    ok = (first || scan.eat(',')) && (key = scan.value()) && scan.eat(':') &&
         (value = scan.value());
    if (ok && *key == "\"version\"")
      version = value;
    if (ok && *key == "\"entries\"")
      entries = value;
  }
  scan.space();
  ok = ok && scan.at == text.size();
  if (!ok) {
    llvm::Expected<llvm::json::Value> whole = parseJson(text);
    if (!whole)
      return invalid(whole.takeError());
    return notOurs(); // valid JSON the scanner does not know: not ours
  }
  llvm::Expected<json::Value> v = parseJson(version.value_or("null"));
  if (!v)
    return invalid(v.takeError());
  if (v->getAsInteger() != kVersion || !entries || !entries->starts_with("["))
    return notOurs();
  Baseline b;
  Scanner list{*entries, 1};
  for (bool first = true; !list.eat(']'); first = false) {
    std::optional<llvm::StringRef> item;
    if (!(first || list.eat(',')) || !(item = list.value()))
      return invalid(parseJson(text).takeError());
    llvm::Expected<json::Value> parsed = parseJson(*item);
    if (!parsed)
      return invalid(parsed.takeError());
    const json::Object *e = parsed->getAsObject();
    auto fp = e ? e->getString("fingerprint") : std::nullopt;
    if (!fp)
      return toolError(
          "baseline '" + path +
          "' has an entry without \"fingerprint\"; regenerate it with "
          "--write-baseline");
    Entry entry;
    entry.fingerprint = fp->str();
    entry.rule = e->getString("rule").value_or("").str();
    entry.file = e->getString("file").value_or("").str();
    entry.message = e->getString("message").value_or("").str();
    entry.line =
        unsigned(std::max<int64_t>(0, e->getInteger("line").value_or(0)));
    b.entries_.push_back(std::move(entry));
  }
  return b;
}

llvm::Error Baseline::write(const std::string &path,
                            const std::vector<Finding> &findings,
                            const std::string &root) {
  json::Array entries;
  for (const Finding &f : findings)
    entries.push_back(
        json::Object{{"rule", f.rule},
                     {"file", relativeTo(f.where.file, root)},
                     {"line", f.where.line}, // for people; matching ignores it
                     {"message", f.message},
                     {"fingerprint", f.fingerprint}});
  json::Value doc = json::Object{{"version", kVersion},
                                 {"tool", "devcopy"},
                                 {"entries", std::move(entries)}};
  if (llvm::Error err = writeAtomically(path, [&](llvm::raw_ostream &out) {
        out << llvm::formatv("{0:2}", doc) << "\n";
      }))
    return toolError("baseline: " + llvm::toString(std::move(err)));
  return llvm::Error::success();
}

unsigned Baseline::removeKnown(std::vector<Finding> &findings) const {
  std::vector<Finding> known, absent;
  classify(findings, known, absent, "");
  return unsigned(known.size());
}

void Baseline::classify(std::vector<Finding> &findings,
                        std::vector<Finding> &known,
                        std::vector<Finding> &absent,
                        const std::string &root) const {
  std::multimap<std::string, const Entry *> left;
  for (const Entry &e : entries_)
    left.emplace(e.fingerprint, &e);
  std::vector<Finding> fresh;
  for (Finding &f : findings) {
    auto it = left.find(f.fingerprint);
    if (it != left.end()) {
      left.erase(it);
      f.baselineState = "unchanged";
      known.push_back(std::move(f));
    } else {
      f.baselineState = "new";
      fresh.push_back(std::move(f));
    }
  }
  findings = std::move(fresh);
  // In the baseline's order: the entries nothing matched any more.
  for (const Entry &e : entries_) {
    auto range = left.equal_range(e.fingerprint);
    auto it = std::find_if(range.first, range.second,
                           [&](const auto &kv) { return kv.second == &e; });
    if (it == range.second)
      continue;
    Finding f;
    f.rule = e.rule.empty() ? "devcopy" : e.rule;
    const rules::Rule *rule = rules::find(f.rule);
    f.level = rule ? std::string(rule->level) : "warning";
    f.message =
        e.message.empty() ? "baselined finding no longer reported" : e.message;
    f.where.file =
        e.file.empty() || llvm::sys::path::is_absolute(e.file) || root.empty()
            ? e.file
            : root + "/" + e.file;
    f.where.line =
        std::max(1u, e.line); // no column: the baseline keeps lines only
    f.end = f.where;
    f.fingerprint = e.fingerprint;
    f.baselineState = "absent";
    absent.push_back(std::move(f));
  }
}

} // namespace devcopy::cli
