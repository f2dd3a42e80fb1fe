// Where a copy was made: the calling thread's return addresses, captured
// only for copies while an observer lives, and turned into the user's frame
// (function, file, line) only when a report asks. LibTorch-free.
//
// Built on libbacktrace (the copy GCC ships beside libgcc: backtrace.h and
// libbacktrace.a), which reports inlined frames too: LibTorch's inline
// header functions (Tensor::to) are skipped and the user's function that
// inlined them is named. Without it (DEVCOPY_HAS_BACKTRACE=0) nothing is
// captured and findings carry the module path only.
#pragma once

#include <cstdint>

#include "devcopy/report.h"

namespace devcopy::observer {

struct Stack {
  static constexpr int kMax = 64; // deep enough to get past LibTorch's dispatch
  std::uintptr_t pc[kMax];
  int size = 0;
  /// Equal stacks have equal hashes; 0 for an empty stack.
  std::uint64_t hash() const;
};

/// True when this build can capture and symbolize stacks.
bool stacks_supported();
/// The calling thread's stack, innermost first (a few microseconds).
void capture(Stack &stack);
/// The innermost frame outside LibTorch, the C++ and CUDA runtimes and
/// devcopy itself; unknown when there is none or stacks are unsupported.
/// Slow the first time in a process (reads symbol tables); thread-safe.
SourceLocation user_frame(const Stack &stack);
/// The innermost frame of `made` (a copy's stack) still running in `now` (a
/// later stack of the same thread): its pc then and now. False when the two
/// share no frame.
bool shared_frame(const Stack &made, const Stack &now, std::uintptr_t &then,
                  std::uintptr_t &at);
/// Whether two pcs of one function run the same source line (true when
/// either has no line information: nothing tells them apart).
bool same_line(std::uintptr_t a, std::uintptr_t b);

} // namespace devcopy::observer
