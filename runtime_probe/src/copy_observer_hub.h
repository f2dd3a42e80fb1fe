// The shared state behind every CopyObserver: one process-wide hub, fed by
// the RecordFunction callback (copy_observer.cpp) and read by report().
// Everything in it is guarded by one mutex; the callback's per-op fast path
// reads only the atomics (and takes the mutex only when an input may be an
// unread copy, or every kPollEvery ops to look for dead ones).
#pragma once

#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>
#include <c10/core/UndefinedTensorImpl.h>
#include <c10/util/intrusive_ptr.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "copy_observer_findings.h"
#include "devcopy/copy_observer.h"

namespace devcopy {

namespace observer {

using WeakStorage = c10::weak_intrusive_ptr<c10::StorageImpl>;
using WeakTensor = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

inline WeakStorage no_storage() { return WeakStorage(c10::intrusive_ptr<c10::StorageImpl>()); }

/// What the callback decided about one copy, beside its CopyEvent.
struct CopyFacts {
  bool sync = false;                   // device-to-host, the host waits
  bool pageable_non_blocking = false;  // ineffective-non-blocking, reported at once
  bool track = false;                  // a fresh result: watch whether it is read
  WeakStorage dst = no_storage();
  WeakStorage src = no_storage();
  const c10::TensorImpl* src_impl = nullptr;  // compared only, for a watched name
};

/// RecordFunction registration (copy_observer.cpp).
std::uint64_t add_callback();
void remove_callback(std::uint64_t handle);

class Hub {
 public:
  /// Never destroyed: a callback may still run while the process exits.
  static Hub& get();
  static bool active() { return active_.load(std::memory_order_relaxed); }
  static bool has_unread() { return unread_.load(std::memory_order_relaxed) != 0; }
  /// False when `storage` is certainly no unread copy: a 64-bit filter of
  /// their addresses, read without the mutex (a stale bit only costs a lock).
  static bool maybe_unread(const c10::StorageImpl* storage) {
    return (filter_.load(std::memory_order_relaxed) & bit(storage)) != 0;
  }
  /// Ops a thread runs between two checks for dead unread copies when none
  /// of their inputs may be one.
  static constexpr unsigned kPollEvery = 16;

  void attach(CopyObserver::State* state);
  void detach(CopyObserver::State* state);
  void watch(CopyObserver::State* state, std::vector<std::pair<WeakTensor, std::string>> names);

  void copied(CopyEvent event, CopyFacts facts);
  void moved(MoveEvent event, WeakStorage old_storage, const c10::TensorImpl* self);
  void synced();
  /// An op read these storages: copies into them are used.
  void read(const c10::StorageImpl* const* storages, std::size_t n);

  Report report(const CopyObserver::State& state);

 private:
  struct Unread {
    WeakStorage dst;
    WeakStorage src;
    std::uint64_t seq;
    CopyEvent event;
  };
  struct Move {
    WeakStorage old_storage;
    std::uint64_t seq;
    MoveEvent event;
  };

  void forget(std::size_t i);
  void poll(std::size_t budget);  // checks up to `budget` unread copies for death
  void publish();
  static std::uint64_t bit(const c10::StorageImpl* s) {
    // Fibonacci hashing of the address (allocations are 16-byte aligned).
    return std::uint64_t{1} << ((reinterpret_cast<std::uintptr_t>(s) >> 4) *
                                    0x9E3779B97F4A7C15ull >> 58);
  }
  std::string name_of(const c10::TensorImpl* impl) const;

  static std::atomic<bool> active_;
  static std::atomic<std::size_t> unread_;
  static std::atomic<std::uint64_t> filter_;

  std::mutex mu_;
  std::vector<CopyObserver::State*> observers_;
  std::uint64_t handle_ = 0;
  std::uint64_t seq_ = 0;
  std::vector<Unread> unread_list_;
  std::unordered_map<const c10::StorageImpl*, std::size_t> unread_index_;
  std::size_t cursor_ = 0;
  bool overflow_ = false;
  std::vector<Move> moves_;
};

}  // namespace observer

struct CopyObserver::State {
  std::uint64_t since = 0;  // events with a larger sequence number are ours
  std::map<std::tuple<std::string, std::string, std::string>, CopyRoute> routes;
  std::vector<Finding> findings;
  std::int64_t host_syncs = 0;
  std::unordered_map<const c10::TensorImpl*, std::pair<observer::WeakTensor, std::string>> names;
};

}  // namespace devcopy
