// inspect_distributed(): local fingerprints and memory figures, two
// all-gathers through the caller's process group (a fixed-size header, then
// the records padded to the longest), and the cross-rank rules of ranks.cpp.
#include "devcopy/distributed.h"

#ifdef DEVCOPY_HAS_DISTRIBUTED

#include <unistd.h>

#include <cstring>

#include "local.h"
#include "ranks.h"

namespace devcopy {
namespace {

constexpr std::int64_t kMagic = 0x6465766370726b73; // "devcprks"
constexpr std::int64_t kVersion = 1;

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
  for (at::Tensor &t : outputs[0])
    t = t.cpu();
  return outputs[0];
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
  const std::vector<detail::Print> prints =
      detail::fingerprints(c.storages, /*all=*/true);
  std::vector<std::vector<std::string>> names;
  detail::RankRecord rec = record(rank, c.storages, prints, names);
  Report report = detail::inspect_collected(std::move(c), prints, o.inspect);
  add_devices(rec, report);
  const std::vector<unsigned char> mine = encode(rec);

  // NCCL moves device memory only; every other backend takes host tensors.
  const at::Device where(backend_name(g) == "nccl" ? at::kCUDA : at::kCPU);
  const at::Tensor header =
      at::tensor(std::vector<std::int64_t>{kMagic, kVersion, rank,
                                           std::int64_t(mine.size())},
                 at::kLong)
          .to(where);
  const std::vector<at::Tensor> headers =
      all_gather(g, header, "gathering record sizes", o);
  std::int64_t longest = 0;
  for (int r = 0; r < size; ++r) {
    const auto *h = headers[r].data_ptr<std::int64_t>();
    if (h[0] != kMagic || h[1] != kVersion || h[2] != r)
      throw DistributedError(
          "devcopy: inspect_distributed on rank " + std::to_string(rank) +
          ": rank " + std::to_string(r) +
          " answered with something else (another collective, or another "
          "devcopy version)");
    longest = std::max(longest, h[3]);
  }
  at::Tensor payload = at::zeros({longest}, at::kByte);
  std::memcpy(payload.data_ptr<std::uint8_t>(), mine.data(), mine.size());
  const std::vector<at::Tensor> all =
      all_gather(g, payload.to(where), "gathering fingerprints", o);
  std::vector<detail::RankRecord> records;
  for (int r = 0; r < size; ++r)
    records.push_back(detail::decode(
        all[r].data_ptr<std::uint8_t>(),
        static_cast<std::size_t>(headers[r].data_ptr<std::int64_t>()[3])));
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
