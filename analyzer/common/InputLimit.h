// A guard for readers of user files (facts, baselines, compile databases,
// configuration, shard files, cache entries): text is read with a size
// limit, and a NUL byte (never in JSON or YAML) stops it at once, so
// /dev/zero, /dev/urandom or an endless pipe give a one-line error instead of
// filling memory. Header-only: the facts and the devcopy command both use it.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"

namespace devcopy {

/// The file at \p Path, at most \p Limit bytes of text; the error says in a
/// few words why not ("it is a directory", "larger than 16 MiB", ...).
inline llvm::Expected<std::string> readText(const std::string &Path,
                                            std::uint64_t Limit) {
  namespace fs = llvm::sys::fs;
  fs::file_status St;
  if (!fs::status(Path, St) && fs::is_directory(St))
    return llvm::createStringError("it is a directory");
  std::string TooLarge = "larger than " + std::to_string(Limit >> 20) +
                         " MiB, more than devcopy reads from such a file";
  if (fs::is_regular_file(St) && St.getSize() > Limit)
    return llvm::createStringError(TooLarge);
  llvm::Expected<fs::file_t> FD = fs::openNativeFileForRead(Path);
  if (!FD)
    return FD.takeError();
  std::string Text;
  static constexpr std::size_t Chunk = 1 << 16;
  char Buffer[Chunk];
  llvm::Error Failed = llvm::Error::success();
  for (;;) {
    llvm::Expected<std::size_t> Got =
        fs::readNativeFile(*FD, llvm::MutableArrayRef<char>(Buffer, Chunk));
    if (!Got) {
      Failed = Got.takeError();
      break;
    }
    if (*Got == 0)
      break;
    if (const void *Nul = std::memchr(Buffer, 0, *Got)) {
      std::size_t At = Text.size() + (static_cast<const char *>(Nul) - Buffer);
      Failed = llvm::createStringError("not a text file: byte " +
                                       std::to_string(At) + " is NUL");
      break;
    }
    if (Text.size() + *Got > Limit) {
      Failed = llvm::createStringError(TooLarge);
      break;
    }
    Text.append(Buffer, *Got);
  }
  fs::closeFile(*FD);
  if (Failed)
    return std::move(Failed);
  return Text;
}

} // namespace devcopy
