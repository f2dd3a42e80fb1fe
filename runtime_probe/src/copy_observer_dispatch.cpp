// The copying ops' kernels: registered on the dispatcher while an observer
// lives, for these ops only, so no other op pays anything. Two dispatch keys
// that every thread's ops pass through (no thread-local set to inherit):
//
// - ADInplaceOrView: in every tensor's key set, and excluded by every
//   autograd kernel around the kernel below it. An op reaches it only when
//   called from outside any other op's kernel: the user's own to/clone/copy_
//   (on any thread, the autograd engine's included; a composite op's too,
//   such as reshape's clone, which runs no autograd kernel of its own),
//   never a kernel's scratch copy. `_to_copy` and `clone` have no kernel of
//   their own there (it falls through); `copy_` has one (it bumps the version
//   counter), which ours replaces while it is registered, doing the same.
// - BackendSelect: in every thread's default include set, below autograd:
//   every copy_ reaches it, a kernel's own included, and the syncs
//   (_local_scalar_dense, nonzero) wherever they run. A copy_ seen there
//   outside the copies above is a kernel's: counted when it crosses
//   devices (an index on the host sent to the device), like the rest never
//   judged.
//
// Each kernel pushes a frame around its redispatch, so the ops a copy runs
// (`_to_copy` -> `empty_strided` + `copy_`) are its steps: each byte counted
// once. In inference mode nothing excludes ADInplaceOrView inside kernels,
// so a copy seen there may be a kernel's: it is counted, never judged.
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/library.h>
#include <torch/version.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "copy_observer_hub.h"
#include "copy_observer_ops.h"

namespace devcopy::observer {
namespace {

using torch::jit::Stack;

bool observing() { return Hub::active() && !position().inside_copy; }

void entered(const c10::OperatorHandle &op) {
  count_call();
  static const bool debug = std::getenv("DEVCOPY_STACK_DEBUG") != nullptr;
  if (debug)
    std::fprintf(stderr, "devcopy: kernel of %s\n",
                 op.operator_name().name.c_str());
}

bool flag(const c10::IValue &v) { return v.isBool() && v.toBool(); }

// The user's `to` reaches `_to_copy` (`to` itself is composite: it returns
// self or calls `_to_copy`), so findings name the call the user wrote.
enum Op { to_copy, clone };
constexpr const char *kNames[] = {"aten::to", "aten::clone"};

// _to_copy(self, ..., non_blocking, ...), clone(self, ...): a fresh result.
template <Op which>
void fresh_kernel(const c10::OperatorHandle &op, c10::DispatchKeySet ks,
                  Stack *stack) {
  entered(op);
  const c10::DispatchKeySet below = ks & c10::after_ADInplaceOrView_keyset;
  if (!observing()) {
    op.redispatchBoxed(below, stack);
    return;
  }
  const auto &schema = op.schema();
  const size_t n = schema.arguments().size();
  const c10::IValue self = torch::jit::peek(*stack, 0, n);
  bool non_blocking = false;
  if (const auto i = schema.argumentIndexWithName("non_blocking"))
    non_blocking = flag(torch::jit::peek(*stack, *i, n));
  const Position where = position();
  {
    OpenCopy open;
    op.redispatchBoxed(below, stack);
  }
  if (!self.isTensor() || stack->empty() || !stack->back().isTensor())
    return;
  copied(c10::InferenceMode::is_enabled() ? Call::nested : Call::fresh,
         kNames[which], where, stack->back().toTensor(), self.toTensor(),
         non_blocking);
}

// copy_(self, src, non_blocking) called by the user. Replaces LibTorch's
// own kernel for this key while registered, so it does what that one does:
// redispatch below the key, then bump self's version counter.
void inplace_kernel(const c10::OperatorHandle &op, c10::DispatchKeySet ks,
                    Stack *stack) {
  entered(op);
  const c10::IValue self = torch::jit::peek(*stack, 0, 3);
  const c10::IValue src = torch::jit::peek(*stack, 1, 3);
  const bool non_blocking = flag(torch::jit::peek(*stack, 2, 3));
  const bool record = observing();
  const Position where = position();
  {
    OpenCopy open;
    at::AutoDispatchBelowADInplaceOrView guard;
    op.redispatchBoxed(ks & c10::after_ADInplaceOrView_keyset, stack);
  }
  torch::autograd::impl::bump_version(self.toTensor());
  if (record && src.isTensor())
    copied(c10::InferenceMode::is_enabled() ? Call::nested : Call::in_place,
           "aten::copy_", where, self.toTensor(), src.toTensor(), non_blocking);
}

const c10::DispatchKeySet kBelowBackendSelect(c10::DispatchKeySet::FULL_AFTER,
                                              c10::DispatchKey::BackendSelect);

// copy_ inside another op's kernel (or of inference tensors).
void nested_kernel(const c10::OperatorHandle &op, c10::DispatchKeySet ks,
                   Stack *stack) {
  entered(op);
  if (!observing()) {
    op.redispatchBoxed(ks & kBelowBackendSelect, stack);
    return;
  }
  const c10::IValue self = torch::jit::peek(*stack, 0, 3);
  const c10::IValue src = torch::jit::peek(*stack, 1, 3);
  const bool non_blocking = flag(torch::jit::peek(*stack, 2, 3));
  const Position where = position();
  {
    OpenCopy open;
    op.redispatchBoxed(ks & kBelowBackendSelect, stack);
  }
  if (self.isTensor() && src.isTensor())
    copied(Call::nested, "aten::copy_", where, self.toTensor(), src.toTensor(),
           non_blocking);
}

// _local_scalar_dense(self), nonzero(self): the host waits for the device.
void sync_kernel(const c10::OperatorHandle &op, c10::DispatchKeySet ks,
                 Stack *stack) {
  entered(op);
  if (observing()) {
    const c10::IValue &self =
        torch::jit::peek(*stack, 0, op.schema().arguments().size());
    if (self.isTensor())
      synced(self.toTensor());
  }
  OpenCopy open(/*sync=*/true);
  op.redispatchBoxed(ks & kBelowBackendSelect, stack);
}

// Replacing copy_'s own ADInplaceOrView kernel is deliberate: the
// dispatcher's warning about it would only alarm the user. (2.x turned
// c10::Warning into the warning's class and moved its namespace.)
struct Quiet : c10::WarningHandler {
#if TORCH_VERSION_MAJOR >= 2
  void process(const c10::Warning &) override {}
#else
  void process(const c10::SourceLocation &, const std::string &,
               const bool) override {}
#endif
};
#if TORCH_VERSION_MAJOR >= 2
using WarningHandlerGuard = c10::WarningUtils::WarningHandlerGuard;
#else
using WarningHandlerGuard = c10::Warning::WarningHandlerGuard;
#endif

struct Kernels {
  torch::Library top{torch::Library::IMPL, "aten",
                     c10::DispatchKey::ADInplaceOrView, __FILE__, __LINE__};
  torch::Library below{torch::Library::IMPL, "aten",
                       c10::DispatchKey::BackendSelect, __FILE__, __LINE__};
};
std::unique_ptr<Kernels> g_kernels; // guarded by the hub's lock

// A key where LibTorch has a kernel of its own for `name` is left alone
// (BackendSelect has them for factory functions only).
bool free_at(const char *name, c10::DispatchKey key) {
  const auto op = c10::Dispatcher::singleton().findSchema({name, ""});
  if (op && !op->hasKernelForDispatchKey(key))
    return true;
  if (std::getenv("DEVCOPY_STACK_DEBUG"))
    std::fprintf(stderr, "devcopy: %s has its own %s kernel: not observed\n",
                 name, c10::toString(key));
  return false;
}

} // namespace

void install_kernels() {
  if (g_kernels)
    return;
  Quiet quiet;
  WarningHandlerGuard guard(&quiet);
  auto k = std::make_unique<Kernels>();
  const auto top = c10::DispatchKey::ADInplaceOrView;
  const auto below = c10::DispatchKey::BackendSelect;
  if (free_at("aten::_to_copy", top))
    k->top.impl(
        "_to_copy",
        torch::CppFunction::makeFromBoxedFunction<&fresh_kernel<to_copy>>());
  if (free_at("aten::clone", top))
    k->top.impl(
        "clone",
        torch::CppFunction::makeFromBoxedFunction<&fresh_kernel<clone>>());
  k->top.impl("copy_",
              torch::CppFunction::makeFromBoxedFunction<&inplace_kernel>());
  if (free_at("aten::copy_", below))
    k->below.impl("copy_",
                  torch::CppFunction::makeFromBoxedFunction<&nested_kernel>());
  for (const char *sync : {"_local_scalar_dense", "nonzero"})
    if (free_at((std::string("aten::") + sync).c_str(), below))
      k->below.impl(sync,
                    torch::CppFunction::makeFromBoxedFunction<&sync_kernel>());
  g_kernels = std::move(k);
}

// LibTorch's own kernels (copy_'s) are back once ours are deregistered.
void remove_kernels() { g_kernels.reset(); }

} // namespace devcopy::observer
