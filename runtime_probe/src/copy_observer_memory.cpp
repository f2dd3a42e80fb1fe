// The hub's memory timeline: the allocator's events (under its lock, so
// under tl_mu_ alone), the lines of large allocations (given when the op
// that made them ends), and the owners the observer's events name.
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "copy_observer_hub.h"

namespace devcopy {
namespace observer {

std::atomic<bool> Hub::recording_{false};

namespace {
constexpr int kUnlocated = 8;
thread_local std::uint64_t t_unlocated_ids[kUnlocated];

} // namespace

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Hub::start_timeline() {
  {
    std::lock_guard<std::mutex> tl(tl_mu_);
    timeline_ = MemoryTimeline(kLocatedBytes);
    start_ns_ = now_ns();
    for (int d = 0; d < detail::cuda_device_count(); ++d) {
      const detail::AllocatorState s = detail::cuda_allocator_state(d, false);
      if (s.known)
        timeline_.baseline("cuda:" + std::to_string(d), s.allocated,
                           s.reserved);
    }
  }
  // DEVCOPY_TIMELINE=0: copies only (the benchmark's observer alone).
  const char *timeline = std::getenv("DEVCOPY_TIMELINE");
  const bool wanted = !timeline || std::strcmp(timeline, "0") != 0;
  recording_.store(wanted && detail::cuda_trace_memory(&Hub::on_memory),
                   std::memory_order_relaxed);
}

void Hub::stop_timeline() {
  recording_.store(false, std::memory_order_relaxed);
  detail::cuda_trace_memory(nullptr);
}

void Hub::on_memory(detail::MemoryAction action, int device,
                    std::uint64_t address, std::int64_t bytes) {
  Hub &h = get();
  const std::string name = "cuda:" + std::to_string(device);
  std::lock_guard<std::mutex> lock(h.tl_mu_);
  if (!recording())
    return;
  const std::int64_t t = now_ns() - h.start_ns_;
  switch (action) {
  case detail::MemoryAction::alloc: {
    const char *owner = allocation_owner();
    const std::uint64_t id =
        h.timeline_.allocated(name, address, bytes, t, owner);
    // Gradients are made on the autograd engine's device threads, whose
    // stacks hold no frame of the user's: unwinding one finds no line, and
    // costs more than the op that allocated.
    if (id && owner != kGradients && t_unlocated < kUnlocated)
      t_unlocated_ids[t_unlocated++] = id;
    break;
  }
  case detail::MemoryAction::free:
    h.timeline_.freed(name, address, bytes, t);
    break;
  case detail::MemoryAction::segment_alloc:
    h.timeline_.segment(name, address, bytes, t);
    break;
  case detail::MemoryAction::segment_free:
    h.timeline_.segment(name, address, -bytes, t);
    break;
  }
}

void Hub::located(const SourceLocation &where) {
  std::lock_guard<std::mutex> lock(tl_mu_);
  for (int i = 0; i < t_unlocated; ++i)
    timeline_.locate(t_unlocated_ids[i], where);
  t_unlocated = 0;
}

std::uint64_t Hub::owned(const std::string &device, const void *data,
                         const std::string &owner) {
  if (!recording() || !data)
    return 0;
  std::lock_guard<std::mutex> lock(tl_mu_);
  return timeline_.own(device, reinterpret_cast<std::uintptr_t>(data), owner);
}

Hub &Hub::get() {
  static Hub *hub = new Hub; // intentionally leaked, see the header
  return *hub;
}

void tracked_deleter(void *context) {
  if (c10::DeleterFnPtr deleter = Hub::get().freed(context))
    deleter(context);
}

} // namespace observer
} // namespace devcopy
