// What the copy observer records about a copy or a move, as plain values, and
// the findings made from them. LibTorch-free: the callbacks fill these, the
// wording lives in copy_observer_findings.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "devcopy/report.h"

namespace devcopy::observer {

/// One copy, as seen when it ran.
struct CopyEvent {
  std::string op;     // the call that asked for it: "aten::to", "aten::clone"
  std::string module; // innermost ModuleScope / user scope, may be empty
  std::string tensor; // the source's watched name, may be empty
  std::string src_device; // "cuda:0"
  std::string dst_device; // "cpu"
  std::string dtype;      // destination dtype, "float"
  std::string shape;      // "[64, 1024]"
  std::int64_t bytes = 0; // bytes written
  bool non_blocking = false;
  bool dst_pinned = false;
  SourceLocation where; // given by a front end (Python), else from the stack
  std::string into; // transient-device-copy: what the result was copied into
  // discarded-copy, judged from native stacks: where the innermost frame
  // running both at the copy and at the free stood then and at the free.
  // Different lines: the copy outlived its statement (it was stored).
  std::uintptr_t made_at = 0;
  std::uintptr_t freed_at = 0;
};

/// One set_data (Module::to swaps each parameter's storage through it).
struct MoveEvent {
  std::string tensor; // watched name, or empty
  std::string module;
  std::string old_device;
  std::string new_device;
  std::string dtype; // of the old storage's tensor
  std::string shape;
};

/// The result was freed unread while the source lived.
Finding discarded_copy(const CopyEvent &e);
/// A discarded non-blocking device-to-host copy: its pinned block stays cached.
Finding pinned_block_held(const CopyEvent &e);
/// A non_blocking copy with a pageable host side: synchronous anyway.
Finding pageable_non_blocking(const CopyEvent &e);
/// A host-to-device result copied into another tensor on its device, then
/// freed.
Finding transient_device_copy(const CopyEvent &e);
/// The storage a move replaced is still alive: `bytes` held on the old device.
Finding stale_after_move(const MoveEvent &e, std::int64_t bytes);

} // namespace devcopy::observer
