// CopyObserver's events. The copying ops' dispatcher kernels
// (copy_observer_dispatch.cpp) report each copy once, with its source,
// result and non_blocking; everything else comes through RecordFunction
// only where no copying op's kernel can see it:
// - autograd nodes and user scopes (RECORD_USER_SCOPE, the optimizer's step):
//   a callback on those scopes alone, so no op pays for it;
// - whether an op read a tracked copy: any op can, so a callback on every op
//   with inputs, added only while tracked copies are alive (Hub::publish);
// - the line of a large device allocation: the next op's end on that
//   thread, through a thread-local callback added for it.

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
#include "copy_observer_ops.h"

namespace devcopy {
namespace observer {
namespace {

// ---- the thread-local frame stack
// --------------------------------------------

enum class Kind : std::uint8_t {
  copy,       // a copying op's kernel is running
  sync,       // _local_scalar_dense (item), nonzero: wait for the device
  user_scope, // ModuleScope or a RecordFunction user scope
  backward,   // an autograd node
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
thread_local int t_copies = 0; // copy and sync frames open on this thread
thread_local std::uint64_t t_calls = 0;

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

// Pops `id` and anything left above it (an async scope that ended
// elsewhere); an id not on this thread's stack is ignored.
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

void debug_print(const char *op, bool track, Call call, const Position &pos) {
  static const bool debug = std::getenv("DEVCOPY_STACK_DEBUG") != nullptr;
  if (!debug) // why a copy is (not) tracked: the frames it ran in
    return;
  std::fprintf(stderr, "devcopy: %s track=%d call=%d backward=%d:", op, track,
               static_cast<int>(call), pos.under_backward);
  for (int i = 0; i < t_depth; ++i)
    std::fprintf(stderr, " %s/%d", frames()[i].name,
                 static_cast<int>(frames()[i].kind));
  std::fprintf(stderr, "\n");
}

void read_if_tracked(const at::Tensor &t) {
  c10::StorageImpl *s = storage_of(t);
  if (s && is_tracked(s))
    Hub::get().read(s);
}

// An op that takes an unread copy (or a view of it) reads it. The check is
// the storage's deleter: no lock, no table. Ops inside a copy are its steps
// (2.x's CUDA copy expands its destination): the copy read what it reads.
std::unique_ptr<at::ObserverContext>
on_read_check(const at::RecordFunction &fn) {
  ++t_calls;
  if (!Hub::has_unread() || t_copies > 0)
    return nullptr;
  const auto in = fn.inputs();
  // copy_ writes its first argument: that is no read.
  const size_t first = std::strcmp(fn.name(), "aten::copy_") == 0 ? 1 : 0;
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
  return nullptr;
}

// Autograd nodes and user scopes: frames, so a copy knows where it runs.
std::unique_ptr<at::ObserverContext>
on_scope_start(const at::RecordFunction &fn) {
  ++t_calls;
  push(&fn, fn.name(),
       fn.scope() == at::RecordScope::BACKWARD_FUNCTION ? Kind::backward
                                                        : Kind::user_scope);
  return nullptr;
}

void on_scope_end(const at::RecordFunction &fn, at::ObserverContext *) {
  ++t_calls;
  pop(&fn);
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

thread_local at::CallbackHandle t_locate = 0;

std::unique_ptr<at::ObserverContext> on_nothing(const at::RecordFunction &) {
  return nullptr;
}

void on_locate_end(const at::RecordFunction &, at::ObserverContext *) {
  ++t_calls;
  if (t_unlocated)
    locate_allocations();
  if (t_locate) { // this thread's callback: its job is done
    at::removeCallback(t_locate);
    t_locate = 0;
  }
}

at::CallbackHandle g_scopes = 0; // guarded by the hub's lock

} // namespace

Position position() {
  Position p;
  const Frame *f = frames();
  for (int i = 0; i < t_depth; ++i) {
    switch (f[i].kind) {
    case Kind::copy:
    case Kind::sync:
      p.inside_copy = true;
      break;
    case Kind::user_scope:
      p.module = f[i].name;
      break;
    case Kind::backward:
      p.under_backward = true;
      break;
    }
  }
  return p;
}

OpenCopy::OpenCopy(bool sync) {
  push(this, sync ? "sync" : "copy", sync ? Kind::sync : Kind::copy);
}
OpenCopy::~OpenCopy() { pop(this); }

std::uint64_t calls_on_this_thread() { return t_calls; }
void count_call() { ++t_calls; }

void copied(Call call, const char *op, const Position &pos,
            const at::Tensor &dst, const at::Tensor &src, bool non_blocking) {
  if (!dst.defined() || !src.defined())
    return;
  const bool cross_device = src.device() != dst.device();
  // A kernel's own scratch copy (addmm broadcasting its bias) is no transfer
  // anyone asked for; a device crossing inside one still is.
  if (call == Call::nested && !cross_device)
    return;
  const bool fresh = call == Call::fresh;

  CopyEvent e;
  e.op = op;
  if (pos.module)
    e.module = pos.module;
  e.src_device = src.device().str();
  e.dst_device = dst.device().str();
  e.dtype = dtype_of(dst);
  e.bytes = static_cast<std::int64_t>(dst.numel()) *
            static_cast<std::int64_t>(dst.element_size());
  e.non_blocking = non_blocking;
  const at::Tensor &host = dst.is_cpu() ? dst : src;
  const bool host_pinned = cross_device ? pinned(host) : false;
  e.dst_pinned = dst.is_cpu() && host_pinned;

  CopyFacts facts;
  facts.sync = cross_device && dst.is_cpu() && on_device(src) &&
               !(e.non_blocking && host_pinned);
  facts.pageable_non_blocking = e.non_blocking && cross_device &&
                                (on_device(src) || on_device(dst)) &&
                                host.is_cpu() && !host_pinned;
  c10::StorageImpl *dst_storage = storage_of(dst);
  // Only a result the op allocated can be "discarded"; in-place copies fill
  // a buffer the caller owns, and autograd's copies belong to the engine.
  const bool track =
      fresh && !pos.under_backward && dst_storage && dst.numel() > 0;
  debug_print(op, track, call, pos);
  // transient-device-copy: remember host-to-device results, and tell the hub
  // which same-device copy reads one (only while some are remembered).
  const bool h2d = cross_device && src.is_cpu() && on_device(dst) &&
                   !pos.under_backward && dst_storage && dst.numel() > 0;
  // The memory timeline names the block a fresh result or an upload fills.
  if (Hub::recording() && dst_storage && on_device(dst) &&
      (call != Call::in_place || h2d))
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
  // A conversion may be a move (Module::to sets the tensor's data to it).
  const c10::StorageImpl *src_storage = storage_of(src);
  if (fresh && std::strcmp(op, "aten::to") == 0 && !pos.under_backward &&
      dst_storage && src_storage && src_storage != dst_storage &&
      src_storage->nbytes() > 0) {
    facts.moved = WeakTensor(src.getIntrusivePtr());
    facts.move_old = weak_storage(src);
    facts.move_new = weak_storage(dst);
    facts.move.old_device = e.src_device;
    facts.move.new_device = e.dst_device;
    facts.move.dtype = dtype_of(src);
    facts.move.shape = shape_of(src);
  }
  if (track) {
    if (const StatementProvider statements =
            Hub::statements.load(std::memory_order_acquire))
      facts.statement.size = std::max(
          0, statements(facts.statement.frames, Statement::kMax, true));
    e.shape = shape_of(dst);
    facts.dst = dst_storage;
    facts.dst_weak = weak_storage(dst);
    if (src_storage)
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

void synced(const at::Tensor &t) {
  if (t.defined() && on_device(t))
    Hub::get().synced();
}

const char *allocation_owner() {
  const Frame *f = frames();
  for (int i = t_depth - 1; i >= 0; --i) {
    if (f[i].kind == Kind::backward)
      return "gradients";
    if (f[i].kind == Kind::user_scope &&
        std::strncmp(f[i].name, "Optimizer.", 10) == 0)
      return "optimizer state";
  }
  return nullptr;
}

void await_op_end() {
  if (!t_locate)
    t_locate = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&on_nothing, &on_locate_end)
            .scopes({at::RecordScope::FUNCTION}));
}

// Callers hold the hub's lock.
void start_observing() {
  install_kernels();
  g_scopes = at::addGlobalCallback(
      at::RecordFunctionCallback(&on_scope_start, &on_scope_end)
          .scopes({at::RecordScope::BACKWARD_FUNCTION,
                   at::RecordScope::USER_SCOPE}));
}

void stop_observing() {
  at::removeCallback(g_scopes);
  g_scopes = 0;
  remove_kernels();
}

std::uint64_t add_read_callback() {
  return at::addGlobalCallback(at::RecordFunctionCallback(&on_read_check)
                                   .needsInputs(true)
                                   .scopes({at::RecordScope::FUNCTION}));
}

void remove_callback(std::uint64_t handle) { at::removeCallback(handle); }

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
