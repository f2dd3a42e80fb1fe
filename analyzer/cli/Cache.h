// The results cache of `devcopy analyze`: a unit whose inputs did not change
// since a previous run is not parsed again; its stored result is reused.
//
// The key names what is known before parsing: the tool, the unit's compile
// commands, its effective configuration and the environment the driver
// reads. The entry then lists everything the unit's parse asked the file
// system (DependencyRecorder): files read, with a hash of the bytes clang
// got; paths looked up and not found (a header added earlier in the include
// path shadows the one used: the unit must run again); directories listed
// (the driver picks a GCC installation that way). The entry is reused only
// when every answer is still the same: as exact as preprocessing the unit
// again, at the cost of a few thousand stat calls and hashes of files that
// are shared between units (hashed once per run).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/VirtualFileSystem.h"

namespace devcopy::cli {

/// What a unit's analysis asked the file system, and what it was told.
struct Dependencies {
  std::map<std::string, std::string> read; // absolute path -> content hash
  std::map<std::string, char>
      found; // stat only: 'f' file, 'd' directory, 'o' other
  std::vector<std::string> absent;           // looked up, not there
  std::map<std::string, std::string> listed; // directory -> hash of its names
};

/// A file system that records every question asked of it (thread-compatible:
/// one per unit). The hash of a file read is taken of the very buffer clang
/// gets, so an edit made while the unit is analyzed is not missed.
class DependencyRecorder : public llvm::vfs::ProxyFileSystem {
public:
  explicit DependencyRecorder(
      llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> fs);
  ~DependencyRecorder() override;

  llvm::ErrorOr<llvm::vfs::Status> status(const llvm::Twine &path) override;
  bool exists(const llvm::Twine &path) override;
  llvm::ErrorOr<std::unique_ptr<llvm::vfs::File>>
  openFileForRead(const llvm::Twine &path) override;
  llvm::vfs::directory_iterator dir_begin(const llvm::Twine &dir,
                                          std::error_code &ec) override;

  /// The answers so far. Files opened but never read are hashed now.
  Dependencies take();

  struct State; // shared with the files it opened

private:
  std::string absolute(const llvm::Twine &path) const;
  void noteStatus(const std::string &path,
                  const llvm::ErrorOr<llvm::vfs::Status> &st);
  std::shared_ptr<State> state_;
};

/// Hash of a byte string, as stored in cache entries and keys (hex).
std::string contentHash(llvm::StringRef bytes);

class ResultCache {
public:
  /// A cache in `dir` (created on the first store) for this build of the
  /// tool, named by `toolIdentity` (version and a hash of the executable).
  ResultCache(std::string dir, std::string toolIdentity);

  /// The entry's name for a unit with these inputs (commands,
  /// configuration...).
  std::string key(llvm::ArrayRef<std::string> inputs) const;

  /// The stored payload when the entry exists and every recorded dependency
  /// is unchanged; nullopt otherwise. Thread-safe. A corrupt entry also gives
  /// nullopt and one line in `note` ("" when there is nothing to say).
  std::optional<llvm::json::Value> lookup(const std::string &key,
                                          std::string &note);

  /// Stores `payload` with its dependencies, atomically.
  llvm::Error store(const std::string &key, const Dependencies &deps,
                    llvm::json::Value payload);

  const std::string &directory() const { return dir_; }

private:
  std::string entryPath(const std::string &key) const;
  bool unchanged(const llvm::json::Object &deps);
  std::optional<std::string>
  hashOf(const std::string &path);                     // memoized per run
  std::optional<char> kindOf(const std::string &path); // memoized per run
  std::string dir_, tool_;
  std::mutex mu_;
  std::map<std::string, std::optional<std::string>> hashes_;
  std::map<std::string, std::optional<char>> kinds_;
  std::map<std::string, std::string> listings_;
};

/// An entry's text as ResultCache stores it, checked (checksum, format,
/// `key`) and parsed; an error says in one line why it is not usable.
llvm::Expected<llvm::json::Value> parseCacheEntry(llvm::StringRef text,
                                                  const std::string &key);

/// The tool's identity in cache keys: devcopy's and LLVM's versions and a
/// hash of the running executable, so a rebuilt devcopy starts afresh.
std::string toolIdentity();

} // namespace devcopy::cli
