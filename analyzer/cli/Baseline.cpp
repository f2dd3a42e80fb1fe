#include "Baseline.h"

#include "AtomicFile.h"
#include "Input.h"
#include "SourceText.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace devcopy::cli {

namespace json = llvm::json;

static constexpr int kVersion = 1;

std::optional<Baseline> Baseline::read(const std::string& path, std::string& error) {
  std::string why;
  auto text = readInput(path, why);
  if (!text) {
    error = "cannot read baseline '" + path + "' (" + why + "); write one with --write-baseline " +
            path;
    return std::nullopt;
  }
  return parse(*text, path, error);
}

std::optional<Baseline> Baseline::parse(llvm::StringRef text, const std::string& path,
                                        std::string& error) {
  std::string invalid;
  auto parsed = parseJson(text, invalid);
  if (!parsed) {
    error = "baseline '" + path + "' is not valid JSON (" + invalid +
            "); regenerate it with --write-baseline";
    return std::nullopt;
  }
  const json::Object* root = parsed->getAsObject();
  const json::Array* entries = root ? root->getArray("entries") : nullptr;
  if (!root || root->getInteger("version") != kVersion || !entries) {
    error = "baseline '" + path +
            "' is not a devcopy baseline (version 1 with \"entries\"); regenerate it with "
            "--write-baseline";
    return std::nullopt;
  }
  Baseline b;
  for (const json::Value& v : *entries) {
    const json::Object* e = v.getAsObject();
    auto fp = e ? e->getString("fingerprint") : std::nullopt;
    if (!fp) {
      error = "baseline '" + path + "' has an entry without \"fingerprint\"; regenerate it with "
              "--write-baseline";
      return std::nullopt;
    }
    b.fingerprints_.insert(fp->str());
  }
  return b;
}

bool Baseline::write(const std::string& path, const std::vector<Finding>& findings,
                     const std::string& root, std::string& error) {
  json::Array entries;
  for (const Finding& f : findings)
    entries.push_back(json::Object{{"rule", f.rule},
                                   {"file", relativeTo(f.where.file, root)},
                                   {"line", f.where.line},  // for people; matching ignores it
                                   {"message", f.message},
                                   {"fingerprint", f.fingerprint}});
  json::Value doc = json::Object{{"version", kVersion},
                                 {"tool", "devcopy"},
                                 {"entries", std::move(entries)}};
  if (llvm::Error err = writeAtomically(
          path, [&](llvm::raw_ostream& out) { out << llvm::formatv("{0:2}", doc) << "\n"; })) {
    error = "baseline: " + llvm::toString(std::move(err));
    return false;
  }
  return true;
}

unsigned Baseline::removeKnown(std::vector<Finding>& findings) const {
  std::multiset<std::string> left = fingerprints_;
  std::vector<Finding> fresh;
  for (Finding& f : findings) {
    auto it = left.find(f.fingerprint);
    if (it != left.end())
      left.erase(it);
    else
      fresh.push_back(std::move(f));
  }
  unsigned removed = unsigned(findings.size() - fresh.size());
  findings = std::move(fresh);
  return removed;
}

}  // namespace devcopy::cli
