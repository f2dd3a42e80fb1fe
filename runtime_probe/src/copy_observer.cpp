// CopyObserver: a global RecordFunction callback that sees every op on every
// thread. Per op it only pushes a frame on a thread-local stack and compares
// the op name; the bookkeeping (under one mutex) runs for copy_, set_data and
// syncs, and for inputs that may be unread copies (a lock-free filter says).
//
// Why copy_: `to` -> `_to_copy` -> `empty_strided` + `copy_`, `clone` ->
// `copy_`, `t.copy_(s)` -> `copy_`. Counting at the outermost copy_ counts each
// byte once, and its inputs (dst, src, non_blocking) say everything; the
// frames under it say who asked (the outermost op of the chain).

// RecordFunction has a member only when NDEBUG is unset; LibTorch packages
// are built with NDEBUG, so this TU must be too or it reads a shifted layout.
#ifndef NDEBUG
#define NDEBUG
#endif

#include "devcopy/copy_observer.h"

#include <ATen/core/Tensor.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <ATen/record_function.h>
#include <c10/util/intrusive_ptr.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>

#include "copy_observer_hub.h"

namespace devcopy {
namespace observer {
namespace {

// ---- the thread-local op stack ----------------------------------------------

enum class Kind : std::uint8_t {
  other,
  to_family, // to, _to_copy, clone, contiguous: allocate a fresh result
  copy,      // copy_
  set_data,  // set_data, or the check it makes first (1.13 does not dispatch
             // set_data)
  shallow_check,
  sync,       // _local_scalar_dense (item), nonzero: wait for the device
  user_scope, // ModuleScope or a RecordFunction user scope
  backward,   // an autograd node
  engine,     // the engine's evaluate_function around a node and its hooks
};

struct Frame {
  const void *id;
  const char *name;
  Kind kind;
};

// POD thread-locals: constant-initialised, so no TLS guard on the hot path.
// Past kInlineFrames the stack moves to the heap (kept for the thread's life:
// only threads that went that deep pay for it).
constexpr int kInlineFrames = 128;
thread_local Frame t_inline[kInlineFrames];
thread_local Frame *t_heap = nullptr;
thread_local int t_capacity = 0;
thread_local int t_depth = 0;
thread_local int t_copies = 0; // copy_ and sync frames open on this thread

bool copyish(Kind k) { return k == Kind::copy || k == Kind::sync; }

Frame *frames() { return t_heap ? t_heap : t_inline; }

void push(const void *id, const char *name, Kind kind) {
  const int capacity = t_heap ? t_capacity : kInlineFrames;
  if (t_depth == capacity) {
    auto *bigger = new Frame[2 * capacity];
    std::copy(frames(), frames() + t_depth, bigger);
    delete[] t_heap;
    t_heap = bigger;
    t_capacity = 2 * capacity;
  }
  frames()[t_depth++] = Frame{id, name, kind};
  if (copyish(kind))
    ++t_copies;
}

// Pops `id` and anything left above it (an async op that ended elsewhere);
// an id not on this thread's stack is ignored.
void pop(const void *id) {
  Frame *f = frames();
  for (int i = t_depth - 1; i >= 0; --i) {
    if (f[i].id == id) {
      for (int j = i; j < t_depth; ++j)
        if (copyish(f[j].kind))
          --t_copies;
      t_depth = i;
      return;
    }
  }
}

// A ModuleScope ends: only its own frame goes, so one destroyed out of order
// leaves the others' names in place.
void remove(const void *id) {
  Frame *f = frames();
  for (int i = t_depth - 1; i >= 0; --i) {
    if (f[i].id == id) {
      std::copy(f + i + 1, f + t_depth, f + i);
      --t_depth;
      return;
    }
  }
}

bool is(const char *op, const char *name) { return std::strcmp(op, name) == 0; }

Kind classify(const at::RecordFunction &fn, const char *name) {
  switch (fn.scope()) {
  case at::RecordScope::BACKWARD_FUNCTION:
    return Kind::backward;
  case at::RecordScope::USER_SCOPE:
    return Kind::user_scope;
  default:
    break;
  }
  if (std::strncmp(name, "autograd::engine::", 18) == 0)
    return Kind::engine;
  if (std::strncmp(name, "aten::", 6) != 0)
    return Kind::other;
  const char *op = name + 6;
  switch (op[0]) {
  case 'c':
    if (is(op, "copy_"))
      return Kind::copy;
    if (is(op, "clone") || is(op, "contiguous"))
      return Kind::to_family;
    break;
  case 't':
    if (is(op, "to"))
      return Kind::to_family;
    break;
  case '_':
    if (is(op, "_to_copy"))
      return Kind::to_family;
    if (is(op, "_local_scalar_dense"))
      return Kind::sync;
    if (is(op, "_has_compatible_shallow_copy_type"))
      return Kind::shallow_check;
    break;
  case 's':
    if (is(op, "set_data"))
      return Kind::set_data;
    break;
  case 'n':
    if (is(op, "nonzero"))
      return Kind::sync;
    break;
  default:
    break;
  }
  return Kind::other;
}

// Where the op on top of the stack stands.
struct Position {
  bool inside_copy = false; // under another copy_ (or a sync): counted there
  bool chain_empty =
      true; // it is the outermost op of its chain (a user's copy_)
  bool under_backward = false;
  bool fresh_result = false;  // the chain down to it is to/_to_copy/clone only
  const char *root = nullptr; // outermost op of its chain
  const char *module = nullptr; // innermost scope name
  Kind parent = Kind::other;
};

Position position() {
  Position p;
  const Frame *t_frames = frames();
  const int top = t_depth - 1;
  int chain = 0;
  for (int i = 0; i < top; ++i) {
    switch (t_frames[i].kind) {
    case Kind::copy:
    case Kind::sync:
      p.inside_copy = true;
      break;
    case Kind::user_scope:
      chain = i + 1;
      p.module = t_frames[i].name;
      break;
    case Kind::backward:
      chain = i + 1;
      p.under_backward = true;
      break;
    case Kind::engine: // hooks run here, outside the node: user code
      chain = i + 1;
      p.under_backward = false;
      break;
    default:
      break;
    }
  }
  if (top >= 1)
    p.parent = t_frames[top - 1].kind;
  p.chain_empty = chain >= top;
  p.fresh_result = chain < top;
  for (int i = chain; i < top; ++i)
    if (t_frames[i].kind != Kind::to_family)
      p.fresh_result = false;
  if (chain < top)
    p.root = t_frames[chain].name;
  return p;
}

// ---- helpers on tensors -----------------------------------------------------

std::string shape_of(const at::Tensor &t) {
  std::ostringstream os;
  os << t.sizes();
  return os.str();
}

std::string dtype_of(const at::Tensor &t) {
  const auto name = t.dtype().name();
  return std::string(name.data(), name.size());
}

c10::StorageImpl *storage_of(const at::Tensor &t) {
  if (!t.defined() || !t.has_storage())
    return nullptr;
  return t.storage().unsafeGetStorageImpl();
}

WeakStorage weak_storage(const at::Tensor &t) {
  return t.storage().getWeakStorageImpl();
}

bool pinned(const at::Tensor &t) {
  return t.is_cpu() && t.numel() > 0 &&
         at::detail::getCUDAHooks().isPinnedPtr(t.data_ptr());
}

bool on_device(const at::Tensor &t) { return !t.is_cpu() && !t.is_meta(); }

// ---- the events -------------------------------------------------------------

std::atomic<LocationProvider> t_provider{nullptr};
std::atomic<ScopeProvider> t_scope_provider{nullptr};

void on_copy(const at::RecordFunction &fn) {
  const auto in = fn.inputs();
  if (in.size() < 2 || !in[0].isTensor() || !in[1].isTensor())
    return;
  const Position pos = position();
  if (pos.inside_copy)
    return; // a step of an outer copy: counted there
  const at::Tensor &dst = in[0].toTensor();
  const at::Tensor &src = in[1].toTensor();
  const bool in_place = pos.chain_empty;
  const bool cross_device = src.device() != dst.device();
  // A compute kernel's own scratch copy (addmm broadcasting its bias) is no
  // transfer anyone asked for; a device crossing inside one still is.
  if (!in_place && !pos.fresh_result && !cross_device)
    return;

  CopyEvent e;
  e.op = pos.root ? pos.root : fn.name();
  if (pos.module)
    e.module = pos.module;
  e.src_device = src.device().str();
  e.dst_device = dst.device().str();
  e.dtype = dtype_of(dst);
  e.bytes = static_cast<std::int64_t>(dst.numel()) *
            static_cast<std::int64_t>(dst.element_size());
  e.non_blocking = in.size() > 2 && in[2].isBool() && in[2].toBool();
  const at::Tensor &host = dst.is_cpu() ? dst : src;
  const bool host_pinned = cross_device ? pinned(host) : false;
  e.dst_pinned = dst.is_cpu() && host_pinned;

  CopyFacts facts;
  facts.sync = cross_device && dst.is_cpu() && on_device(src) &&
               !(e.non_blocking && host_pinned);
  facts.pageable_non_blocking = e.non_blocking && cross_device &&
                                (on_device(src) || on_device(dst)) &&
                                host.is_cpu() && !host_pinned;
  // Only a result the op allocated can be "discarded"; in-place copies fill
  // a buffer the caller owns, and autograd's copies belong to the engine.
  const bool track = pos.fresh_result && !in_place && !pos.under_backward &&
                     storage_of(dst) && dst.numel() > 0;
  static const bool debug = std::getenv("DEVCOPY_STACK_DEBUG") != nullptr;
  if (debug) { // why a copy is (not) tracked: the op frames under it
    std::fprintf(stderr,
                 "devcopy: copy_ track=%d fresh=%d in_place=%d backward=%d:",
                 track, pos.fresh_result, in_place, pos.under_backward);
    for (int i = 0; i < t_depth; ++i)
      std::fprintf(stderr, " %s/%d", frames()[i].name,
                   static_cast<int>(frames()[i].kind));
    std::fprintf(stderr, "\n");
  }
  // transient-device-copy: remember host-to-device results, and tell the hub
  // which same-device copy reads one (only while some are remembered).
  c10::StorageImpl *dst_storage = storage_of(dst);
  const bool h2d = cross_device && src.is_cpu() && on_device(dst) &&
                   !pos.under_backward && dst_storage && dst.numel() > 0;
  // The memory timeline names the block a fresh result or an upload fills.
  if (Hub::recording() && dst_storage && on_device(dst) && (!in_place || h2d))
    facts.dst_data = dst_storage->data_ptr().get();
  if (h2d) {
    facts.staged = dst_storage;
    facts.staged_weak = weak_storage(dst);
  } else if (!cross_device && on_device(dst) && dst_storage &&
             Hub::has_staged()) {
    const c10::StorageImpl *from = storage_of(src);
    if (from && from != dst_storage) {
      facts.from = from;
      facts.into = weak_storage(dst);
      facts.into_impl = dst.unsafeGetTensorImpl();
      facts.into_what = "a " + dtype_of(dst) + " " + shape_of(dst) + " tensor";
    }
  }
  if (track) {
    if (const StatementProvider statements =
            Hub::statements.load(std::memory_order_acquire))
      facts.statement.size = std::max(
          0, statements(facts.statement.frames, Statement::kMax, true));
    e.shape = shape_of(dst);
    facts.dst = dst.storage().unsafeGetStorageImpl();
    facts.dst_weak = weak_storage(dst);
    if (storage_of(src))
      facts.src = weak_storage(src);
    facts.src_impl = src.unsafeGetTensorImpl();
  }
  // Where: only for copies that may become findings.
  Stack stack;
  if (track || facts.pageable_non_blocking || h2d) {
    if (e.shape.empty())
      e.shape = shape_of(dst);
    const LocationProvider provider =
        t_provider.load(std::memory_order_acquire);
    if (provider)
      e.where = provider();
    if (e.module.empty())
      if (const ScopeProvider scope =
              t_scope_provider.load(std::memory_order_acquire))
        e.module = scope();
    if (!e.where.known() && Hub::capture_stacks()) {
      capture(stack);
      facts.stack = &stack;
    }
  }
  Hub::get().copied(std::move(e), std::move(facts));
}

void on_set_data(const at::RecordFunction &fn, Kind kind) {
  // set_data(self, new_data); in 1.13 only its first step, the shallow-copy
  // check with the same arguments, is dispatched.
  if (kind == Kind::shallow_check && position().parent == Kind::set_data)
    return;
  const auto in = fn.inputs();
  if (in.size() < 2 || !in[0].isTensor() || !in[1].isTensor())
    return;
  const at::Tensor &self = in[0].toTensor();
  const at::Tensor &next = in[1].toTensor();
  const c10::StorageImpl *old_storage = storage_of(self);
  if (!old_storage || old_storage == storage_of(next) ||
      old_storage->nbytes() == 0)
    return;
  MoveEvent e;
  if (const char *m = position().module)
    e.module = m;
  e.old_device = self.device().str();
  e.new_device = next.device().str();
  e.dtype = dtype_of(self);
  e.shape = shape_of(self);
  Hub::get().moved(std::move(e), weak_storage(self),
                   self.unsafeGetTensorImpl());
  // Module::to swaps parameters' storages through set_data: the new
  // block is a parameter's.
  if (Hub::recording() && on_device(next) && storage_of(next))
    Hub::get().owned(next.device().str(), storage_of(next)->data_ptr().get(),
                     "parameters");
}

void on_sync(const at::RecordFunction &fn) {
  const auto in = fn.inputs();
  if (in.empty() || !in[0].isTensor() || !on_device(in[0].toTensor()))
    return;
  if (position().inside_copy)
    return;
  Hub::get().synced();
}

void read_if_tracked(const at::Tensor &t) {
  c10::StorageImpl *s = storage_of(t);
  if (s && is_tracked(s))
    Hub::get().read(s);
}

// An op that takes an unread copy (or a view of it) reads it. The check is
// the storage's deleter: no lock, no table, and only while unread copies live.
void on_inputs(const at::RecordFunction &fn, Kind kind) {
  const auto in = fn.inputs();
  // copy_ writes its first argument: that is no read.
  const size_t first = kind == Kind::copy ? 1 : 0;
  for (size_t i = first; i < in.size(); ++i) {
    const c10::IValue &v = in[i];
    if (v.isTensor()) {
      read_if_tracked(v.toTensor());
    } else if (v.isList()) {
      for (const c10::IValue &item : v.toListRef())
        if (item.isTensor())
          read_if_tracked(item.toTensor());
    }
  }
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction &fn) {
  const char *name = fn.name();
  const Kind kind = classify(fn, name);
  push(&fn, name, kind);
  if (!Hub::active())
    return nullptr;
  // Reads first: copy_'s source may be an unread copy itself. Ops inside a
  // copy (2.x's CUDA copy expands its destination) are its own steps: the
  // outer copy_ already read what it reads.
  if (Hub::has_unread() && kind != Kind::user_scope &&
      t_copies <= (copyish(kind) ? 1 : 0))
    on_inputs(fn, kind);
  switch (kind) {
  case Kind::copy:
    on_copy(fn);
    break;
  case Kind::set_data:
  case Kind::shallow_check:
    on_set_data(fn, kind);
    break;
  case Kind::sync:
    on_sync(fn);
    break;
  default:
    break;
  }
  return nullptr;
}

// The line of the allocations the op that just ended made (the allocator's
// hook cannot ask: it runs under the allocator's lock).
void locate_allocations() {
  SourceLocation where;
  if (const LocationProvider provider =
          t_provider.load(std::memory_order_acquire))
    where = provider();
  if (!where.known() && Hub::capture_stacks()) {
    Stack stack;
    capture(stack);
    where = Hub::get().symbolize(stack);
  }
  Hub::get().located(where);
}

void on_end(const at::RecordFunction &fn, at::ObserverContext *) {
  pop(&fn);
  if (t_unlocated)
    locate_allocations();
}

} // namespace

const char *allocation_owner() {
  const Frame *f = frames();
  for (int i = t_depth - 1; i >= 0; --i) {
    if (f[i].kind == Kind::backward)
      return kGradients;
    if (f[i].kind == Kind::user_scope &&
        std::strncmp(f[i].name, "Optimizer.", 10) == 0)
      return "optimizer state";
  }
  return nullptr;
}

at::CallbackHandle add_callback() {
  return at::addGlobalCallback(at::RecordFunctionCallback(&on_start, &on_end)
                                   .needsInputs(true)
                                   .scopes({at::RecordScope::FUNCTION,
                                            at::RecordScope::BACKWARD_FUNCTION,
                                            at::RecordScope::USER_SCOPE}));
}

void remove_callback(at::CallbackHandle handle) { at::removeCallback(handle); }

void push_scope(const void *id, const char *name) {
  push(id, name, Kind::user_scope);
}
void pop_scope(const void *id) { remove(id); }

} // namespace observer

ModuleScope::ModuleScope(std::string name) : name_(std::move(name)) {
  observer::push_scope(this, name_.c_str());
}
ModuleScope::~ModuleScope() { observer::pop_scope(this); }

void mark_read(const at::Tensor &tensor) {
  if (observer::Hub::has_unread())
    observer::read_if_tracked(tensor);
}

void set_location_provider(LocationProvider provider) {
  observer::t_provider.store(provider, std::memory_order_release);
}

void set_scope_provider(ScopeProvider provider) {
  observer::t_scope_provider.store(provider, std::memory_order_release);
}

} // namespace devcopy
