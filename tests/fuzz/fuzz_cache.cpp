// libFuzzer target: a results-cache entry as the cache reads it (checksum,
// format, key) and its payload as a unit record (findings, facts), the path
// a warm run takes. Any input must give a record or a one-line error.
#include <cstdint>
#include <string>

#include "fuzz_check.h"

#include "Cache.h"
#include "UnitRecord.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data,
                                      std::size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  // The fuzzer cannot forge a checksum: check the entry as stored, then the
  // body alone as the record reader sees it.
  std::string stored = "devcopy-cache " +
                       devcopy::cli::contentHash(text.split('\n').second) +
                       "\n" + text.split('\n').second.str();
  for (const std::string &entry : {text.str(), stored}) {
    auto doc = devcopy::cli::parseCacheEntry(entry, "key");
    if (!doc) {
      devcopy::fuzz::checkError(llvm::toString(doc.takeError()));
      continue;
    }
    auto record =
        devcopy::cli::recordFromJSON(*doc->getAsObject()->get("payload"));
    if (!record)
      devcopy::fuzz::checkError(llvm::toString(record.takeError()));
  }
  return 0;
}
