// devcopy's runtime probe: inspect a live module for duplicated storages,
// device memory nothing reachable holds, and cached allocator memory.
//
//   devcopy::Report r = devcopy::inspect(*model);
//   std::cout << r;                   // sanitizer-style text
//   devcopy::check(*model);           // honours DEVCOPY_PROBE=off|warn|fail
//
// The probe reads only: it never changes the module, keeps no tensor alive
// past the call, and uses a small bounded amount of device memory.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "devcopy/mode.h"
#include "devcopy/report.h"

namespace torch::optim {
class Optimizer;
}

namespace devcopy {

struct InspectOptions {
  // Roots: things that hold memory on purpose. Their tensors count as
  // reachable (so they are not unreachable-allocation), named
  // "<root name>.<tensor name>". Tensors and modules given here also take
  // part in duplicate detection; optimizer state and gradients do not.
  // Roots are borrowed: they must outlive the inspect() call only.
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  std::vector<std::pair<std::string, const torch::nn::Module *>> modules;
  std::vector<std::pair<std::string, const torch::optim::Optimizer *>>
      optimizers;
  /// Tensors held on purpose and counted as reachable only, never compared
  /// (state the probe cannot read itself, such as a Python optimizer's).
  std::vector<std::pair<std::string, at::Tensor>> held;
  /// Optimizer state the probe cannot read itself (a Python optimizer's):
  /// as `held`, and counted as optimizer state by inspect_distributed().
  std::vector<std::pair<std::string, at::Tensor>> state;
  /// The inspected module given as its tensors by a caller that holds no
  /// torch::nn::Module (a Python model), named and collected as the walk of
  /// a module tree would (parameters and buffers compared, gradients
  /// reachable), each in its own category for inspect_distributed().
  struct ModuleTensors {
    std::vector<std::pair<std::string, at::Tensor>> parameters, buffers,
        gradients;
  };
  ModuleTensors module_tensors;

  InspectOptions &root(std::string name, const at::Tensor &t) {
    tensors.emplace_back(std::move(name), t);
    return *this;
  }
  InspectOptions &root(std::string name, const torch::nn::Module &m) {
    modules.emplace_back(std::move(name), &m);
    return *this;
  }
  InspectOptions &root(std::string name, const torch::optim::Optimizer &o) {
    optimizers.emplace_back(std::move(name), &o);
    return *this;
  }
  InspectOptions &hold(std::string name, const at::Tensor &t) {
    held.emplace_back(std::move(name), t);
    return *this;
  }
  InspectOptions &hold_state(std::string name, const at::Tensor &t) {
    state.emplace_back(std::move(name), t);
    return *this;
  }

  /// Count parameters' gradients as reachable.
  bool gradients = true;
  /// Ask the CUDA caching allocator (allocated, reserved, blocks).
  bool allocator = true;
  /// unreachable-allocation when more than this many allocated bytes on a
  /// device are not reachable.
  std::int64_t unreachable_threshold = std::int64_t{64} << 20;
  /// cached-memory when reserved-but-unused bytes exceed both this...
  std::int64_t cached_threshold = std::int64_t{256} << 20;
  /// ...and this fraction of the allocated bytes.
  double cached_ratio = 0.5;
  /// How many unreachable blocks to describe one by one.
  int block_details = 8;
};

/// Inspects `module` and everything it owns (recursively).
Report inspect(const torch::nn::Module &module,
               const InspectOptions &options = {});

template <class T>
Report inspect(const std::shared_ptr<T> &module,
               const InspectOptions &options = {}) {
  return inspect(static_cast<const torch::nn::Module &>(*module), options);
}
template <class T>
Report inspect(const torch::nn::ModuleHolder<T> &module,
               const InspectOptions &options = {}) {
  return inspect(static_cast<const torch::nn::Module &>(*module), options);
}

/// inspect() under the mode DEVCOPY_PROBE names (warn when unset): off skips
/// the inspection and returns an empty report, warn prints findings to
/// stderr, fail throws devcopy::ProbeFailure carrying the report.
Report check(const torch::nn::Module &module,
             const InspectOptions &options = {});

template <class T>
Report check(const std::shared_ptr<T> &module,
             const InspectOptions &options = {}) {
  return check(static_cast<const torch::nn::Module &>(*module), options);
}
template <class T>
Report check(const torch::nn::ModuleHolder<T> &module,
             const InspectOptions &options = {}) {
  return check(static_cast<const torch::nn::Module &>(*module), options);
}

/// Bytes a loader can still place on `device`: for CUDA, the driver's free
/// memory plus the caching allocator's reserved-but-unused bytes (the driver
/// alone counts cached blocks as used and sends loaders into needless CPU
/// offload); for the CPU, the kernel's MemAvailable. -1 when unknown.
std::int64_t available_memory(const c10::Device &device);

} // namespace devcopy
