// The one result model of the runtime side. inspect() and CopyObserver both
// fill a Report; printing, JSON and the GoogleTest assertions read only this.
// Depends on the standard library alone, so tools can consume reports without
// including LibTorch.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace devcopy {

/// Where in the user's code something happened: the innermost frame outside
/// LibTorch, the standard library and devcopy. `line` is 0 and `file` empty
/// when that frame has no debug information; all empty when unknown.
struct SourceLocation {
  std::string function; // "train_step(Model&, at::Tensor)"
  std::string file;     // as the compiler saw it: "/src/train.cpp"
  int line = 0;
  bool known() const { return !function.empty() || !file.empty(); }
};

/// One problem worth fixing. `kind` is a rule id from rules/ (for example
/// "duplicate-storage"); the catalog in <devcopy/rules_catalog.h> has its page.
struct Finding {
  std::string kind;
  std::string message;              // one line: what, where, what to do instead
  std::int64_t bytes = 0;           // bytes wasted (or held) by this finding
  std::vector<std::string> devices; // "cpu", "cuda:0", ...
  std::vector<std::string>
      tensors;        // qualified names: "encoder.layers.3.fc.weight"
  std::string op;     // the op that made it, when known ("aten::to")
  std::string module; // the module or scope it ran under, when known
  std::vector<std::string> details; // further lines: allocation context, sizes
  SourceLocation location;          // the user's frame that made it, when known
  // Occurrences merged into this finding (the observer merges one call site's
  // repeats; `bytes` is their sum), and the ordinals of the first and last
  // among the copies its observer saw (0 when not counted).
  std::int64_t count = 1;
  std::int64_t first = 0;
  std::int64_t last = 0;
};

/// Storage reached through several names (tied weights, views, a tensor
/// registered twice): counted once, reported as information only.
struct SharedStorage {
  std::string device;
  std::int64_t bytes = 0;
  std::vector<std::string> tensors;
};

/// Memory on one device. Allocator figures are -1 where unknown (CPU, or a
/// LibTorch built without CUDA).
struct DeviceMemory {
  std::string device;
  std::int64_t reachable_bytes =
      0; // parameters, buffers, gradients; each storage once
  std::int64_t allocated_bytes = -1;
  std::int64_t reserved_bytes = -1;
  std::int64_t reserved_unused_bytes = -1; // reserved - allocated
  std::int64_t largest_free_block =
      -1; // largest cached block the allocator can reuse
};

/// One rank's memory on one device (inspect_distributed() only). Allocator
/// figures are -1 where unknown.
struct RankMemory {
  int rank = 0;
  std::string host;
  std::string device; // as that rank names it: "cpu", "cuda:0"
  std::int64_t reachable_bytes = 0;
  std::int64_t allocated_bytes = -1;
  std::int64_t reserved_bytes = -1;
};

/// Bytes every rank holds identically, by category (inspect_distributed()
/// only): "parameters" and "buffers" are expected under data parallelism and
/// listed as information; "gradients" and "optimizer state" are what sharding
/// would save and also get a replicated-across-ranks finding.
struct Replicated {
  std::string category;
  int ranks = 0; // how many ranks hold these bytes: all of them
  std::int64_t bytes_per_rank = 0;
  std::int64_t storages = 0; // storages per rank
  bool expected = false;     // information only
  std::vector<std::string>
      tensors; // names on the reporting rank (the first few)
};

/// Copies seen by a CopyObserver, grouped by route and dtype.
struct CopyRoute {
  std::string src_device;
  std::string dst_device;
  std::string dtype; // destination dtype, "float", "c10::Half", ...
  std::int64_t count = 0;
  std::int64_t bytes = 0;
};

/// Device memory at one moment of an observer's life.
struct MemorySample {
  std::int64_t time_ns = 0; // since the observer started
  std::int64_t allocated = 0;
  std::int64_t reserved = 0;
};

/// Bytes live at a peak that one owner allocated at one line. Owners:
/// "parameters", "gradients", "optimizer state", "buffers", "checkpoint
/// temporaries", "copies", "other".
struct PeakPart {
  std::string owner;
  SourceLocation where; // unknown for blocks below the located size
  std::int64_t bytes = 0;
  std::int64_t blocks = 0;
};

/// A request that made a new segment although the cache held enough free
/// bytes (in pieces too small, or of the wrong stream).
struct SegmentMiss {
  std::int64_t time_ns = 0;
  std::int64_t requested = 0;
  std::int64_t segment = 0;     // bytes of the new segment
  std::int64_t cached_free = 0; // reserved but unallocated, just before
  std::int64_t largest_free_block = 0;
  SourceLocation where;
};

/// A large copy during the block, as a mark on the timeline.
struct TimelineMark {
  std::int64_t time_ns = 0;
  std::int64_t ordinal = 0; // among the observer's copies (Finding::first)
  std::int64_t bytes = 0;
  std::string route; // "cpu -> cuda:0"
  SourceLocation where;
};

/// One device's memory over an observed block, and its peak explained.
struct DeviceTimeline {
  std::string device;
  std::vector<MemorySample> samples; // downsampled; the peak is one of them
  std::int64_t peak_bytes = 0;       // allocated at the peak
  std::int64_t peak_reserved = 0;
  std::int64_t peak_time_ns = 0;
  SourceLocation peak_where; // the line running when the peak was reached
  std::vector<PeakPart>
      parts;                // live at the peak by owner and line, largest first
  std::string explained_by; // the finding kind that explains the excess
  std::string explanation;  // one line: the peak, its parts, the fix
  std::vector<SegmentMiss> misses;
  std::vector<TimelineMark> marks;
  /// Bytes of `owner` at the peak, over all lines.
  std::int64_t owned(const std::string &owner) const;
};

/// Something the probe saw but could not read (meta, sparse, ...): it says so
/// instead of guessing.
struct Skipped {
  std::string tensor;
  std::string reason;
};

class Report {
public:
  const std::vector<Finding> &findings() const { return findings_; }
  /// Findings of one kind only.
  std::vector<Finding> findings(const std::string &kind) const;
  bool has_findings() const { return !findings_.empty(); }
  /// Sum of `bytes` over all findings.
  std::int64_t wasted_bytes() const;

  const std::vector<SharedStorage> &shared() const { return shared_; }
  const std::vector<DeviceMemory> &devices() const { return devices_; }
  const std::vector<CopyRoute> &copies() const { return copies_; }
  const std::vector<Skipped> &skipped() const { return skipped_; }
  const std::vector<RankMemory> &ranks() const { return ranks_; }
  const std::vector<Replicated> &replicated() const { return replicated_; }
  /// Device memory over the observed block (CopyObserver on an allocator
  /// that reports its events: CUDA's on LibTorch 2.x).
  const std::vector<DeviceTimeline> &timelines() const { return timelines_; }
  /// Largest over smallest per-rank total of reachable bytes (1.0 when
  /// balanced); 0 without rank figures or when a rank holds nothing.
  double rank_skew() const;
  /// Device-to-host synchronisations observed (CopyObserver only).
  std::int64_t host_syncs() const { return host_syncs_; }

  void add(Finding f) { findings_.push_back(std::move(f)); }
  void add(SharedStorage s) { shared_.push_back(std::move(s)); }
  void add(DeviceMemory d) { devices_.push_back(std::move(d)); }
  void add(CopyRoute c) { copies_.push_back(std::move(c)); }
  void add(Skipped s) { skipped_.push_back(std::move(s)); }
  void add(RankMemory m) { ranks_.push_back(std::move(m)); }
  void add(Replicated r) { replicated_.push_back(std::move(r)); }
  void add(DeviceTimeline t) { timelines_.push_back(std::move(t)); }
  void set_host_syncs(std::int64_t n) { host_syncs_ = n; }
  /// Appends everything in `other` (for example an observer's report to an
  /// inspection's).
  void merge(const Report &other);

  /// The whole report as one JSON object (stable keys; see report.cpp).
  std::string to_json() const;

private:
  std::vector<Finding> findings_;
  std::vector<SharedStorage> shared_;
  std::vector<DeviceMemory> devices_;
  std::vector<CopyRoute> copies_;
  std::vector<Skipped> skipped_;
  std::vector<RankMemory> ranks_;
  std::vector<Replicated> replicated_;
  std::vector<DeviceTimeline> timelines_;
  std::int64_t host_syncs_ = 0;
};

/// A readable report in the spirit of sanitizer reports: one header line per
/// finding (kind and size), then its tensors, devices and details.
std::ostream &operator<<(std::ostream &os, const Report &report);
std::ostream &operator<<(std::ostream &os, const Finding &finding);

/// "train.cpp:42 in step(Model&)": file:line first, as compilers print them.
std::string location_text(const SourceLocation &location);

/// "1.50 GiB", "512.00 MiB", "12 B": sizes people read.
std::string format_bytes(std::int64_t bytes);

} // namespace devcopy
