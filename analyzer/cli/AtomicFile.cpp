#include "AtomicFile.h"

#include <signal.h>
#include <unistd.h>

#include <mutex>
#include <set>

#include "Input.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

namespace devcopy::cli {

namespace fs = llvm::sys::fs;

static llvm::Error fileError(const std::string &path, const std::string &why) {
  return llvm::createStringError(std::make_error_code(std::errc::io_error),
                                 "cannot write '" + path + "': " + why);
}

/// SIGINT, SIGTERM and SIGHUP held off while it lives: a signal lands after.
class SignalsHeld {
public:
  SignalsHeld() {
    sigset_t held;
    sigemptyset(&held);
    for (int sig : {SIGINT, SIGTERM, SIGHUP})
      sigaddset(&held, sig);
    pthread_sigmask(SIG_BLOCK, &held, &previous_);
  }
  ~SignalsHeld() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

private:
  sigset_t previous_;
};

/// The temporaries this process made, by name: a POSIX lock does not keep
/// a process from locking its own file again, so the lock alone cannot tell
/// them from a killed run's.
static std::mutex TemporariesMutex;
static std::set<std::string> OwnTemporaries;

/// Removes, once per folder and run, the temporaries of killed runs: those
/// no live process holds locked (each run locks its own until it is done)
/// and this one did not make. Called with TemporariesMutex held.
static void removeLeftovers(llvm::StringRef dir) {
  static std::set<std::string> cleaned;
  if (!cleaned.insert(dir.str()).second)
    return;
  static const llvm::Regex leftover("\\.devcopy-[0-9a-f]{6}\\.tmp$");
  std::error_code ec;
  for (fs::directory_iterator it(dir.empty() ? "." : dir, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::string name(llvm::sys::path::filename(it->path()));
    if (!leftover.match(name) || OwnTemporaries.count(name))
      continue;
    int fd = -1;
    if (fs::openFileForReadWrite(it->path(), fd, fs::CD_OpenExisting,
                                 fs::OF_None))
      continue;
    if (!fs::tryLockFile(fd))
      fs::remove(it->path());
    ::close(fd);
  }
}

/// A locked temporary beside \p target, known as this run's before any
/// other thread's cleaning can see it, and registered for removal on a
/// signal before one can land.
static llvm::Expected<fs::TempFile> createTemporary(const std::string &target) {
  std::lock_guard<std::mutex> lock(TemporariesMutex);
  removeLeftovers(llvm::sys::path::parent_path(target));
  std::optional<SignalsHeld> held(std::in_place);
  auto temp = fs::TempFile::create(target + ".devcopy-%%%%%%.tmp");
  held.reset();
  if (!temp)
    return temp.takeError();
  (void)fs::tryLockFile(temp->FD); // alive: not a leftover for other runs
  OwnTemporaries.insert(std::string(llvm::sys::path::filename(temp->TmpName)));
  return temp;
}

/// Gives the temporary file the target's owner and group; false when that
/// is not allowed (the target must then be written through its inode).
static bool takeOwner(int fd, const fs::file_status &st) {
  if (st.getUser() == ::geteuid() && st.getGroup() == ::getegid())
    return true;
  return ::fchown(fd, st.getUser(), st.getGroup()) == 0;
}

llvm::Expected<AtomicFile> AtomicFile::create(const std::string &path) {
  AtomicFile f;
  f.path_ = f.target_ = path;
  if (path == "-") {
    f.stdout_ = true;
    return std::move(f);
  }
  llvm::SmallString<256> real;
  fs::file_status st;
  bool exists = !fs::status(path, st) && fs::exists(st);
  if (exists && !fs::real_path(path, real))
    f.target_ = std::string(real);
  // Absolute, so that a change of directory before the commit (clang's
  // tooling enters each unit's directory) renames into the folder named.
  if (!exists && !fs::make_absolute(real = path))
    f.target_ = std::string(real);
  if (exists && fs::is_directory(st))
    return fileError(path, "it is a directory");
  if (exists && !fs::is_regular_file(st)) {
    // A device or a pipe cannot be renamed over: write to it directly.
    std::error_code ec;
    f.file_ =
        std::make_unique<llvm::raw_fd_ostream>(f.target_, ec, fs::OF_None);
    if (ec)
      return fileError(path, ec.message());
    return std::move(f);
  }
  // Root may write anything, so the permission bits are checked, not access().
  if (exists && ((st.permissions() & fs::all_write) == 0 ||
                 fs::access(f.target_, fs::AccessMode::Write)))
    return fileError(path, "it is read-only; make it writable and run again");
  auto temp = createTemporary(f.target_);
  if (!temp) {
    std::string dir(llvm::sys::path::parent_path(f.target_));
    return fileError(path, "cannot create a file in '" +
                               (dir.empty() ? "." : dir) + "' (" +
                               llvm::toString(temp.takeError()) + ")");
  }
  if (exists) {
    f.inPlace_ = st.getLinkCount() > 1 || !takeOwner(temp->FD, st);
    fs::setPermissions(temp->FD, st.permissions()); // after fchown's clearing
  }
  f.file_ =
      std::make_unique<llvm::raw_fd_ostream>(temp->FD, /*shouldClose=*/false);
  f.temp_.emplace(std::move(*temp));
  return std::move(f);
}

AtomicFile::AtomicFile(AtomicFile &&o) noexcept { *this = std::move(o); }

AtomicFile &AtomicFile::operator=(AtomicFile &&o) noexcept {
  if (this == &o)
    return *this;
  discard();
  path_ = std::move(o.path_);
  target_ = std::move(o.target_);
  temp_ = std::move(o.temp_);
  file_ = std::move(o.file_);
  stdout_ = o.stdout_;
  done_ = o.done_;
  inPlace_ = o.inPlace_;
  o.temp_.reset();
  o.done_ = true;
  return *this;
}

AtomicFile::~AtomicFile() { discard(); }

llvm::raw_ostream &AtomicFile::os() { return stdout_ ? llvm::outs() : *file_; }

llvm::Error AtomicFile::finish() {
  if (done_)
    return llvm::Error::success();
  llvm::raw_fd_ostream &out = stdout_ ? llvm::outs() : *file_;
  out.flush();
  std::error_code ec = out.error();
  // Checked here, or raw_fd_ostream's destructor aborts with "IO failure".
  out.clear_error();
  if (!ec && temp_ && ::fsync(temp_->FD) != 0)
    ec = std::error_code(errno, std::generic_category());
  if (!ec)
    return llvm::Error::success();
  done_ = true;
  if (temp_)
    llvm::consumeError(temp_->discard());
  temp_.reset();
  return fileError(stdout_ ? "standard output" : path_, ec.message());
}

llvm::Error AtomicFile::place() {
  if (done_)
    return llvm::Error::success();
  done_ = true;
  if (!temp_)
    return llvm::Error::success();
  file_.reset();
  if (inPlace_) {
    // The same inode, so every hard link (and the owner) sees the new text.
    int fd = -1;
    std::error_code ec =
        fs::openFileForWrite(target_, fd, fs::CD_CreateAlways, fs::OF_None);
    if (!ec)
      ec = fs::copy_file(temp_->TmpName, fd);
    if (!ec && ::fsync(fd) != 0)
      ec = std::error_code(errno, std::generic_category());
    if (fd >= 0)
      ::close(fd);
    llvm::consumeError(temp_->discard());
    temp_.reset();
    return ec ? fileError(path_, ec.message()) : llvm::Error::success();
  }
  llvm::Error kept = temp_->keep(target_);
  temp_.reset();
  if (kept)
    return fileError(path_, llvm::toString(std::move(kept)));
  return llvm::Error::success();
}

llvm::Error AtomicFile::commit() {
  if (llvm::Error e = finish())
    return e;
  return place();
}

llvm::Error commitAll(std::vector<AtomicFile> &files,
                      std::vector<std::string> &unplaced) {
  for (AtomicFile &f : files)
    if (llvm::Error e = f.finish()) {
      std::string target = f.target();
      for (AtomicFile &other : files) {
        unplaced.push_back(other.target());
        other.discard();
      }
      return llvm::make_error<FileProblem>(target,
                                           llvm::toString(std::move(e)));
    }
  SignalsHeld held;
  llvm::Error all = llvm::Error::success();
  for (AtomicFile &f : files)
    if (llvm::Error e = f.place()) {
      unplaced.push_back(f.target());
      all = llvm::joinErrors(std::move(all),
                             llvm::make_error<FileProblem>(
                                 f.target(), llvm::toString(std::move(e))));
    }
  return all; // a signal held off lands now
}

void AtomicFile::discard() {
  if (done_)
    return;
  done_ = true;
  if (file_) {
    file_->flush(); // now, so the destructor finds nothing left to fail on
    file_->clear_error();
    file_.reset();
  }
  if (temp_)
    llvm::consumeError(temp_->discard());
  temp_.reset();
}

llvm::Error
writeAtomically(const std::string &path,
                llvm::function_ref<void(llvm::raw_ostream &)> write) {
  auto file = AtomicFile::create(path);
  if (!file)
    return file.takeError();
  write(file->os());
  return file->commit();
}

} // namespace devcopy::cli
