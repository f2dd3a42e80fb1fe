// The CUDA caching allocator's trace hook (LibTorch 2.x) feeding the
// observer's memory timeline. The hook cannot be removed once attached: it is
// attached once per process and forwards only while a sink is set (an
// atomic load when no observer records). 1.13 has no hook: no timeline.
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/version.h>

#include <atomic>
#include <mutex>

#include "backend.h"

namespace devcopy::detail {
namespace {
std::atomic<MemorySink> g_sink{nullptr};
} // namespace

#if TORCH_VERSION_MAJOR >= 2

bool cuda_trace_memory(MemorySink sink) {
  namespace alloc = c10::cuda::CUDACachingAllocator;
  static std::once_flag once;
  static bool attached = false;
  g_sink.store(sink, std::memory_order_release);
  if (!sink || attached)
    return attached;
  // Trackers attach to the allocators of initialised devices only.
  if (!alloc::get() || !alloc::get()->initialized())
    return false;
  std::call_once(once, [] {
    alloc::attachAllocatorTraceTracker([](const alloc::TraceEntry &e) {
      const MemorySink s = g_sink.load(std::memory_order_acquire);
      if (!s)
        return;
      using A = alloc::TraceEntry::Action;
      MemoryAction a;
      switch (e.action_) {
      case A::ALLOC:
        a = MemoryAction::alloc;
        break;
      case A::FREE_REQUESTED:
        a = MemoryAction::free;
        break;
      case A::SEGMENT_ALLOC:
      case A::SEGMENT_MAP:
        a = MemoryAction::segment_alloc;
        break;
      case A::SEGMENT_FREE:
      case A::SEGMENT_UNMAP:
        a = MemoryAction::segment_free;
        break;
      default:
        return;
      }
      s(a, static_cast<int>(e.device_), static_cast<std::uint64_t>(e.addr_),
        static_cast<std::int64_t>(e.size_));
    });
    attached = true;
  });
  return attached;
}

#else

bool cuda_trace_memory(MemorySink sink) {
  g_sink.store(sink, std::memory_order_release);
  return false;
}

#endif

} // namespace devcopy::detail
