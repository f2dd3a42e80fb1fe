// libFuzzer target: the compile database reader (-p): JSON validation,
// clang's JSONCompilationDatabase and devcopy's path resolution.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_check.h"

#include "Readers.h"
#include "llvm/Support/Path.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data,
                                      std::size_t size) {
  auto commands = devcopy::cli::loadCompileDatabase(
      llvm::StringRef(reinterpret_cast<const char *>(data), size),
      "/build/compile_commands.json");
  if (!commands) {
    devcopy::fuzz::checkError(llvm::toString(commands.takeError()));
    return 0;
  }
  for (const auto &c : *commands) // every path the runner sees is absolute
    if (!llvm::sys::path::is_absolute(c.Directory) ||
        !llvm::sys::path::is_absolute(c.Filename))
      std::abort();
  return 0;
}
