// MemoryTimeline: device memory over an observed block, from an allocator's
// events, and the peak explained. Backend-neutral and LibTorch-free: the
// CUDA caching allocator's trace hook feeds it on LibTorch 2.x, a test feeds
// it synthetic events; summary() gives each device's DeviceTimeline.
//
// Cheap per event (it may run under the allocator's lock): a hash-map update
// and a sample now and then. The blocks live at the peak are copied at the
// first free after a new maximum, and only when it passed the last copied
// one by 1/512 (a forward pass raises the peak at every layer): the parts
// may be those of a moment up to 0.2% below the peak; their sum is exact.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "devcopy/report.h"

namespace devcopy {

class MemoryTimeline {
public:
  /// Allocations of at least `located_bytes` (and those that set a new peak)
  /// ask for their line; smaller ones are counted only.
  explicit MemoryTimeline(std::int64_t located_bytes = 1 << 20);

  /// Memory already allocated and reserved on `device` when recording began.
  void baseline(const std::string &device, std::int64_t allocated,
                std::int64_t reserved);
  /// A block of `bytes` at `address`. Returns its id when its line is wanted
  /// (pass it to locate()), else 0.
  std::uint64_t allocated(const std::string &device, std::uint64_t address,
                          std::int64_t bytes, std::int64_t time_ns,
                          const char *owner = nullptr);
  /// The block at `address` was freed (`bytes` counts for blocks allocated
  /// before recording began).
  void freed(const std::string &device, std::uint64_t address,
             std::int64_t bytes, std::int64_t time_ns);
  /// The allocator reserved (`bytes` > 0) or released (< 0) a segment.
  void segment(const std::string &device, std::uint64_t address,
               std::int64_t bytes, std::int64_t time_ns);
  /// Where allocation `id` was asked for.
  void locate(std::uint64_t id, const SourceLocation &where);
  /// Names what the live block at `address` is (see PeakPart); a later,
  /// more specific owner replaces "copies" and "other". Returns its id.
  std::uint64_t own(const std::string &device, std::uint64_t address,
                    const std::string &owner);
  /// Renames block `id` wherever it is still kept (live or at the peak).
  void own(std::uint64_t id, const std::string &owner);
  /// A copy of at least the located size, as a mark.
  void mark(const std::string &device, TimelineMark m);

  /// Each device's timeline; `findings` (the observer's) name the fix.
  std::vector<DeviceTimeline>
  summary(const std::vector<Finding> &findings) const;

private:
  struct Block {
    std::uint64_t id = 0;
    std::int64_t bytes = 0;
    std::string owner;
  };
  struct Device {
    std::int64_t allocated = 0, reserved = 0, before = 0;
    std::int64_t peak = -1, peak_reserved = 0, peak_time = 0;
    std::uint64_t peak_id = 0;  // the allocation that reached it
    bool peak_kept = true;      // `at_peak` holds the peak's blocks
    std::int64_t kept_peak = 0; // the peak `at_peak` was copied at
    std::unordered_map<std::uint64_t, Block> live;  // by address
    std::map<std::uint64_t, std::int64_t> segments; // address -> bytes
    std::vector<Block> at_peak;                     // by id
    std::int64_t at_peak_before = 0;
    std::vector<MemorySample> samples;
    std::int64_t last_sample = -1;
    std::vector<SegmentMiss> misses;
    bool segment_new = false; // a new segment: judge the next request
    SegmentMiss pending;
    std::vector<std::uint64_t> miss_ids; // each miss's request
    std::vector<TimelineMark> marks;
  };
  Device &device(const std::string &name);
  void sample(Device &d, std::int64_t time_ns, bool force);
  static void keep_peak(Device &d);
  std::int64_t largest_free(const Device &d) const;

  std::int64_t located_bytes_;
  std::uint64_t next_id_ = 0;
  std::map<std::string, Device> devices_;
  std::unordered_map<std::uint64_t, SourceLocation> where_; // by block id
};

} // namespace devcopy
