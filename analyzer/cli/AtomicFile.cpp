#include "AtomicFile.h"

#include <unistd.h>

#include "llvm/Support/Path.h"

namespace devcopy::cli {

namespace fs = llvm::sys::fs;

static llvm::Error fileError(const std::string &path, const std::string &why) {
  return llvm::createStringError(std::make_error_code(std::errc::io_error),
                                 "cannot write '" + path + "': " + why);
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
  auto temp = fs::TempFile::create(f.target_ + ".devcopy-%%%%%%.tmp");
  if (!temp) {
    std::string dir(llvm::sys::path::parent_path(f.target_));
    return fileError(path, "cannot create a file in '" +
                               (dir.empty() ? "." : dir) + "' (" +
                               llvm::toString(temp.takeError()) + ")");
  }
  if (exists)
    fs::setPermissions(temp->FD, st.permissions());
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
  o.temp_.reset();
  o.done_ = true;
  return *this;
}

AtomicFile::~AtomicFile() { discard(); }

llvm::raw_ostream &AtomicFile::os() { return stdout_ ? llvm::outs() : *file_; }

llvm::Error AtomicFile::commit() {
  if (done_)
    return llvm::Error::success();
  done_ = true;
  llvm::raw_fd_ostream &out = stdout_ ? llvm::outs() : *file_;
  out.flush();
  std::error_code ec = out.error();
  // Checked here, or raw_fd_ostream's destructor aborts with "IO failure".
  out.clear_error();
  if (!ec && temp_ && ::fsync(temp_->FD) != 0)
    ec = std::error_code(errno, std::generic_category());
  if (ec) {
    if (temp_)
      llvm::consumeError(temp_->discard());
    temp_.reset();
    return fileError(stdout_ ? "standard output" : path_, ec.message());
  }
  if (!temp_)
    return llvm::Error::success();
  file_.reset();
  llvm::Error kept = temp_->keep(target_);
  temp_.reset();
  if (kept)
    return fileError(path_, llvm::toString(std::move(kept)));
  return llvm::Error::success();
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
