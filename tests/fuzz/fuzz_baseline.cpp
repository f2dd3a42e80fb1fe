// libFuzzer target: devcopy's baseline reader (--baseline). Any input must
// give a baseline or a one-line error; ASan/UBSan catch the rest.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_check.h"

#include "Baseline.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data,
                                      std::size_t size) {
  auto b = devcopy::cli::Baseline::parse(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz.json");
  if (!b)
    devcopy::fuzz::checkError(llvm::toString(b.takeError()));
  return 0;
}
