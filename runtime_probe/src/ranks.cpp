// The cross-rank rules: replicated-across-ranks, misplaced-rank-memory, and
// the per-rank memory table, from the records every rank sent.
#include "ranks.h"

#include <devcopy/rules_catalog.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace devcopy::detail {
namespace {

// Little-endian fixed-width fields; strings as length and bytes.
class Writer {
public:
  template <class T> void put(T v) {
    const auto *p = reinterpret_cast<const unsigned char *>(&v);
    out_.insert(out_.end(), p, p + sizeof v);
  }
  void put(const std::string &s) {
    put(static_cast<std::uint32_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  std::vector<unsigned char> take() { return std::move(out_); }

private:
  std::vector<unsigned char> out_;
};

class Reader {
public:
  Reader(const unsigned char *data, std::size_t size)
      : data_(data), size_(size) {}
  template <class T> T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, data_ + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string str() {
    const auto n = get<std::uint32_t>();
    need(n);
    std::string s(reinterpret_cast<const char *>(data_ + pos_), n);
    pos_ += n;
    return s;
  }

private:
  void need(std::size_t n) const {
    if (n > size_ - pos_)
      throw std::runtime_error(
          "devcopy: a rank's record is truncated (" + std::to_string(size_) +
          " bytes): the ranks run different devcopy versions?");
  }
  const unsigned char *data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// How much of a GPU a rank holds: the model's bytes, or what its allocator
// has there if more (a stray load without map_location).
std::int64_t held(const RankDevice &d) {
  return std::max(d.reachable, d.allocated);
}

std::string join_ranks(const std::vector<int> &ranks) {
  std::string s;
  for (std::size_t i = 0; i < ranks.size(); ++i)
    s += (i == 0                  ? ""
          : i + 1 == ranks.size() ? " and "
                                  : ", ") +
         std::to_string(ranks[i]);
  return s;
}

void table(const std::vector<RankRecord> &ranks, Report &report) {
  for (const RankRecord &r : ranks)
    for (const RankDevice &d : r.devices)
      report.add(RankMemory{r.rank, r.host, d.device, d.reachable, d.allocated,
                            d.reserved});
}

void misplaced(const std::vector<RankRecord> &ranks, Report &report) {
  struct Use {
    int rank;
    const RankDevice *device;
  };
  std::map<std::pair<std::string, std::string>, std::vector<Use>>
      gpus; // (host, uuid)
  for (const RankRecord &r : ranks)
    for (const RankDevice &d : r.devices)
      if (!d.gpu.empty() && held(d) > 0)
        gpus[{r.host, d.gpu}].push_back({r.rank, &d});
  for (const auto &[gpu, uses] : gpus) {
    if (uses.size() < 2)
      continue;
    std::int64_t total = 0, largest = 0;
    std::vector<int> who;
    Finding f;
    f.kind = std::string(rules::kMisplacedRankMemory);
    for (const Use &u : uses) {
      total += held(*u.device);
      largest = std::max(largest, held(*u.device));
      who.push_back(u.rank);
      if (std::find(f.devices.begin(), f.devices.end(), u.device->device) ==
          f.devices.end())
        f.devices.push_back(u.device->device);
      std::string line = "rank " + std::to_string(u.rank) + ": " +
                         u.device->device + ", " +
                         format_bytes(u.device->reachable) + " reachable";
      if (u.device->allocated >= 0)
        line += ", " + format_bytes(u.device->allocated) + " allocated";
      f.details.push_back(std::move(line));
    }
    f.bytes = total - largest;
    std::ostringstream msg;
    msg << "ranks " << join_ranks(who) << " all hold memory on one GPU, "
        << uses.front().device->device << " of host " << gpu.first << " ("
        << gpu.second << "): " << format_bytes(total) << " there, "
        << format_bytes(f.bytes)
        << " of it beyond the largest rank's share; give each "
        << "rank its own GPU: c10::cuda::set_device(local_rank) "
           "(torch.cuda.set_device) before "
        << "building the model, then build or move it to cuda:<local_rank>";
    f.message = msg.str();
    report.add(std::move(f));
  }
}

using Key =
    std::tuple<std::int64_t, int, std::uint64_t>; // nbytes, dtype, fingerprint

Key key_of(const RankStorage &s) { return {s.nbytes, s.dtype, s.hash}; }

void replicated(const std::vector<RankRecord> &ranks, int self,
                const std::vector<std::vector<std::string>> &names,
                Report &report) {
  if (ranks.size() < 2)
    return;
  const RankRecord *mine = nullptr;
  for (const RankRecord &r : ranks)
    if (r.rank == self)
      mine = &r;
  if (mine == nullptr)
    return;
  // Copies of a key every rank holds: the smallest count over the ranks.
  // Sorted vectors, not maps: thousands of storages a rank, merged in turn.
  auto sorted_keys = [](const RankRecord &r) {
    std::vector<Key> keys;
    keys.reserve(r.storages.size());
    for (const RankStorage &s : r.storages)
      keys.push_back(key_of(s));
    std::sort(keys.begin(), keys.end());
    return keys;
  };
  std::vector<std::pair<Key, std::int64_t>> common; // sorted by key
  for (const Key &k : sorted_keys(*mine)) {
    if (!common.empty() && common.back().first == k)
      ++common.back().second;
    else
      common.emplace_back(k, 1);
  }
  for (const RankRecord &r : ranks) {
    if (&r == mine)
      continue;
    const std::vector<Key> theirs = sorted_keys(r);
    auto at = theirs.begin();
    for (auto &[k, n] : common) {
      at = std::lower_bound(at, theirs.end(), k);
      const auto end = std::upper_bound(at, theirs.end(), k);
      n = std::min<std::int64_t>(n, end - at);
      at = end;
    }
  }
  constexpr std::size_t kNames = 32;
  std::map<Category, Replicated> by;
  std::map<Category, std::set<std::string>> devices;
  std::map<Category, std::int64_t> unnamed;
  for (std::size_t i = 0; i < mine->storages.size(); ++i) {
    const RankStorage &s = mine->storages[i];
    auto it = std::lower_bound(
        common.begin(), common.end(), key_of(s),
        [](const auto &entry, const Key &k) { return entry.first < k; });
    if (it->second == 0)
      continue;
    --it->second;
    Replicated &r = by[s.category];
    r.bytes_per_rank += s.nbytes;
    ++r.storages;
    if (i < names.size() && !names[i].empty() && r.tensors.size() < kNames)
      r.tensors.push_back(names[i].front());
    else
      ++unnamed[s.category];
  }
  const auto n = static_cast<std::int64_t>(ranks.size());
  for (auto &[cat, r] : by) {
    r.category = category_name(cat);
    r.ranks = static_cast<int>(n);
    r.expected = cat != Category::gradient && cat != Category::optimizer_state;
    if (!r.expected) {
      Finding f;
      f.kind = std::string(rules::kReplicatedAcrossRanks);
      f.bytes =
          r.bytes_per_rank * (n - 1); // all ranks together, sharded n ways
      f.tensors = r.tensors;
      if (unnamed[cat] > 0)
        f.details.push_back("... and " + std::to_string(unnamed[cat]) +
                            " more storages");
      const std::int64_t kept = r.bytes_per_rank / n;
      std::ostringstream msg;
      msg << "the " << format_bytes(r.bytes_per_rank) << " of " << r.category
          << " (" << r.storages << (r.storages == 1 ? " storage" : " storages")
          << ") are identical on all " << n
          << " ranks: sharded across the ranks they would take "
          << format_bytes(kept) << " per rank, saving "
          << format_bytes(r.bytes_per_rank - kept) << " on each ("
          << format_bytes(f.bytes) << " in all); "
          << (cat == Category::optimizer_state
                  ? "shard the optimizer state (ZeroRedundancyOptimizer, FSDP, "
                    "DeepSpeed ZeRO-1)"
                  : "shard the gradients (FSDP SHARD_GRAD_OP, DeepSpeed "
                    "ZeRO-2), or free them "
                    "after each step (zero_grad with set_to_none)");
      f.message = msg.str();
      report.add(std::move(f));
    }
    report.add(std::move(r));
  }
}

} // namespace

std::vector<unsigned char> encode(const RankRecord &record) {
  Writer w;
  w.put(static_cast<std::int32_t>(record.rank));
  w.put(record.host);
  w.put(static_cast<std::uint32_t>(record.devices.size()));
  for (const RankDevice &d : record.devices) {
    w.put(d.device);
    w.put(d.gpu);
    w.put(d.reachable);
    w.put(d.allocated);
    w.put(d.reserved);
  }
  w.put(static_cast<std::uint64_t>(record.storages.size()));
  for (const RankStorage &s : record.storages) {
    w.put(s.hash);
    w.put(s.nbytes);
    w.put(s.dtype);
    w.put(static_cast<std::uint8_t>(s.category));
  }
  return w.take();
}

RankRecord decode(const unsigned char *data, std::size_t size) {
  Reader r(data, size);
  RankRecord rec;
  rec.rank = r.get<std::int32_t>();
  rec.host = r.str();
  const auto devices = r.get<std::uint32_t>();
  for (std::uint32_t i = 0; i < devices; ++i) {
    RankDevice d;
    d.device = r.str();
    d.gpu = r.str();
    d.reachable = r.get<std::int64_t>();
    d.allocated = r.get<std::int64_t>();
    d.reserved = r.get<std::int64_t>();
    rec.devices.push_back(std::move(d));
  }
  const auto storages = r.get<std::uint64_t>();
  if (storages > size)
    throw std::runtime_error("devcopy: a rank's record is malformed");
  rec.storages.reserve(storages);
  for (std::uint64_t i = 0; i < storages; ++i) {
    RankStorage s;
    s.hash = r.get<std::uint64_t>();
    s.nbytes = r.get<std::int64_t>();
    s.dtype = r.get<std::int8_t>();
    const auto cat = r.get<std::uint8_t>();
    if (cat > static_cast<std::uint8_t>(Category::optimizer_state))
      throw std::runtime_error(
          "devcopy: a rank's record names an unknown storage category");
    s.category = static_cast<Category>(cat);
    rec.storages.push_back(s);
  }
  return rec;
}

void merge_ranks(const std::vector<RankRecord> &ranks, int self,
                 const std::vector<std::vector<std::string>> &names,
                 Report &report) {
  misplaced(ranks, report);
  replicated(ranks, self, names, report);
  table(ranks, report);
}

} // namespace devcopy::detail
