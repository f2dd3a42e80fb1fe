// libFuzzer target: response-file expansion in compile commands. The input
// is flags.rsp (in memory, beside a second response file it may name); any
// input must expand or give a one-line error.
#include <cstdint>
#include <string>

#include "fuzz_check.h"

#include "ResponseFiles.h"
#include "llvm/Support/MemoryBuffer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data,
                                      std::size_t size) {
  auto fs = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  fs->setCurrentWorkingDirectory("/build");
  fs->addFile("/build/flags.rsp", 0,
              llvm::MemoryBuffer::getMemBufferCopy(
                  llvm::StringRef(reinterpret_cast<const char *>(data), size)));
  fs->addFile("/build/more.rsp", 0,
              llvm::MemoryBuffer::getMemBuffer("-DMORE \"-I a b\" @flags.rsp"));
  clang::tooling::CompileCommand c(
      "/build", "/src/a.cpp", {"clang++", "@flags.rsp", "-c", "a.cpp"}, "");
  if (llvm::Error e = devcopy::cli::expandResponseFiles(c, *fs))
    devcopy::fuzz::checkError(llvm::toString(std::move(e)));
  return 0;
}
