// inspect_distributed(): local fingerprints and memory figures, one
// all-gather of a fixed-size slot per rank through the caller's process group
// (a header, then the rank's record), and the cross-rank rules of ranks.cpp.
// A record longer than the slot sends its rest in a second all-gather.
#include "devcopy/distributed.h"

#ifdef DEVCOPY_HAS_DISTRIBUTED

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "local.h"
#include "ranks.h"

namespace devcopy {
namespace {

constexpr std::int64_t kMagic = 0x6465766370726b73; // "devcprks"
constexpr std::int64_t kVersion = 2;
constexpr std::int64_t kHeaderBytes = 4 * sizeof(std::int64_t);

// Bytes of a rank's slot: room for about 3,500 storages in small groups, less
// per rank in large ones (the gathered buffer stays near 64 MiB), never below
// a few hundred storages. Every rank computes the same size from the group's.
std::int64_t slot_bytes(int ranks) {
  const std::int64_t share = (std::int64_t(64) << 20) / std::max(1, ranks);
  return std::clamp<std::int64_t>(share, 4 << 10, 64 << 10) / 8 * 8;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0)
    return "?";
  return buf;
}

std::string first_line(const std::string &s) {
  return s.substr(0, s.find('\n'));
}

template <class Group> std::string backend_name(Group &g) {
  try {
    return g.getBackendName();
  } catch (const std::exception &) {
    return {};
  }
}

// One all-gather of `in` (same shape on every rank), bounded by `timeout`
// both in the backend and in the wait.
template <class Group>
std::vector<at::Tensor> all_gather(Group &g, const at::Tensor &in,
                                   const char *step,
                                   const DistributedOptions &o) {
  std::vector<at::Tensor> inputs{in};
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int r = 0; r < g.getSize(); ++r)
    outputs[0].push_back(at::empty_like(in));
  c10d::AllgatherOptions opts;
  opts.timeout = o.timeout;
  try {
    c10::intrusive_ptr<c10d::Work> work = g.allgather(outputs, inputs, opts);
    work->wait(o.timeout);
  } catch (const std::exception &e) {
    throw DistributedError(
        "devcopy: inspect_distributed on rank " + std::to_string(g.getRank()) +
        " of " + std::to_string(g.getSize()) + ": " + step +
        " failed (timeout " + std::to_string(o.timeout.count()) +
        " ms): " + first_line(e.what()) +
        "; a rank exited or stalled, or did not call inspect_distributed on "
        "this group");
  }
  if (in.is_cpu())
    return outputs[0];
  // One copy to the host for all ranks' slots, not one per rank.
  return at::stack(outputs[0]).cpu().unbind(0);
}

// The rank's storages (with the names this rank knows them by) ...
detail::RankRecord record(int rank, const std::vector<detail::Storage> &st,
                          const std::vector<detail::Print> &prints,
                          std::vector<std::vector<std::string>> &names) {
  detail::RankRecord rec;
  rec.rank = rank;
  rec.host = host_name();
  for (std::size_t i = 0; i < st.size(); ++i) {
    if (!prints[i].known)
      continue;
    rec.storages.push_back({prints[i].hash, st[i].span.nbytes,
                            static_cast<std::int8_t>(st[i].dtype),
                            st[i].category});
    std::vector<std::string> n = st[i].names;
    n.insert(n.end(), st[i].others.begin(), st[i].others.end());
    names.push_back(std::move(n));
  }
  return rec;
}

// ... and its memory per device, from its single-process report.
void add_devices(detail::RankRecord &rec, const Report &local) {
  for (const DeviceMemory &d : local.devices()) {
    detail::RankDevice rd{d.device, "", d.reachable_bytes, d.allocated_bytes,
                          d.reserved_bytes};
    if (d.device.rfind("cuda:", 0) == 0)
      rd.gpu = detail::cuda_device_uuid(std::stoi(d.device.substr(5)));
    rec.devices.push_back(std::move(rd));
  }
}

template <class Group>
Report run(const torch::nn::Module &module, Group &g,
           const DistributedOptions &o) {
  const int rank = g.getRank(), size = g.getSize();
  detail::Collected c = detail::collect(module, o.inspect);
  detail::Fingerprints prints(c.storages, /*all=*/true);
  // The local report first: it reads the allocator while the kernels run.
  Report report = detail::inspect_collected(c, prints, o.inspect);
  std::vector<std::vector<std::string>> names;
  detail::RankRecord rec = record(rank, c.storages, prints.wait(), names);
  add_devices(rec, report);
  const std::vector<unsigned char> mine = encode(rec);

  // NCCL moves device memory only; every other backend takes host tensors.
  const at::Device where(backend_name(g) == "nccl" ? at::kCUDA : at::kCPU);
  const std::int64_t slot = slot_bytes(size);
  const std::int64_t inline_bytes = slot - kHeaderBytes;
  at::Tensor mine_slot = at::zeros({slot}, at::kByte);
  auto *out = mine_slot.data_ptr<std::uint8_t>();
  const std::int64_t header[4] = {kMagic, kVersion, rank,
                                  std::int64_t(mine.size())};
  std::memcpy(out, header, kHeaderBytes);
  std::memcpy(out + kHeaderBytes, mine.data(),
              std::min<std::size_t>(mine.size(), inline_bytes));
  const std::vector<at::Tensor> slots =
      all_gather(g, mine_slot.to(where), "gathering fingerprints", o);
  std::vector<std::int64_t> sizes(size);
  std::int64_t longest = 0;
  for (int r = 0; r < size; ++r) {
    std::int64_t h[4];
    std::memcpy(h, slots[r].data_ptr<std::uint8_t>(), kHeaderBytes);
    if (h[0] != kMagic || h[1] != kVersion || h[2] != r || h[3] < 0)
      throw DistributedError(
          "devcopy: inspect_distributed on rank " + std::to_string(rank) +
          ": rank " + std::to_string(r) +
          " answered with something else (another collective, or another "
          "devcopy version)");
    sizes[r] = h[3];
    longest = std::max(longest, h[3]);
  }
  // Only when some rank's record did not fit: the rest of every record.
  std::vector<at::Tensor> rests;
  if (longest > inline_bytes) {
    at::Tensor rest = at::zeros({longest - inline_bytes}, at::kByte);
    if (std::int64_t(mine.size()) > inline_bytes)
      std::memcpy(rest.data_ptr<std::uint8_t>(), mine.data() + inline_bytes,
                  mine.size() - inline_bytes);
    rests = all_gather(g, rest.to(where), "gathering long records", o);
  }
  std::vector<detail::RankRecord> records;
  std::vector<unsigned char> whole;
  for (int r = 0; r < size; ++r) {
    const auto *head = slots[r].data_ptr<std::uint8_t>() + kHeaderBytes;
    if (sizes[r] <= inline_bytes) {
      records.push_back(
          detail::decode(head, static_cast<std::size_t>(sizes[r])));
      continue;
    }
    whole.assign(head, head + inline_bytes);
    const auto *tail = rests[r].data_ptr<std::uint8_t>();
    whole.insert(whole.end(), tail, tail + (sizes[r] - inline_bytes));
    records.push_back(detail::decode(whole.data(), whole.size()));
  }
  detail::merge_ranks(records, rank, names, report);
  return report;
}

} // namespace

Report inspect_distributed(const torch::nn::Module &module,
                           c10d::ProcessGroup &group,
                           const DistributedOptions &options) {
  return run(module, group, options);
}

#if TORCH_VERSION_MAJOR >= 2
Report inspect_distributed(const torch::nn::Module &module,
                           c10d::Backend &group,
                           const DistributedOptions &options) {
  return run(module, group, options);
}
#endif

} // namespace devcopy

#endif
