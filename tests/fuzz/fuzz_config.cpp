// libFuzzer target: the clang-tidy configuration reader (.clang-tidy and
// --config-file), with devcopy's nesting limit in front of the YAML parser.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_check.h"

#include "Readers.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data,
                                      std::size_t size) {
  auto options = devcopy::cli::parseConfigText(
      llvm::StringRef(reinterpret_cast<const char *>(data), size),
      "/p/.clang-tidy");
  if (!options)
    devcopy::fuzz::checkError(llvm::toString(options.takeError()));
  return 0;
}
