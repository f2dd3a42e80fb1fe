// Internal: what each rank sends in inspect_distributed() (sizes in
// proportion to its number of storages, never their bytes) and the
// cross-rank findings built from all ranks' records. No c10d here, so the
// rules are unit-tested on records without processes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collect.h"
#include "devcopy/report.h"

namespace devcopy::detail {

struct RankDevice {
  std::string device; // "cpu", "cuda:1": the rank's own numbering
  std::string gpu;    // the GPU's UUID; empty for the CPU
  std::int64_t reachable = 0;
  std::int64_t allocated = -1;
  std::int64_t reserved = -1;
};

struct RankStorage {
  std::uint64_t hash = 0;
  std::int64_t nbytes = 0;
  std::int8_t dtype = 0;
  Category category = Category::root;
};

struct RankRecord {
  int rank = 0;
  std::string host;
  std::vector<RankDevice> devices;
  std::vector<RankStorage> storages;
};

std::vector<unsigned char> encode(const RankRecord &record);
/// Throws std::runtime_error naming what is malformed.
RankRecord decode(const unsigned char *data, std::size_t size);

/// Adds to `report` the per-rank memory table, replicated bytes by category
/// (findings for gradients and optimizer state), and misplaced-rank-memory.
/// `names[i]` are the reporting rank's names for its storages[i].
void merge_ranks(const std::vector<RankRecord> &ranks, int self,
                 const std::vector<std::vector<std::string>> &names,
                 Report &report);

} // namespace devcopy::detail
