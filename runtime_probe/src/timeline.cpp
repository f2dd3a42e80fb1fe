// MemoryTimeline: the recording (cheap, under the allocator's lock) and the
// explanation of each device's peak (at report time).
#include "devcopy/timeline.h"

#include <algorithm>
#include <tuple>

namespace devcopy {
namespace {

constexpr std::size_t kMaxSamples = 4096;
constexpr std::size_t kMaxMarks = 512;
constexpr std::size_t kMaxMisses = 64;

bool generic(const std::string &owner) {
  return owner.empty() || owner == "other" || owner == "copies";
}

std::string at(const SourceLocation &where) {
  return where.known() ? " at " + location_text(where) : std::string();
}

// The finding of `kind` made at `where`'s line, else the largest of `kind`.
const Finding *finding_at(const std::vector<Finding> &findings,
                          const std::string &kind,
                          const SourceLocation &where) {
  const Finding *best = nullptr;
  for (const Finding &f : findings) {
    if (f.kind != kind)
      continue;
    if (where.known() && f.location.file == where.file &&
        f.location.line == where.line)
      return &f;
    if (!best || f.bytes > best->bytes)
      best = &f;
  }
  return best;
}

const PeakPart *largest(const std::vector<PeakPart> &parts,
                        const std::string &owner) {
  for (const PeakPart &p : parts) // largest first
    if (p.owner == owner)
      return &p;
  return nullptr;
}

std::string part_text(const PeakPart &p, const char *verb) {
  return format_bytes(p.bytes) + " " + p.owner + " " + verb + at(p.where);
}

// Which finding explains the excess, and the line people read.
void explain(DeviceTimeline &t, const std::vector<Finding> &findings) {
  std::string head = "peak " + format_bytes(t.peak_bytes) + " on " + t.device;
  if (t.peak_where.known())
    head += " during " + location_text(t.peak_where);
  const PeakPart *params = largest(t.parts, "parameters");
  if (const PeakPart *temps = largest(t.parts, "checkpoint temporaries")) {
    const std::int64_t all = t.owned("checkpoint temporaries");
    t.explained_by = "transient-device-copy";
    t.explanation = head + ": ";
    if (params)
      t.explanation += format_bytes(t.owned("parameters")) +
                       " parameters moved" + at(params->where) + ", ";
    t.explanation +=
        format_bytes(all) + " checkpoint temporaries from" +
        (temps->where.known() ? " " + location_text(temps->where)
                              : std::string(" the checkpoint load")) +
        "; fix: torch.load(f, map_location='cpu') (or "
        "mmap=True), or move the model to the device after "
        "loading";
    return;
  }
  auto top = [&t](std::size_t n) {
    std::string s;
    for (std::size_t i = 0; i < t.parts.size() && i < n; ++i)
      s += (i ? ", " : "") + part_text(t.parts[i], "allocated");
    return s;
  };
  for (const char *kind :
       {"discarded-copy", "stale-after-move", "transient-device-copy"}) {
    const Finding *f = finding_at(findings, kind, t.peak_where);
    if (!f || std::find(f->devices.begin(), f->devices.end(), t.device) ==
                  f->devices.end())
      continue;
    // The finding's why and fix: its message past the first ": ".
    const auto colon = f->message.find(": ");
    t.explained_by = kind;
    t.explanation = head + ": " + top(3) + "; " + kind + at(f->location) +
                    ": " +
                    (colon == std::string::npos ? f->message
                                                : f->message.substr(colon + 2));
    return;
  }
  t.explanation = head + (t.parts.empty() ? "" : ": " + top(3));
}

} // namespace

std::int64_t DeviceTimeline::owned(const std::string &owner) const {
  std::int64_t sum = 0;
  for (const PeakPart &p : parts)
    if (p.owner == owner)
      sum += p.bytes;
  return sum;
}

MemoryTimeline::MemoryTimeline(std::int64_t located_bytes)
    : located_bytes_(located_bytes) {}

MemoryTimeline::Device &MemoryTimeline::device(const std::string &name) {
  return devices_[name];
}

void MemoryTimeline::baseline(const std::string &name, std::int64_t allocated,
                              std::int64_t reserved) {
  Device &d = device(name);
  d.allocated = d.before = allocated;
  d.reserved = reserved;
  sample(d, 0, true);
}

// A sample when allocated or reserved moved by 1/256 of the peak, or when
// forced; past kMaxSamples every other one goes (the peak stays).
void MemoryTimeline::sample(Device &d, std::int64_t time_ns, bool force) {
  const std::int64_t step = std::max<std::int64_t>(d.peak, 1 << 20) / 256;
  if (!force && !d.samples.empty() &&
      std::abs(d.samples.back().allocated - d.allocated) < step &&
      d.samples.back().reserved == d.reserved)
    return;
  d.samples.push_back(MemorySample{time_ns, d.allocated, d.reserved});
  if (d.samples.size() < kMaxSamples)
    return;
  std::vector<MemorySample> kept;
  for (std::size_t i = 0; i < d.samples.size(); ++i)
    if (i % 2 == 0 || d.samples[i].time_ns == d.peak_time ||
        i + 1 == d.samples.size())
      kept.push_back(d.samples[i]);
  d.samples.swap(kept);
}

std::uint64_t MemoryTimeline::allocated(const std::string &name,
                                        std::uint64_t address,
                                        std::int64_t bytes,
                                        std::int64_t time_ns,
                                        const char *owner) {
  Device &d = device(name);
  const std::uint64_t id = ++next_id_;
  d.live[address] = Block{id, bytes, owner ? owner : ""};
  d.allocated += bytes;
  bool wanted = bytes >= located_bytes_;
  if (d.segment_new) { // the request the new segment was made for
    d.segment_new = false;
    // Small requests have a pool of their own and small segments: a miss
    // worth a report is a large request that a cache of its size missed.
    if (d.pending.cached_free >= bytes && bytes > located_bytes_ &&
        d.pending.segment >= 64 * located_bytes_ &&
        d.misses.size() < kMaxMisses) {
      d.pending.requested = bytes;
      d.misses.push_back(d.pending);
      d.miss_ids.push_back(id);
      wanted = true;
    }
  }
  if (d.allocated > d.peak) {
    d.peak = d.allocated;
    d.peak_reserved = d.reserved;
    d.peak_time = time_ns;
    d.peak_id = id;
    d.peak_kept = false;
    wanted = true;
    sample(d, time_ns, true);
  } else {
    sample(d, time_ns, false);
  }
  return wanted ? id : 0;
}

void MemoryTimeline::keep_peak(Device &d) {
  if (d.peak_kept)
    return;
  d.peak_kept = true;
  if (!d.at_peak.empty() && d.peak - d.kept_peak <= d.kept_peak / 512) {
    d.at_peak_before = d.peak - (d.kept_peak - d.at_peak_before);
    return;
  }
  d.kept_peak = d.peak;
  d.at_peak.clear();
  d.at_peak.reserve(d.live.size());
  for (const auto &[address, block] : d.live)
    d.at_peak.push_back(block);
  std::sort(d.at_peak.begin(), d.at_peak.end(),
            [](const Block &a, const Block &b) { return a.id < b.id; });
  std::int64_t known = 0;
  for (const Block &b : d.at_peak)
    known += b.bytes;
  d.at_peak_before = d.peak - known;
}

void MemoryTimeline::freed(const std::string &name, std::uint64_t address,
                           std::int64_t bytes, std::int64_t time_ns) {
  Device &d = device(name);
  keep_peak(d); // the peak is over: its blocks, before this one goes
  auto it = d.live.find(address);
  if (it != d.live.end()) {
    bytes = it->second.bytes;
    const std::uint64_t id = it->second.id;
    d.live.erase(it);
    const bool kept = std::binary_search(
        d.at_peak.begin(), d.at_peak.end(), Block{id, 0, {}},
        [](const Block &a, const Block &b) { return a.id < b.id; });
    if (!kept && id != d.peak_id &&
        std::find(d.miss_ids.begin(), d.miss_ids.end(), id) == d.miss_ids.end())
      where_.erase(id);
  }
  d.allocated -= bytes;
  sample(d, time_ns, false);
}

std::int64_t MemoryTimeline::largest_free(const Device &d) const {
  // Free space in each segment: its bytes minus its live blocks, as runs.
  std::vector<std::pair<std::uint64_t, std::int64_t>> blocks;
  for (const auto &[address, block] : d.live)
    blocks.emplace_back(address, block.bytes);
  std::sort(blocks.begin(), blocks.end());
  std::int64_t best = 0;
  for (const auto &[start, size] : d.segments) {
    std::uint64_t cursor = start;
    const std::uint64_t end = start + static_cast<std::uint64_t>(size);
    auto b = std::lower_bound(blocks.begin(), blocks.end(),
                              std::make_pair(start, std::int64_t{0}));
    for (; b != blocks.end() && b->first < end; ++b) {
      best = std::max<std::int64_t>(best, b->first - cursor);
      cursor = std::max<std::uint64_t>(cursor, b->first + b->second);
    }
    if (end > cursor)
      best = std::max<std::int64_t>(best, end - cursor);
  }
  return best;
}

void MemoryTimeline::segment(const std::string &name, std::uint64_t address,
                             std::int64_t bytes, std::int64_t time_ns) {
  Device &d = device(name);
  if (bytes > 0) {
    d.pending = SegmentMiss{};
    d.pending.time_ns = time_ns;
    d.pending.segment = bytes;
    d.pending.cached_free = d.reserved - d.allocated;
    d.pending.largest_free_block = largest_free(d);
    d.segment_new = true;
    d.segments[address] = bytes;
  } else {
    d.segments.erase(address);
  }
  d.reserved += bytes;
  sample(d, time_ns, true);
}

void MemoryTimeline::locate(std::uint64_t id, const SourceLocation &where) {
  if (!id || !where.known())
    return;
  where_[id] = where;
}

std::uint64_t MemoryTimeline::own(const std::string &name,
                                  std::uint64_t address,
                                  const std::string &owner) {
  Device &d = device(name);
  auto it = d.live.find(address);
  if (it == d.live.end())
    return 0;
  own(it->second.id, owner);
  return it->second.id;
}

void MemoryTimeline::own(std::uint64_t id, const std::string &owner) {
  auto rename = [&owner](Block &b) {
    if (generic(b.owner) || owner == "checkpoint temporaries")
      b.owner = owner;
  };
  for (auto &[name, d] : devices_) {
    for (auto &[address, block] : d.live)
      if (block.id == id)
        rename(block);
    auto it = std::lower_bound(
        d.at_peak.begin(), d.at_peak.end(), id,
        [](const Block &b, std::uint64_t i) { return b.id < i; });
    if (it != d.at_peak.end() && it->id == id)
      rename(*it);
  }
}

void MemoryTimeline::mark(const std::string &name, TimelineMark m) {
  Device &d = device(name);
  if (d.marks.size() < kMaxMarks)
    d.marks.push_back(std::move(m));
}

std::vector<DeviceTimeline>
MemoryTimeline::summary(const std::vector<Finding> &findings) const {
  std::vector<DeviceTimeline> out;
  for (const auto &[name, dev] : devices_) {
    if (dev.peak < 0)
      continue; // nothing allocated while recording
    Device d = dev;
    keep_peak(d);
    DeviceTimeline t;
    t.device = name;
    t.samples = d.samples;
    t.peak_bytes = d.peak;
    t.peak_reserved = d.peak_reserved;
    t.peak_time_ns = d.peak_time;
    auto where = [this](std::uint64_t id) {
      auto it = where_.find(id);
      return it == where_.end() ? SourceLocation{} : it->second;
    };
    t.peak_where = where(d.peak_id);
    using Key = std::tuple<std::string, std::string, int, std::string>;
    std::map<Key, PeakPart> parts;
    for (const Block &b : d.at_peak) {
      const SourceLocation w = where(b.id);
      const std::string owner = b.owner.empty() ? "other" : b.owner;
      PeakPart &p = parts[Key{owner, w.file, w.line, w.function}];
      p.owner = owner;
      p.where = w;
      p.bytes += b.bytes;
      ++p.blocks;
    }
    if (d.at_peak_before > 0) {
      PeakPart p;
      p.owner = "other";
      p.where.file = "(allocated before the observer started)";
      p.bytes = d.at_peak_before;
      parts[Key{"other", p.where.file, 0, ""}] = p;
    }
    for (auto &[k, p] : parts)
      t.parts.push_back(std::move(p));
    std::stable_sort(
        t.parts.begin(), t.parts.end(),
        [](const PeakPart &a, const PeakPart &b) { return a.bytes > b.bytes; });
    t.misses = d.misses;
    for (std::size_t i = 0; i < t.misses.size(); ++i)
      t.misses[i].where = where(d.miss_ids[i]);
    t.marks = d.marks;
    explain(t, findings);
    out.push_back(std::move(t));
  }
  return out;
}

} // namespace devcopy
