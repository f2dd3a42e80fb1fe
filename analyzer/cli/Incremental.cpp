#include "Incremental.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <thread>

#include "AtomicFile.h"
#include "Cache.h"
#include "Shard.h"
#include "SourceText.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace devcopy::cli {

namespace json = llvm::json;

namespace {

/// The cache's folder: --cache-dir, else beside compile_commands.json.
std::string cacheDir(const Options &opts) {
  if (!opts.cacheDir.empty())
    return opts.cacheDir;
  llvm::SmallString<256> p(opts.buildDir);
  if (!llvm::sys::fs::is_directory(p))
    llvm::sys::path::remove_filename(p);
  llvm::sys::path::append(p, ".devcopy-cache");
  return std::string(p);
}

/// What decides a unit's result besides the files it reads: its commands,
/// its effective configuration (after .clang-tidy files and --checks), the
/// environment the driver reads, whether facts are collected, and whether
/// notes' fix-its count (--fix-notes).
std::vector<std::string> keyInputs(const TranslationUnit &unit,
                                   const TidyConfig &config) {
  std::vector<std::string> in{"unit", unit.file};
  for (const clang::tooling::CompileCommand &c : unit.commands) {
    in.push_back("command");
    in.push_back(c.Directory);
    in.push_back(c.Filename);
    for (const std::string &arg : c.CommandLine)
      in.push_back(arg);
  }
  in.push_back("config");
  in.push_back(clang::tidy::configurationAsText(
      config.provider()->getOptions(unit.file)));
  for (const char *var : {"CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH"}) {
    const char *value = std::getenv(var);
    in.push_back(std::string(var) + "=" + (value ? value : "(unset)"));
  }
  in.push_back(facts::sink() ? "facts: collected" : "facts: none");
  in.push_back(config.fixNotes ? "fixes: notes too" : "fixes: own");
  return in;
}

/// Per analyzed unit: what it read (recorded while it runs), its facts.
struct Slot {
  llvm::IntrusiveRefCntPtr<DependencyRecorder> recorder;
  Dependencies deps;
  UnitRecord record;
  bool done = false;
};

thread_local Slot *Current = nullptr; // the unit this worker analyzes

/// Calls `work(i)` for i in [0, n) on up to `jobs` threads.
void parallelFor(std::size_t n, unsigned jobs,
                 const std::function<void(std::size_t)> &work) {
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next++) < n;)
      work(i);
  };
  std::vector<std::thread> threads;
  for (unsigned j = 1; j < std::min<std::size_t>(jobs, n); ++j)
    threads.emplace_back(worker);
  worker();
  for (std::thread &t : threads)
    t.join();
}

/// Each fix-it learns the hash of the bytes its file had when the unit read
/// it, so --fix can refuse a file edited since.
void stampFixes(std::vector<Finding> &findings, const Dependencies &deps) {
  std::map<std::string, std::string> byPath; // `..` removed, as edits name it
  for (const auto &[path, hash] : deps.read) {
    llvm::SmallString<256> p(path);
    llvm::sys::path::remove_dots(p, /*remove_dot_dot=*/true);
    byPath.emplace(std::string(p), hash);
  }
  for (Finding &f : findings)
    for (Edit &e : f.fixes)
      if (auto it = byPath.find(e.begin.file); it != byPath.end())
        e.analysed = it->second;
}

/// Records what every unit reads: the cache's dependencies, and the hashes
/// --fix checks (so also with --no-cache).
class Recording : public UnitHooks {
public:
  explicit Recording(std::vector<Slot> &slots) : slots_(slots) {}
  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem>
  fileSystem(std::size_t unit,
             llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> fs) override {
    Current = &slots_[unit];
    Current->recorder =
        llvm::makeIntrusiveRefCnt<DependencyRecorder>(std::move(fs));
    return Current->recorder;
  }
  void finished(std::size_t unit,
                const std::vector<Finding> &findings) override {
    Slot &slot = slots_[unit];
    slot.record.findings = findings;
    if (slot.recorder)
      slot.deps = slot.recorder->take();
    stampFixes(slot.record.findings, slot.deps);
    slot.recorder.reset();
    slot.done = true;
    Current = nullptr;
  }

private:
  std::vector<Slot> &slots_;
};

} // namespace

std::vector<UnitRecord>
analyzeIncrementally(const Options &opts,
                     const std::vector<TranslationUnit> &units,
                     const TidyConfig &config, unsigned jobs, bool progress,
                     std::vector<ToolError> &errors) {
  std::optional<ResultCache> cache;
  if (!opts.noCache)
    cache.emplace(cacheDir(opts), toolIdentity());
  // Keys and lookups first, on `jobs` threads (each reads a JSON entry and
  // checks its dependencies; the files they share are hashed once).
  std::vector<std::string> keys(units.size()), notes(units.size());
  std::vector<std::optional<UnitRecord>> cached(units.size());
  if (cache) {
    parallelFor(units.size(), jobs, [&](std::size_t i) {
      keys[i] = cache->key(keyInputs(units[i], config));
      std::optional<json::Value> payload = cache->lookup(keys[i], notes[i]);
      if (!payload)
        return;
      llvm::Expected<UnitRecord> record = recordFromJSON(*payload);
      if (record && record->file == units[i].file) {
        cached[i] = std::move(*record);
        return;
      }
      notes[i] = "ignoring corrupt cache entry for '" + units[i].file + "': " +
                 (record ? "it holds another unit"
                         : llvm::toString(record.takeError())) +
                 "; the unit is analyzed again and the entry rewritten";
    });
  }
  std::vector<UnitRecord> records;
  std::vector<TranslationUnit> todo;
  std::vector<std::string> todoKeys;
  for (std::size_t i = 0; i < units.size(); ++i) {
    if (!notes[i].empty())
      llvm::errs() << "devcopy: note: " << notes[i] << "\n";
    if (cached[i]) {
      records.push_back(std::move(*cached[i]));
      continue;
    }
    todo.push_back(units[i]);
    todoKeys.push_back(std::move(keys[i]));
  }
  if (cache && !records.empty())
    llvm::errs() << "devcopy: cache: " << records.size() << " of "
                 << units.size() << " unit(s) unchanged, not analyzed again\n";

  std::vector<Slot> slots(todo.size());
  for (std::size_t i = 0; i < todo.size(); ++i)
    slots[i].record.file = todo[i].file;
  if (!todo.empty()) {
    // The check hands each unit's facts to the sink on the unit's thread.
    facts::Sink collector = facts::sink();
    if (collector)
      facts::setSink([](facts::UnitFacts f) {
        if (Current)
          Current->record.facts = std::move(f);
      });
    Recording hooks(slots);
    std::vector<Finding> unused;
    std::size_t before = errors.size();
    analyzeUnits(todo, config, jobs, progress, unused, errors, &hooks);
    // Crashes in file order, as a merge of shards lists them.
    std::stable_sort(
        errors.begin() + before, errors.end(),
        [](const ToolError &a, const ToolError &b) { return a.file < b.file; });
    if (collector)
      facts::setSink(collector);
  }
  bool warned = false;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (cache && slots[i].done)
      if (llvm::Error e = cache->store(todoKeys[i], slots[i].deps,
                                       toJSON(slots[i].record))) {
        std::string why = llvm::toString(std::move(e));
        if (!warned)
          llvm::errs()
              << "devcopy: note: cannot write the results cache in '"
              << cache->directory() << "': " << why
              << "; the next run analyzes these units again (choose a writable "
                 "--cache-dir, or --no-cache)\n";
        warned = true;
      }
    records.push_back(std::move(slots[i].record));
  }
  std::sort(
      records.begin(), records.end(),
      [](const UnitRecord &a, const UnitRecord &b) { return a.file < b.file; });
  return records;
}

void contribute(std::vector<UnitRecord> &records,
                std::vector<Finding> &findings) {
  for (UnitRecord &r : records) {
    for (Finding &f : r.findings)
      findings.push_back(std::move(f));
    if (r.facts && facts::sink())
      facts::sink()(std::move(*r.facts));
  }
}

llvm::Error selectShard(const Options &opts, const std::string &root,
                        std::vector<TranslationUnit> &units) {
  if (opts.shard.empty())
    return llvm::Error::success();
  llvm::Expected<ShardSpec> spec = parseShard(opts.shard);
  if (!spec)
    return spec.takeError();
  std::vector<TranslationUnit> mine;
  for (TranslationUnit &u : units)
    if (inShard(relativeTo(u.file, root), *spec))
      mine.push_back(std::move(u));
  units = std::move(mine);
  return llvm::Error::success();
}

llvm::Error writeShardFile(llvm::raw_ostream &os, const Options &opts,
                           const std::vector<UnitRecord> &records,
                           const std::vector<ToolError> &errors,
                           unsigned analyzed) {
  ShardFile file;
  if (llvm::Expected<ShardSpec> spec = parseShard(opts.shard))
    file.shard = *spec;
  else
    return spec.takeError();
  file.version = DEVCOPY_VERSION;
  file.analyzed = analyzed;
  file.partial = !opts.paths.empty();
  for (const UnitRecord &r : records)
    file.units.push_back(toJSON(r));
  for (const ToolError &e : errors)
    file.errors.push_back(toJSON(e));
  os << toJSON(file) << "\n";
  return llvm::Error::success();
}

llvm::Error readShardFiles(const Options &opts,
                           std::vector<UnitRecord> &records,
                           std::vector<TranslationUnit> &units, bool &partial,
                           std::vector<ToolError> &errors, unsigned &analyzed) {
  llvm::Expected<ShardFile> all = readShards(opts.paths);
  if (!all)
    return all.takeError();
  for (std::size_t i = 0; i < all->units.size(); ++i) {
    llvm::Expected<UnitRecord> r = recordFromJSON(all->units[i]);
    if (!r)
      return llvm::createStringError(
          "shard files: unit %zu: %s; rewrite the shards with devcopy", i + 1,
          llvm::toString(r.takeError()).c_str());
    records.push_back(std::move(*r));
  }
  for (const json::Value &v : all->errors) {
    llvm::Expected<ToolError> e = toolErrorFromJSON(v);
    if (!e)
      return e.takeError();
    errors.push_back(std::move(*e));
  }
  std::sort(
      records.begin(), records.end(),
      [](const UnitRecord &a, const UnitRecord &b) { return a.file < b.file; });
  for (const UnitRecord &r : records)
    units.push_back({r.file, {}, 0});
  partial = all->partial;
  analyzed = all->analyzed;
  return llvm::Error::success();
}

} // namespace devcopy::cli
