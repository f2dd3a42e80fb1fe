#include "Cache.h"

#include <algorithm>
#include <set>

#include "AtomicFile.h"
#include "Input.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/xxhash.h"

namespace devcopy::cli {

namespace json = llvm::json;
namespace vfs = llvm::vfs;

/// Bumped when an entry's layout changes: older entries are then not found.
constexpr int kFormat = 2;

std::string contentHash(llvm::StringRef bytes) {
  llvm::XXH128_hash_t h =
      llvm::xxh3_128bits(llvm::arrayRefFromStringRef(bytes));
  return llvm::utohexstr(h.high64, /*LowerCase=*/true, 16) +
         llvm::utohexstr(h.low64, /*LowerCase=*/true, 16);
}

static std::optional<std::string> hashFile(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return std::nullopt;
  return contentHash((*buf)->getBuffer());
}

static char kindChar(llvm::sys::fs::file_type type) {
  using llvm::sys::fs::file_type;
  return type == file_type::regular_file     ? 'f'
         : type == file_type::directory_file ? 'd'
                                             : 'o';
}

/// The sorted names in `dir`, hashed; "" when it cannot be listed.
static std::string hashListing(vfs::FileSystem &fs, const llvm::Twine &dir) {
  std::error_code ec;
  std::vector<std::string> names;
  for (vfs::directory_iterator it = fs.dir_begin(dir, ec), end;
       !ec && it != end; it.increment(ec))
    names.push_back(std::string(llvm::sys::path::filename(it->path())));
  if (ec)
    return "";
  std::sort(names.begin(), names.end());
  std::string all;
  for (const std::string &n : names)
    all += n + '\n';
  return contentHash(all);
}

// --- DependencyRecorder -----------------------------------------------------

struct DependencyRecorder::State {
  std::mutex mu;
  Dependencies deps;
  std::set<std::string> opened;
};

namespace {

/// Hashes the buffer clang reads from the file.
class RecordingFile : public vfs::File {
public:
  RecordingFile(std::unique_ptr<vfs::File> inner, std::string path,
                std::shared_ptr<DependencyRecorder::State> state)
      : inner_(std::move(inner)), path_(std::move(path)),
        state_(std::move(state)) {}
  llvm::ErrorOr<vfs::Status> status() override { return inner_->status(); }
  llvm::ErrorOr<std::string> getName() override { return inner_->getName(); }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>>
  getBuffer(const llvm::Twine &name, int64_t size, bool nullTerminated,
            bool isVolatile) override {
    auto buf = inner_->getBuffer(name, size, nullTerminated, isVolatile);
    if (buf) {
      std::string hash = contentHash((*buf)->getBuffer());
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->deps.read[path_] = std::move(hash);
    }
    return buf;
  }
  std::error_code close() override { return inner_->close(); }

private:
  std::unique_ptr<vfs::File> inner_;
  std::string path_;
  std::shared_ptr<DependencyRecorder::State> state_;
};

} // namespace

DependencyRecorder::DependencyRecorder(
    llvm::IntrusiveRefCntPtr<vfs::FileSystem> fs)
    : ProxyFileSystem(std::move(fs)), state_(std::make_shared<State>()) {}

DependencyRecorder::~DependencyRecorder() = default;

std::string DependencyRecorder::absolute(const llvm::Twine &path) const {
  llvm::SmallString<256> p;
  path.toVector(p);
  getUnderlyingFS().makeAbsolute(p);
  return std::string(p);
}

void DependencyRecorder::noteStatus(const std::string &path,
                                    const llvm::ErrorOr<vfs::Status> &st) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (st)
    state_->deps.found.emplace(path, kindChar(st->getType()));
  else
    state_->deps.absent.push_back(path);
}

llvm::ErrorOr<vfs::Status> DependencyRecorder::status(const llvm::Twine &path) {
  llvm::ErrorOr<vfs::Status> st = ProxyFileSystem::status(path);
  noteStatus(absolute(path), st);
  return st;
}

bool DependencyRecorder::exists(const llvm::Twine &path) {
  llvm::ErrorOr<vfs::Status> st = status(path);
  return st && st->exists();
}

llvm::ErrorOr<std::unique_ptr<vfs::File>>
DependencyRecorder::openFileForRead(const llvm::Twine &path) {
  std::string abs = absolute(path);
  auto file = ProxyFileSystem::openFileForRead(path);
  if (!file) {
    noteStatus(abs, file.getError());
    return file;
  }
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->opened.insert(abs);
  }
  return std::unique_ptr<vfs::File>(
      std::make_unique<RecordingFile>(std::move(*file), abs, state_));
}

vfs::directory_iterator DependencyRecorder::dir_begin(const llvm::Twine &dir,
                                                      std::error_code &ec) {
  std::string abs = absolute(dir);
  std::string listing = hashListing(getUnderlyingFS(), abs);
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->deps.listed[abs] = listing;
  }
  return ProxyFileSystem::dir_begin(dir, ec);
}

Dependencies DependencyRecorder::take() {
  std::lock_guard<std::mutex> lock(state_->mu);
  Dependencies deps = std::move(state_->deps);
  for (const std::string &path : state_->opened)
    if (!deps.read.count(path))
      deps.read[path] = hashFile(path).value_or("");
  for (const auto &[path, hash] : deps.read)
    deps.found.erase(path);
  std::sort(deps.absent.begin(), deps.absent.end());
  deps.absent.erase(std::unique(deps.absent.begin(), deps.absent.end()),
                    deps.absent.end());
  state_->opened.clear();
  return deps;
}

// --- ResultCache ------------------------------------------------------------

ResultCache::ResultCache(std::string dir, std::string toolIdentity)
    : dir_(std::move(dir)), tool_(std::move(toolIdentity)) {}

std::string ResultCache::key(llvm::ArrayRef<std::string> inputs) const {
  llvm::SHA256 sha;
  auto add = [&](llvm::StringRef s) {
    std::string size =
        std::to_string(s.size()) + ':'; // no two lists hash alike
    sha.update(size);
    sha.update(s);
  };
  add(tool_);
  for (const std::string &in : inputs)
    add(in);
  return llvm::toHex(sha.final(), /*LowerCase=*/true);
}

std::string ResultCache::entryPath(const std::string &key) const {
  llvm::SmallString<256> p(dir_);
  llvm::sys::path::append(p, "v" + std::to_string(kFormat), key.substr(0, 2),
                          key + ".json");
  return std::string(p);
}

// Lookups run on several threads; the file is read outside the lock (two
// threads may both hash it once).
std::optional<std::string> ResultCache::hashOf(const std::string &path) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = hashes_.find(path); it != hashes_.end())
      return it->second;
  }
  std::optional<std::string> hash = hashFile(path);
  std::lock_guard<std::mutex> lock(mu_);
  return hashes_.try_emplace(path, std::move(hash)).first->second;
}

std::optional<char> ResultCache::kindOf(const std::string &path) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = kinds_.find(path); it != kinds_.end())
      return it->second;
  }
  std::optional<char> kind;
  llvm::sys::fs::file_status st;
  if (!llvm::sys::fs::status(path, st))
    kind = kindChar(st.type());
  std::lock_guard<std::mutex> lock(mu_);
  return kinds_.try_emplace(path, kind).first->second;
}

bool ResultCache::unchanged(const json::Object &deps) {
  if (const json::Object *read = deps.getObject("read"))
    for (const auto &[path, hash] : *read) {
      std::optional<std::string> now = hashOf(path.str());
      if (!now || hash.getAsString() != llvm::StringRef(*now))
        return false;
    }
  if (const json::Object *found = deps.getObject("found"))
    for (const auto &[path, kind] : *found) {
      std::optional<char> now = kindOf(path.str());
      std::optional<llvm::StringRef> was = kind.getAsString();
      if (!now || !was || *was != llvm::StringRef(&*now, 1))
        return false;
    }
  if (const json::Array *absent = deps.getArray("absent"))
    for (const json::Value &path : *absent) {
      std::optional<llvm::StringRef> p = path.getAsString();
      if (!p || kindOf(p->str()))
        return false;
    }
  if (const json::Object *listed = deps.getObject("listed"))
    for (const auto &[dir, hash] : *listed) {
      std::string now;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto [it, fresh] = listings_.try_emplace(dir.str());
        if (fresh)
          it->second = hashListing(*vfs::getRealFileSystem(), dir.str());
        now = it->second;
      }
      if (hash.getAsString() != llvm::StringRef(now))
        return false;
    }
  return true;
}

llvm::Expected<json::Value> parseCacheEntry(llvm::StringRef text,
                                            const std::string &key) {
  // "devcopy-cache HASH\n" and the JSON entry, HASH its contentHash: a
  // flipped byte anywhere is caught before the entry is believed.
  auto [head, body] = text.split('\n');
  auto [magic, sum] = head.split(' ');
  if (magic != "devcopy-cache" || sum.empty())
    return toolError("not a devcopy cache entry of this version");
  if (contentHash(body) != sum)
    return toolError("its checksum does not match its contents");
  llvm::Expected<json::Value> doc = parseJson(body);
  if (!doc)
    return doc.takeError();
  json::Object *entry = doc->getAsObject();
  if (!entry || entry->getInteger("format") != kFormat ||
      entry->getString("key") != llvm::StringRef(key) ||
      !entry->getObject("deps") || !entry->get("payload"))
    return toolError("not a devcopy cache entry of this version");
  return doc;
}

std::optional<json::Value> ResultCache::lookup(const std::string &key,
                                               std::string &note) {
  note.clear();
  std::string path = entryPath(key);
  if (!llvm::sys::fs::exists(path))
    return std::nullopt; // not cached yet
  llvm::Expected<std::string> text = readInput(path, kMaxBaseline);
  llvm::Expected<json::Value> doc =
      text ? parseCacheEntry(*text, key) : text.takeError();
  if (!doc) {
    note = "ignoring corrupt cache entry '" + path +
           "': " + oneLine(llvm::toString(doc.takeError())) +
           "; the unit is analyzed again and the entry rewritten";
    return std::nullopt;
  }
  json::Object *entry = doc->getAsObject();
  if (!unchanged(*entry->getObject("deps")))
    return std::nullopt;
  return std::move(*entry->get("payload"));
}

llvm::Error ResultCache::store(const std::string &key, const Dependencies &deps,
                               json::Value payload) {
  json::Object read, found, listed;
  for (const auto &[path, hash] : deps.read)
    read[path] = hash;
  for (const auto &[path, kind] : deps.found)
    found[path] = std::string(1, kind);
  for (const auto &[dir, hash] : deps.listed)
    listed[dir] = hash;
  json::Array absent;
  for (const std::string &path : deps.absent)
    absent.push_back(path);
  json::Value entry =
      json::Object{{"format", kFormat},
                   {"key", key},
                   {"tool", tool_},
                   {"deps", json::Object{{"read", std::move(read)},
                                         {"found", std::move(found)},
                                         {"absent", std::move(absent)},
                                         {"listed", std::move(listed)}}},
                   {"payload", std::move(payload)}};
  std::string path = entryPath(key);
  if (std::error_code ec =
          llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path)))
    return llvm::createStringError(
        ec, "cannot create cache directory '%s': %s",
        llvm::sys::path::parent_path(path).str().c_str(), ec.message().c_str());
  std::string body;
  llvm::raw_string_ostream(body) << entry;
  return writeAtomically(path, [&](llvm::raw_ostream &os) {
    os << "devcopy-cache " << contentHash(body) << "\n" << body;
  });
}

std::string toolIdentity() {
  static const std::string identity = [] {
    std::string exe = llvm::sys::fs::getMainExecutable(
        nullptr, reinterpret_cast<void *>(&toolIdentity));
    return std::string("devcopy ") + DEVCOPY_VERSION +
           ", LLVM " LLVM_VERSION_STRING + ", executable " +
           hashFile(exe).value_or(exe);
  }();
  return identity;
}

} // namespace devcopy::cli
