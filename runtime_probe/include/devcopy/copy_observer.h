// CopyObserver: watches every tensor copy made while it lives, on every
// thread (the autograd engine's included), and reports the waste:
//
//   devcopy::CopyObserver observer;
//   model->forward(x);
//   std::cout << observer.report();   // discarded copies, syncs, routes
//
// It sits on LibTorch's global RecordFunction callbacks. A copy is judged when
// its result is freed: the deleter of the result's DataPtr is exchanged for
// the observer's (the allocator's context kept) until an op reads it, so the
// free itself reports it, exactly, in any order, on any thread. Only a copy
// freed in the statement that made it was discarded; one that outlived it was
// stored (in a module, an optimizer's state, a container, any object) and is
// not reported. It keeps only
// weak references to tensors, so it changes no lifetime; when the last
// observer is destroyed its callback is removed, live copies get their
// allocator's deleter back, and LibTorch runs exactly as before.
//
// Each finding names the user's frame that made the copy (function, file,
// line; with debug information) and merges that site's repeats (count, bytes,
// first and last occurrence).
//
// Rules reported (pages in rules/): discarded-copy, ineffective-non-blocking,
// stale-after-move, transient-device-copy. The report also holds copies by
// route and dtype, and the number of device-to-host synchronisations.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "devcopy/report.h"

namespace at {
class Tensor;
}
namespace torch::nn {
class Module;
}

namespace devcopy {

class CopyObserver {
public:
  /// Starts observing. Observers may nest or overlap (on any threads): each
  /// reports what happened during its own lifetime.
  CopyObserver();
  ~CopyObserver();
  CopyObserver(const CopyObserver &) = delete;
  CopyObserver &operator=(const CopyObserver &) = delete;

  /// What was seen so far. Copies whose result is still alive are not
  /// findings (yet); a stale-after-move finding is reported while the old
  /// storage is still alive at the time of the call.
  Report report() const;

  /// Names the parameters and buffers of `module` ("layers.3.weight") in
  /// findings about them. Optional: without it tensors are described by
  /// dtype and shape. Keeps only weak references.
  void watch(const torch::nn::Module &module, const std::string &prefix = "");
  /// The same for tensors a front end has named itself (a Python model's,
  /// walked without building a C++ module tree).
  void watch(const std::vector<std::pair<std::string, at::Tensor>> &named);

  /// The named tensors of a model, as a front end walks it.
  using Namer =
      std::function<std::vector<std::pair<std::string, at::Tensor>>()>;
  /// Names tensors as watch() does, but only when a finding first needs a
  /// name: a copy found discarded (named when it is freed, in the statement
  /// that made it), a move (set_data), a non-blocking copy from pageable
  /// memory, a copy reading an upload. `namer` runs then, on that thread,
  /// outside the observer's lock (it may take the front end's own lock, such
  /// as Python's GIL), so the names are the model's at that moment; an
  /// observer whose copies are all used or kept never calls it. A namer that
  /// throws names nothing, and the report says why.
  void watch_lazily(Namer namer);

  struct State; // internal

private:
  std::unique_ptr<State> state_;
};

/// Attributes the copies made on this thread while it lives to `name`
/// (a module path such as "layers.3"). RecordFunction user scopes
/// (RECORD_USER_SCOPE) are used the same way. Costs a few nanoseconds when no
/// observer is active.
class ModuleScope {
public:
  explicit ModuleScope(std::string name);
  ~ModuleScope();
  ModuleScope(const ModuleScope &) = delete;
  ModuleScope &operator=(const ModuleScope &) = delete;

private:
  std::string name_;
};

/// Where the copy being made now was asked for, as a front end in another
/// language knows it (the Python file and line). Called on the copying
/// thread, only for copies that may become findings and only while an
/// observer lives; a known location it returns replaces the native stack.
using LocationProvider = SourceLocation (*)();
/// Installs `provider` for every thread (nullptr: native stacks only).
void set_location_provider(LocationProvider provider);

/// The module the copy being made now runs in, as a front end can tell from
/// its own call stack (the Python frames whose `self` is a watched module):
/// asked, like the location, only for copies that may become findings and
/// carry no ModuleScope, so no hook runs on every module call. Empty: none.
using ScopeProvider = std::string (*)();
/// Installs `provider` for every thread (nullptr: ModuleScopes only).
void set_scope_provider(ScopeProvider provider);

/// One frame of a front end's call stack (a Python frame): `frame` names the
/// call (the same value while that call runs), `line` is its line now.
struct StatementFrame {
  std::uintptr_t frame = 0;
  int line = 0;
};
/// The calling thread's frames, innermost first, into `out` (at most `max`):
/// at a copy (`at_copy`) the frames up to the user's and its caller; at a
/// free of that copy, on the same thread, the innermost ones.
/// Returns how many, or -1 when it cannot tell now. A copy is discarded only
/// when it is freed unread in the statement that made it: the innermost of
/// its frames still running then runs the same line.
using StatementProvider = int (*)(StatementFrame *out, int max, bool at_copy);
/// Installs `provider` for every thread (nullptr: native stacks decide).
void set_statement_provider(StatementProvider provider);

/// True when this build captures stacks (libbacktrace was found), so
/// findings name the function, file and line that made each copy.
bool locates_copies();

/// Declares that the result of a copy was read outside LibTorch's operators
/// (through data_ptr() or an accessor), which the observer cannot see: the
/// copy is then never reported as discarded.
void mark_read(const at::Tensor &tensor);

} // namespace devcopy
