// The shared state behind every CopyObserver: one process-wide hub, fed by
// the RecordFunction callback (copy_observer.cpp) and read by report().
//
// A fresh copy result is tracked by exchanging the deleter of its storage's
// DataPtr for tracked_deleter (the allocator's context is kept, so the CUDA
// host allocator's events still find their block). The free itself then
// tells the hub, at the moment it happens, on whatever thread: nothing is
// polled and no address outlives its allocation (an entry is keyed by the
// allocation's context and erased by its own free). An op that reads the
// result restores the allocator's deleter: a read copy is never tracked
// again. The callback's per-op fast path compares each input's deleter with
// tracked_deleter, lock-free, and only while tracked copies are alive.
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>
#include <c10/core/UndefinedTensorImpl.h>
#include <c10/util/intrusive_ptr.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "backend.h"
#include "copy_observer_findings.h"
#include "copy_observer_sites.h"
#include "copy_observer_stack.h"
#include "devcopy/copy_observer.h"
#include "devcopy/timeline.h"

namespace devcopy {

namespace observer {

using WeakStorage = c10::weak_intrusive_ptr<c10::StorageImpl>;
using WeakTensor =
    c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

inline WeakStorage no_storage() {
  return WeakStorage(c10::intrusive_ptr<c10::StorageImpl>());
}

/// The deleter a tracked copy's storage carries while it is unread.
void tracked_deleter(void *context);

/// The storage's DataPtr, writable without 2.x's copy-on-write and
/// data-access checks (the observer never touches the bytes).
template <class S>
auto mutable_data_ptr(S &s, int) -> decltype(s._mutable_data_ptr_no_checks()) {
  return s._mutable_data_ptr_no_checks();
}
template <class S> at::DataPtr &mutable_data_ptr(S &s, long) {
  return s.data_ptr();
}
inline at::DataPtr &mutable_data_ptr(c10::StorageImpl &s) {
  return mutable_data_ptr(s, 0);
}

inline bool is_tracked(const c10::StorageImpl *s) {
  return s->data_ptr().get_deleter() == &tracked_deleter;
}

/// Allocations of at least this size are located, and marked when copied.
constexpr std::int64_t kLocatedBytes = 1 << 20;
/// steady_clock nanoseconds (the timeline's clock).
std::int64_t now_ns();

/// Allocations on this thread waiting for their line (the next op end
/// gives it): a count the RecordFunction end callback tests.
inline thread_local int t_unlocated = 0;

/// What the ops open on this thread say a new block is ("gradients" under
/// an autograd node, "optimizer state" in an optimizer's step), or nullptr
/// (copy_observer.cpp).
const char *allocation_owner();
inline constexpr const char *kGradients = "gradients";

/// A front end's frames at a copy (StatementProvider), innermost first.
struct Statement {
  static constexpr int kMax = 16;
  StatementFrame frames[kMax];
  int size = 0;
};

/// What the callback decided about one copy, beside its CopyEvent.
struct CopyFacts {
  bool sync = false; // device-to-host, the host waits
  bool pageable_non_blocking =
      false;                       // ineffective-non-blocking, reported at once
  c10::StorageImpl *dst = nullptr; // a fresh result: track whether it is read
  WeakStorage dst_weak = no_storage();
  WeakStorage src = no_storage();
  const c10::TensorImpl *src_impl =
      nullptr;                    // compared only, for a watched name
  const Stack *stack = nullptr;   // where, when captured
  Statement statement;            // a tracked copy's front-end frames
  const void *dst_data = nullptr; // a device result's block
  std::uint64_t block = 0;        // its id in the memory timeline
  // transient-device-copy: a host-to-device result (may be a temporary), and
  // a same-device copy_ reading `from` into `into` (described by into_what).
  const c10::StorageImpl *staged = nullptr;
  WeakStorage staged_weak = no_storage();
  const c10::StorageImpl *from = nullptr;
  WeakStorage into = no_storage();
  const c10::TensorImpl *into_impl =
      nullptr; // compared only, for a watched name
  std::string into_what;
};

/// RecordFunction registration (copy_observer.cpp).
std::uint64_t add_callback();
void remove_callback(std::uint64_t handle);

class Hub {
public:
  /// Never destroyed: a callback or a tracked free may still run while the
  /// process exits.
  static Hub &get();
  static bool active() { return active_.load(std::memory_order_relaxed); }
  /// Whether any tracked copy is alive and unread.
  static bool has_unread() {
    return unread_.load(std::memory_order_relaxed) != 0;
  }
  static bool capture_stacks() {
    return stacks_.load(std::memory_order_relaxed);
  }
  /// Whether host-to-device results are remembered (transient-device-copy).
  static bool has_staged() {
    return staged_count_.load(std::memory_order_relaxed) != 0;
  }
  static std::atomic<StatementProvider> statements;

  void attach(CopyObserver::State *state);
  void detach(CopyObserver::State *state);
  void watch(CopyObserver::State *state,
             std::vector<std::pair<WeakTensor, std::string>> names);
  /// Remembers `namer` until a finding needs names (name_lazily).
  void watch_lazily(CopyObserver::State *state, CopyObserver::Namer namer);

  void copied(CopyEvent event, CopyFacts facts);
  void moved(MoveEvent event, WeakStorage old_storage,
             const c10::TensorImpl *self);
  void synced();
  /// An op read this tracked storage: its copy is used.
  void read(c10::StorageImpl *storage);
  /// tracked_deleter: the allocator's deleter for `context`, after judging
  /// the copy freed there.
  c10::DeleterFnPtr freed(void *context);

  /// The allocator's events (backend.h's MemorySink), under its lock.
  static void on_memory(detail::MemoryAction action, int device,
                        std::uint64_t address, std::int64_t bytes);
  /// The line of this thread's allocations that wait for one.
  void located(const SourceLocation &where);
  /// Names the block holding `data` on `device` (MemoryTimeline::own).
  std::uint64_t owned(const std::string &device, const void *data,
                      const std::string &owner);
  SourceLocation symbolize(const Stack &stack) { return symbols_.get(stack); }
  static bool recording() { return recording_.load(std::memory_order_relaxed); }
  /// The first observer starts the timeline, the last stops it; callers
  /// hold mu_ (copy_observer_memory.cpp).
  void start_timeline();
  void stop_timeline();

  Report report(const CopyObserver::State &state);

private:
  struct Tracked {
    c10::DeleterFnPtr deleter; // the allocator's
    WeakStorage dst; // to give the allocator its deleter back on detach
    WeakStorage src;
    std::uint64_t seq;
    std::uint64_t ordinal; // among all copies seen
    CopyEvent event;
    Stack stack;
    std::thread::id thread; // that made it
    Statement statement;
    // The source, held weakly (its address is never reused meanwhile), when
    // its name is looked up only if the copy becomes a finding (freed()).
    std::optional<WeakTensor> unnamed_src;
  };
  // A host-to-device result, remembered until it dies: if the first
  // same-device copy reading it wrote into a tensor that outlives it, the
  // result was a temporary (transient-device-copy).
  struct Staged {
    WeakStorage storage;
    std::uint64_t seq;
    std::uint64_t ordinal;
    CopyEvent event;
    Stack stack;
    WeakStorage into = no_storage();
    std::uint64_t block = 0; // its block in the memory timeline
  };
  struct Move {
    WeakStorage old_storage;
    std::uint64_t seq;
    MoveEvent event;
  };

  void publish() { unread_.store(tracked_.size(), std::memory_order_relaxed); }
  void stage(const CopyEvent &event, CopyFacts &facts, std::uint64_t seq,
             std::uint64_t ordinal);
  /// Judges the staged results that died; callers hold mu_.
  void settle();
  void record(const std::string &kind, const Tracked &t);
  /// Whether a copy freed unread now, on this thread, dies in the statement
  /// that made it (never stored); native stacks leave the verdict to the
  /// report (CopyEvent::freed_at).
  static bool in_statement(Tracked &t);
  std::string name_of(const c10::TensorImpl *impl) const;
  /// Runs the namers of the observers that have not named their tensors
  /// yet, outside mu_ (a namer may wait for a front end's lock that a
  /// thread waiting for mu_ holds), before a finding's name_of.
  void name_lazily();

  static std::atomic<bool> active_;
  static std::atomic<std::size_t> unread_;
  static std::atomic<bool> stacks_;
  static std::atomic<std::size_t> staged_count_;
  static std::atomic<bool> recording_;
  static std::atomic<std::size_t> lazy_; // observers whose namer has not run

  std::mutex mu_;
  std::vector<CopyObserver::State *> observers_;
  std::uint64_t handle_ = 0;
  std::uint64_t seq_ = 0;
  std::uint64_t copies_ = 0;
  std::unordered_map<void *, Tracked> tracked_; // by the allocation's context
  bool overflow_ = false;
  std::vector<Move> moves_;
  std::unordered_map<const c10::StorageImpl *, Staged>
      staged_;      // weakly held: no address reuse
  Symbols symbols_; // stack hash -> user frame, shared by every observer
  // Device memory over time: fed under the allocator's lock, so guarded by
  // its own mutex, never held while taking mu_ or calling the allocator.
  std::mutex tl_mu_;
  MemoryTimeline timeline_;
  std::int64_t start_ns_ = 0;
};

} // namespace observer

struct CopyObserver::State {
  std::uint64_t since = 0; // events with a larger sequence number are ours
  std::uint64_t copies =
      0; // copies seen before it started (ordinals are relative)
  std::map<std::tuple<std::string, std::string, std::string>, CopyRoute> routes;
  observer::Sites sites;
  std::int64_t host_syncs = 0;
  std::unordered_map<const c10::TensorImpl *,
                     std::pair<observer::WeakTensor, std::string>>
      names;
  // watch_lazily's namer until it has run; then why it named nothing, if so.
  std::shared_ptr<const CopyObserver::Namer> namer;
  std::string naming_error;
};

} // namespace devcopy
