// Shards: `devcopy analyze --shard K/N` analyzes a stable share of the
// compile database's units and writes a shard file; `devcopy merge` reads
// the N shard files and finishes the run as one unsharded run would (the
// cross-unit join over every shard's facts, deduplication, fingerprints,
// baseline, report). A unit's shard is a hash of its path relative to the
// root, so it does not move when the database is reordered or grows, and
// every CI job of a matrix computes the same split.
#pragma once

#include <string>
#include <vector>

#include "Finding.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace devcopy::cli {

struct ShardSpec {
  unsigned index = 1; // K, 1-based
  unsigned count = 1; // N
};

/// Parses "K/N" (1 <= K <= N <= 10000).
llvm::Expected<ShardSpec> parseShard(llvm::StringRef text);

/// Whether the unit at `relativePath` (relative to the root) is in `shard`.
bool inShard(llvm::StringRef relativePath, const ShardSpec &shard);

/// A shard file: the shard's unit records (UnitRecord.h, as JSON), the tool
/// errors it met, and how many units it analyzed.
struct ShardFile {
  ShardSpec shard;
  std::string version; // devcopy's
  unsigned analyzed = 0;
  bool partial = false; // units under some PATHs only, not the whole database
  std::vector<llvm::json::Value> units;
  std::vector<llvm::json::Value> errors;
};

llvm::json::Value toJSON(const ShardFile &file);

/// Reads the shard files of one sharded run. Fails, naming the file, when one
/// is unreadable or not a shard file, when they come from different devcopy
/// versions or splits, or when a shard is missing or given twice.
llvm::Expected<ShardFile> readShards(const std::vector<std::string> &paths);

} // namespace devcopy::cli
