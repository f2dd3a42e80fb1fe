// libFuzzer target: the facts file reader (devcopy-facts.json, the check's
// FactsFile option). Any input must give facts or a one-line error.
#include <cstdint>
#include <string>

#include "fuzz_check.h"

#include "facts/MoveFacts.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data,
                                      std::size_t size) {
  auto facts = clang::tidy::devcopy::facts::parse(
      llvm::StringRef(reinterpret_cast<const char *>(data), size));
  if (!facts)
    devcopy::fuzz::checkError(llvm::toString(facts.takeError()));
  return 0;
}
