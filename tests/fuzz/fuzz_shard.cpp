// libFuzzer target: the shard file reader (devcopy merge). The input is
// written to a file and read back exactly as `devcopy merge FILE` reads it;
// any input must give shards or a one-line error.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "fuzz_check.h"

#include "Shard.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data,
                                      std::size_t size) {
  static const std::string path =
      "/tmp/devcopy-fuzz-shard-" + std::to_string(::getpid()) + ".json";
  if (std::FILE *f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  auto shards = devcopy::cli::readShards({path});
  if (!shards)
    devcopy::fuzz::checkError(llvm::toString(shards.takeError()));
  return 0;
}
