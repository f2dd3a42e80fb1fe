// inspect(): duplicated storages, reachable bytes per device, and the CUDA
// caching allocator's view (unreachable-allocation, cached-memory).
#include <devcopy/rules_catalog.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "collect.h"
#include "local.h"

namespace devcopy {
namespace {

using detail::Storage;

int device_slot(const c10::Device &d) { return d.is_cuda() ? d.index() : -1; }

std::string where(const Storage &s) {
  return (s.names.empty() ? std::string("?") : s.names.front()) + " on " +
         s.device.str();
}

bool same_bytes(const Storage &a, const Storage &b) {
  if (a.device.is_cpu() && b.device.is_cpu())
    return detail::equal_host(a.span, b.span);
  return detail::equal_cuda(a.span, device_slot(a.device), b.span,
                            device_slot(b.device));
}

} // namespace

// Without `all`, only the storages that have a partner of the same size and
// dtype: a storage with no such partner cannot be a copy.
detail::Fingerprints::Fingerprints(const std::vector<Storage> &st, bool all)
    : prints_(st.size()) {
  std::map<std::pair<std::int64_t, int>, int> size_count;
  for (const Storage &s : st)
    if (s.comparable && s.span.nbytes > 0)
      ++size_count[{s.span.nbytes, int(s.dtype)}];
  std::map<int, std::vector<std::size_t>> by_device; // slot -> storages
  for (std::size_t i = 0; i < st.size(); ++i)
    if (st[i].span.nbytes > 0 &&
        (all || (st[i].comparable &&
                 size_count[{st[i].span.nbytes, int(st[i].dtype)}] > 1)))
      by_device[device_slot(st[i].device)].push_back(i);
  for (auto &[slot, idx] : by_device) {
    std::vector<detail::Span> spans;
    for (std::size_t i : idx)
      spans.push_back(st[i].span);
    if (slot >= 0) {
      pending_.push_back(
          {slot, std::move(idx), detail::fingerprint_cuda(slot, spans)});
      continue;
    }
    const std::vector<Print> p = detail::fingerprint_host(spans);
    for (std::size_t k = 0; k < idx.size(); ++k) {
      prints_[idx[k]] = p[k];
      prints_[idx[k]].known = true;
    }
  }
}

std::vector<std::uint64_t> detail::Fingerprints::scratch(int slot) const {
  std::vector<std::uint64_t> blocks;
  for (const Pending &p : pending_)
    if (p.slot == slot) {
      const std::vector<std::uint64_t> b = p.prints->scratch();
      blocks.insert(blocks.end(), b.begin(), b.end());
    }
  return blocks;
}

const std::vector<detail::Print> &detail::Fingerprints::wait() {
  for (Pending &p : pending_) {
    const std::vector<Print> got = p.prints->finish();
    for (std::size_t k = 0; k < p.storages.size(); ++k) {
      prints_[p.storages[k]] = got[k];
      prints_[p.storages[k]].known = true;
    }
  }
  pending_.clear();
  return prints_;
}

namespace {

void find_duplicates(const std::vector<Storage> &st,
                     const std::vector<detail::Print> &prints, Report &report) {
  std::map<std::tuple<std::int64_t, int, std::uint64_t>,
           std::vector<std::size_t>>
      groups;
  for (std::size_t i = 0; i < st.size(); ++i)
    if (st[i].comparable && st[i].span.nbytes > 0 && prints[i].known &&
        !prints[i].constant)
      groups[{st[i].span.nbytes, int(st[i].dtype), prints[i].hash}].push_back(
          i);
  for (const auto &[key, members] : groups) {
    if (members.size() < 2)
      continue;
    // A fingerprint match only nominates: split the group into classes of
    // byte-identical storages.
    std::vector<std::vector<std::size_t>> classes;
    for (std::size_t i : members) {
      auto it =
          std::find_if(classes.begin(), classes.end(), [&](const auto &c) {
            return same_bytes(st[c.front()], st[i]);
          });
      if (it == classes.end())
        classes.push_back({i});
      else
        it->push_back(i);
    }
    for (const auto &cls : classes) {
      if (cls.size() < 2)
        continue;
      const Storage &first = st[cls.front()];
      Finding f;
      f.kind = std::string(rules::kDuplicateStorage);
      f.bytes = first.span.nbytes * static_cast<std::int64_t>(cls.size() - 1);
      std::set<std::string> seen;
      std::string places;
      // The message names a few copies; `tensors` (and the JSON) keep them all.
      constexpr std::size_t kNamed = 5;
      for (std::size_t k = 0; k < cls.size(); ++k) {
        const Storage &s = st[cls[k]];
        if (seen.insert(s.device.str()).second)
          f.devices.push_back(s.device.str());
        f.tensors.insert(f.tensors.end(), s.names.begin(), s.names.end());
        if (k > 0 && k <= kNamed)
          places += (places.empty() ? "" : ", ") + where(s);
      }
      if (cls.size() - 1 > kNamed)
        places += " and " + std::to_string(cls.size() - 1 - kNamed) + " more";
      std::ostringstream msg;
      msg << "the " << format_bytes(first.span.nbytes) << " of "
          << c10::toString(first.dtype) << " in " << where(first)
          << " are copied to " << places << ": " << format_bytes(f.bytes)
          << " duplicated; keep one storage and share it "
          << "(assign the same tensor, or move with Module::to instead of "
             "copying)";
      f.message = msg.str();
      report.add(std::move(f));
    }
  }
}

void list_shared(const std::vector<Storage> &st, Report &report) {
  for (const Storage &s : st)
    if (s.names.size() > 1)
      report.add(SharedStorage{s.device.str(), s.span.nbytes, s.names});
}

std::string hex(std::uint64_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

// Allocated blocks holding none of the reachable storages' data.
void unreachable(const std::vector<Storage> &st, int slot,
                 const detail::AllocatorState &a, std::int64_t reachable,
                 const InspectOptions &o, Report &report) {
  std::vector<std::uint64_t> ptrs;
  for (const Storage &s : st)
    if (device_slot(s.device) == slot && s.span.nbytes > 0)
      ptrs.push_back(reinterpret_cast<std::uint64_t>(s.span.data));
  std::sort(ptrs.begin(), ptrs.end());
  std::vector<const detail::Block *> lost;
  std::int64_t lost_bytes = 0;
  for (const detail::Block &b : a.blocks) {
    if (!b.allocated)
      continue;
    auto it = std::lower_bound(ptrs.begin(), ptrs.end(), b.address);
    if (it != ptrs.end() &&
        *it < b.address + static_cast<std::uint64_t>(b.size))
      continue;
    lost.push_back(&b);
    lost_bytes += b.size;
  }
  if (a.blocks.empty())
    lost_bytes = std::max<std::int64_t>(0, a.allocated - reachable);
  if (lost_bytes <= o.unreachable_threshold)
    return;
  const std::string dev =
      c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(slot)).str();
  Finding f;
  f.kind = std::string(rules::kUnreachableAllocation);
  f.bytes = lost_bytes;
  f.devices = {dev};
  std::ostringstream msg;
  msg << format_bytes(lost_bytes) << " allocated on " << dev
      << " is not reachable from the inspected module ("
      << format_bytes(reachable) << " reachable of "
      << format_bytes(a.allocated) << " allocated";
  if (!a.blocks.empty())
    msg << ", in " << lost.size() << " blocks";
  msg << "): something else still holds tensors there (a stray reference to "
         "replaced layers, "
         "the source of a copy); drop it, or name it as a root if it is meant "
         "to stay";
  f.message = msg.str();
  std::sort(lost.begin(), lost.end(),
            [](auto *x, auto *y) { return x->size > y->size; });
  for (std::size_t i = 0;
       i < lost.size() && i < static_cast<std::size_t>(o.block_details); ++i) {
    f.details.push_back("block of " + format_bytes(lost[i]->size) + " at " +
                        hex(lost[i]->address));
    const std::vector<std::string> context =
        detail::cuda_block_context(*lost[i]);
    for (const std::string &frame : context)
      f.details.push_back("  " + frame);
    if (context.empty() && i == 0)
      f.details.push_back(
          "  (record allocation history, c10::cuda::CUDACachingAllocator::"
          "recordHistory, to see where these blocks were allocated)");
  }
  if (lost.size() > static_cast<std::size_t>(o.block_details))
    f.details.push_back("... and " +
                        std::to_string(lost.size() - o.block_details) +
                        " more blocks");
  report.add(std::move(f));
}

void cached(int slot, const detail::AllocatorState &a, const InspectOptions &o,
            Report &report) {
  const std::int64_t unused = a.reserved - a.allocated;
  if (unused <= o.cached_threshold ||
      unused <= o.cached_ratio * static_cast<double>(a.allocated))
    return;
  const std::string dev =
      c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(slot)).str();
  Finding f;
  f.kind = std::string(rules::kCachedMemory);
  f.bytes = unused;
  f.devices = {dev};
  f.message =
      format_bytes(unused) + " reserved by the caching allocator on " + dev +
      " is unused (" + format_bytes(a.allocated) +
      " allocated, largest free block " + format_bytes(a.largest_free) +
      "): a request larger than its free blocks allocates new memory beside "
      "it; "
      "budget with devcopy::available_memory(), or release it with "
      "c10::cuda::CUDACachingAllocator::emptyCache() before a large allocation";
  report.add(std::move(f));
}

void memory(const std::vector<Storage> &st, const detail::Fingerprints &prints,
            const InspectOptions &o, Report &report) {
  std::map<int, std::int64_t> reachable; // slot -> bytes; each storage once
  for (const Storage &s : st)
    reachable[device_slot(s.device)] += s.span.nbytes;
  if (o.allocator)
    for (int d = 0; d < detail::cuda_device_count(); ++d) {
      detail::AllocatorState a =
          detail::cuda_allocator_state(d, /*with_blocks=*/false);
      if (a.known && a.reserved > 0)
        reachable.emplace(d, 0);
    }
  for (const auto &[slot, bytes] : reachable) {
    DeviceMemory m;
    m.device =
        slot < 0 ? "cpu"
                 : c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(slot))
                       .str();
    m.reachable_bytes = bytes;
    if (slot >= 0 && o.allocator) {
      detail::AllocatorState a = detail::cuda_allocator_state(
          slot, /*with_blocks=*/true, prints.scratch(slot));
      if (a.known) {
        m.allocated_bytes = a.allocated;
        m.reserved_bytes = a.reserved;
        m.reserved_unused_bytes = a.reserved - a.allocated;
        m.largest_free_block = a.largest_free;
        unreachable(st, slot, a, bytes, o, report);
        cached(slot, a, o, report);
      }
    }
    report.add(std::move(m));
  }
}

} // namespace

Report detail::inspect_collected(Collected &c, Fingerprints &prints,
                                 const InspectOptions &options) {
  // The allocator is read while the fingerprint kernels run: on the GPU its
  // snapshot costs as much as a sixth of the bytes' hashing.
  Report memory_report;
  memory(c.storages, prints, options, memory_report);
  Report report;
  find_duplicates(c.storages, prints.wait(), report);
  list_shared(c.storages, report);
  report.merge(memory_report);
  for (Skipped &s : c.skipped)
    report.add(std::move(s));
  c.skipped.clear();
  return report;
}

Report inspect(const torch::nn::Module &module, const InspectOptions &options) {
  detail::Collected c = detail::collect(module, options);
  detail::Fingerprints prints(c.storages, /*all=*/false);
  return detail::inspect_collected(c, prints, options);
}

Report check(const torch::nn::Module &module, const InspectOptions &options) {
  const Mode mode = mode_from_env(Mode::warn);
  if (mode == Mode::off)
    return {};
  Report report = inspect(module, options);
  enforce(report, mode);
  return report;
}

std::int64_t available_memory(const c10::Device &device) {
  if (device.is_cuda())
    return detail::cuda_available_memory(device.has_index() ? device.index()
                                                            : 0);
  if (device.is_cpu()) {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    std::int64_t kib = 0;
    std::string unit;
    while (meminfo >> key >> kib >> unit)
      if (key == "MemAvailable:")
        return kib * 1024;
  }
  return -1;
}

} // namespace devcopy
