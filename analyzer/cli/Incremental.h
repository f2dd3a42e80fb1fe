// Where each unit's result comes from: the results cache (Cache.h) when the
// unit is unchanged, a fresh analysis otherwise, or the shard files of a
// sharded run (`devcopy merge`). Either way the run continues from the same
// per-unit records (UnitRecord.h), so warm, cold, sharded and unsharded runs
// give byte-identical reports.
#pragma once

#include <string>
#include <vector>

#include "Options.h"
#include "Runner.h"
#include "UnitRecord.h"

namespace devcopy::cli {

/// The records of `units`, sorted by file: reused from the cache (unless
/// --no-cache) or analyzed on `jobs` threads and then stored. Facts reach the
/// records, not the installed facts sink; a crash adds an error. Cache
/// problems are notes on stderr, never errors.
std::vector<UnitRecord>
analyzeIncrementally(const Options &opts,
                     const std::vector<TranslationUnit> &units,
                     const TidyConfig &config, unsigned jobs, bool progress,
                     std::vector<ToolError> &errors);

/// Hands every record's findings to `findings` and its facts to the facts
/// sink, when one is installed (the cross-unit step).
void contribute(std::vector<UnitRecord> &records,
                std::vector<Finding> &findings);

/// --shard: keeps the units of this shard. An error for a bad K/N.
llvm::Error selectShard(const Options &opts, const std::string &root,
                        std::vector<TranslationUnit> &units);

/// --shard: writes the shard file to `os` (the --output).
llvm::Error writeShardFile(llvm::raw_ostream &os, const Options &opts,
                           const std::vector<UnitRecord> &records,
                           const std::vector<ToolError> &errors,
                           unsigned analyzed);

/// devcopy merge: the records, their units (files only), whether the shards
/// analyzed some PATHs only, the tool errors and the unit count of all shards.
llvm::Error readShardFiles(const Options &opts,
                           std::vector<UnitRecord> &records,
                           std::vector<TranslationUnit> &units, bool &partial,
                           std::vector<ToolError> &errors, unsigned &analyzed);

} // namespace devcopy::cli
