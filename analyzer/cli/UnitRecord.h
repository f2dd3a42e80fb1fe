// What one translation unit contributes to a run of `devcopy analyze`, before
// the run-wide steps (the cross-unit join, deduplication, fingerprints, the
// baseline, the report): its findings as clang-tidy gave them (file and
// offset; notes, fix-its) and its cross-unit facts. A cache entry's payload
// and a shard file's units are these records, so a unit read back from
// either goes through exactly the steps a freshly analyzed one does.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "Finding.h"
#include "facts/MoveFacts.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace devcopy::cli {

namespace facts = clang::tidy::devcopy::facts;

struct UnitRecord {
  std::string file; // the unit's main file, absolute
  std::vector<Finding> findings;
  std::optional<facts::UnitFacts> facts; // none when the unit left none
};

llvm::json::Value toJSON(const UnitRecord &record);
/// The error names the first field that is missing or of the wrong type.
llvm::Expected<UnitRecord> recordFromJSON(const llvm::json::Value &value);

llvm::json::Value toJSON(const ToolError &error);
llvm::Expected<ToolError> toolErrorFromJSON(const llvm::json::Value &value);

} // namespace devcopy::cli
