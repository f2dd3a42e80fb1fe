#include "Shard.h"

#include <algorithm>
#include <map>

#include "Input.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/xxhash.h"

namespace devcopy::cli {

namespace json = llvm::json;

constexpr llvm::StringLiteral kFormat = "devcopy-shard";
constexpr int kVersion = 1;

llvm::Expected<ShardSpec> parseShard(llvm::StringRef text) {
  auto [k, n] = text.split('/');
  ShardSpec spec;
  if (k.getAsInteger(10, spec.index) || n.getAsInteger(10, spec.count) ||
      spec.count < 1 || spec.count > 10000 || spec.index < 1 ||
      spec.index > spec.count)
    return llvm::createStringError(
        "--shard wants K/N with 1 <= K <= N <= 10000 (the K-th of N shards), "
        "not '%s'",
        oneLine(text).c_str());
  return spec;
}

bool inShard(llvm::StringRef relativePath, const ShardSpec &shard) {
  return llvm::xxh3_64bits(relativePath) % shard.count == shard.index - 1;
}

json::Value toJSON(const ShardFile &file) {
  return json::Object{{"format", kFormat},
                      {"version", kVersion},
                      {"devcopy", file.version},
                      {"shard", std::to_string(file.shard.index) + "/" +
                                    std::to_string(file.shard.count)},
                      {"analyzed", file.analyzed},
                      {"partial", file.partial},
                      {"units", json::Array(file.units)},
                      {"errors", json::Array(file.errors)}};
}

static llvm::Error fail(const std::string &path, const std::string &why) {
  return toolError("shard file '" + path + "': " + why);
}

llvm::Expected<ShardFile> readShards(const std::vector<std::string> &paths) {
  if (paths.empty())
    return llvm::createStringError("no shard files; run 'devcopy merge "
                                   "SHARD_FILE...' with the --output of every "
                                   "'devcopy analyze --shard K/N' job");
  ShardFile all;
  std::map<unsigned, std::string> seen; // K -> file
  std::map<unsigned, std::pair<json::Array, json::Array>>
      byShard; // K -> units, errors
  for (const std::string &path : paths) {
    llvm::Expected<std::string> text = readInput(path, kMaxDatabase);
    if (!text)
      return fail(path, llvm::toString(text.takeError()));
    llvm::Expected<json::Value> doc = parseJson(*text);
    if (!doc)
      return fail(path, llvm::toString(doc.takeError()));
    json::Object *o = doc->getAsObject();
    if (!o || o->getString("format") != kFormat)
      return fail(path, "not a shard file; pass the --output of 'devcopy "
                        "analyze --shard K/N'");
    if (o->getInteger("version") != kVersion)
      return fail(
          path,
          "written in another shard format version; rerun the shards with this "
          "devcopy");
    std::optional<llvm::StringRef> version = o->getString("devcopy");
    std::optional<llvm::StringRef> shard = o->getString("shard");
    std::optional<int64_t> analyzed = o->getInteger("analyzed");
    std::optional<bool> partial = o->getBoolean("partial");
    json::Array *units = o->getArray("units");
    json::Array *errors = o->getArray("errors");
    if (!version || !shard || !analyzed || *analyzed < 0 || !partial ||
        !units || !errors)
      return fail(
          path,
          "a field is missing or of the wrong type; rewrite it with devcopy");
    llvm::Expected<ShardSpec> spec = parseShard(*shard);
    if (!spec)
      return fail(path, llvm::toString(spec.takeError()));
    if (seen.empty()) {
      all.shard = *spec;
      all.version = version->str();
      all.partial = *partial;
    } else if (all.partial != *partial) {
      return fail(path, "analyzed " +
                            std::string(*partial ? "some PATHs"
                                                 : "the whole database") +
                            ", unlike '" + seen.begin()->second +
                            "'; run every shard with the same PATHs");
    } else if (all.shard.count != spec->count) {
      return fail(path, "one of " + std::to_string(spec->count) +
                            " shards, but '" + seen.begin()->second +
                            "' is one of " + std::to_string(all.shard.count));
    } else if (all.version != *version) {
      return fail(path, "written by devcopy " + version->str() + ", '" +
                            seen.begin()->second + "' by " + all.version +
                            "; run every shard with the same devcopy");
    }
    auto [it, fresh] = seen.emplace(spec->index, path);
    if (!fresh)
      return fail(path, "shard " + shard->str() + " again (also '" +
                            it->second + "'); pass each shard's file once");
    all.analyzed += unsigned(*analyzed);
    byShard[spec->index] = {std::move(*units), std::move(*errors)};
  }
  // In shard order, whatever the command line's; an error every shard met
  // before its split (a unit whose file is gone) is reported once.
  for (auto &[k, contents] : byShard) {
    for (json::Value &u : contents.first)
      all.units.push_back(std::move(u));
    for (json::Value &e : contents.second)
      if (std::find(all.errors.begin(), all.errors.end(), e) ==
          all.errors.end())
        all.errors.push_back(std::move(e));
  }
  std::vector<std::string> missing;
  for (unsigned k = 1; k <= all.shard.count; ++k)
    if (!seen.count(k))
      missing.push_back(std::to_string(k) + "/" +
                        std::to_string(all.shard.count));
  if (!missing.empty())
    return llvm::createStringError(
        "shard%s %s missing: merge needs the files of all %u shards",
        missing.size() > 1 ? "s" : "", llvm::join(missing, ", ").c_str(),
        all.shard.count);
  return all;
}

} // namespace devcopy::cli
