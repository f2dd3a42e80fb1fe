// Every file devcopy writes (reports, baselines, fixed sources) goes through
// AtomicFile: the new contents land in a temporary file beside the target
// and are renamed over it only once complete, so a failed or interrupted run
// (Ctrl-C, a CI timeout, a full disk) leaves the previous file as it was.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llvm/ADT/FunctionExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

namespace devcopy::cli {

class AtomicFile {
public:
  /// Prepares to replace `path` ("-" is stdout). A symlink is followed, so the
  /// file it names is replaced and the link stays; an existing file keeps its
  /// owner, group and permissions, and one with other hard links is written
  /// through its own inode at commit, as clang-apply-replacements does. A
  /// device or pipe (/dev/null, /dev/full) is written in place.
  /// Fails when the target or its directory cannot be written, or when it is
  /// read-only (devcopy does not override a file's read-only bits).
  /// Temporaries that a killed run left in the target's folder are removed.
  static llvm::Expected<AtomicFile> create(const std::string &path);

  AtomicFile(AtomicFile &&) noexcept;
  AtomicFile &operator=(AtomicFile &&) noexcept;
  ~AtomicFile(); // discards what was not committed

  llvm::raw_ostream &os();
  /// Flushes, checks every write, and moves the contents into place.
  llvm::Error commit();
  /// Removes the temporary file; the target is untouched.
  void discard();
  /// The file that commit() replaces (symlinks resolved).
  const std::string &target() const { return target_; }

private:
  friend llvm::Error commitAll(std::vector<AtomicFile> &files,
                               std::vector<std::string> &unplaced);
  AtomicFile() = default;
  llvm::Error finish(); // flush and fsync: everything that can fail but place
  llvm::Error place();  // the rename (or the copy through the inode)
  std::string path_, target_;
  std::optional<llvm::sys::fs::TempFile> temp_; // unset: stdout or a device
  std::unique_ptr<llvm::raw_fd_ostream> file_;  // over temp_ or the device
  bool stdout_ = false, done_ = false;
  bool inPlace_ = false; // other hard links, or an owner we cannot give
};

/// Commits `files` as one step: every one is written and synced first (any
/// failure discards them all, no target changed), then all are moved into
/// place with SIGINT, SIGTERM and SIGHUP held off, so an interrupt lands
/// before the first or after the last. Errors are FileProblems naming the
/// target that failed; `unplaced` gets every target left as it was.
llvm::Error commitAll(std::vector<AtomicFile> &files,
                      std::vector<std::string> &unplaced);

/// Writes `path` in one step through an AtomicFile; the error names the file.
llvm::Error
writeAtomically(const std::string &path,
                llvm::function_ref<void(llvm::raw_ostream &)> write);

} // namespace devcopy::cli
