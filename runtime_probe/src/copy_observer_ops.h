// What the copying ops' dispatcher kernels (copy_observer_dispatch.cpp) tell
// the observer (copy_observer.cpp): a copy or a sync, with where its thread
// stands (module scope, autograd node, inside another copy).
#pragma once

#include <cstdint>

namespace at {
class Tensor;
}

namespace devcopy::observer {

/// How the dispatcher saw a copy.
enum class Call : std::uint8_t {
  fresh,    // _to_copy or clone called by the user: a result of its own
  in_place, // copy_ called by the user: into a tensor the caller owns
  nested,   // a copy inside another op's kernel (or in inference mode,
            // where the dispatcher cannot tell): counted when it crosses
            // devices, never judged as discarded
};

/// Where the calling thread stands, as its open frames say.
struct Position {
  bool inside_copy = false;     // under a copy or sync already counted
  bool under_backward = false;  // inside an autograd node's function
  const char *module = nullptr; // innermost scope name
};

/// The calling thread's position now.
Position position();

/// A copy (or sync) op running on this thread: the ops it runs are its
/// steps, never counted again. Pushed by each kernel around its redispatch.
class OpenCopy {
public:
  explicit OpenCopy(bool sync = false);
  ~OpenCopy();
  OpenCopy(const OpenCopy &) = delete;
  OpenCopy &operator=(const OpenCopy &) = delete;
};

/// One copy seen by a dispatcher kernel after it ran (dst is the result).
void copied(Call call, const char *op, const Position &where,
            const at::Tensor &dst, const at::Tensor &src, bool non_blocking);
/// A value read on the host (item, nonzero): a sync when `t` is on a device.
void synced(const at::Tensor &t);

/// The copying ops' kernels: registered while an observer lives.
void install_kernels();
void remove_kernels();

/// How many times the observer's hooks (kernels and callbacks) ran on this
/// thread: what observing costs the ops it does not need.
std::uint64_t calls_on_this_thread();
void count_call();

} // namespace devcopy::observer
