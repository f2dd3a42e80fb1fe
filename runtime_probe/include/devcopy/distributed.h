// inspect_distributed(): one report over all the ranks of a c10d process
// group. Each rank fingerprints its own storages; the fingerprints and memory
// figures (18 bytes per storage, never the tensors' bytes) travel through
// the group in one all-gather of a fixed-size slot per rank (a second one
// only for a record longer than the slot, past about 3,500 storages), each
// bounded by a timeout. Every rank returns the same cross-rank findings:
//
//   misplaced-rank-memory     several ranks hold memory on one GPU
//   replicated-across-ranks   gradients or optimizer state identical on
//                             every rank (what sharding would save)
//
// plus its own single-process findings (as inspect()), the bytes replicated
// on every rank by category (Report::replicated(); parameters and buffers are
// information), and the per-rank memory table (Report::ranks(), rank_skew()).
//
//   devcopy::Report r = devcopy::inspect_distributed(*model, *process_group,
//                                                     devcopy::InspectOptions().root("opt",
//                                                     opt));
//
// Every rank of the group must call it (it is a collective). Reads only.
#pragma once

#if __has_include(<torch/csrc/distributed/c10d/ProcessGroup.hpp>)
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/version.h>

#include <chrono>
#include <stdexcept>
#include <string>

#include "devcopy/probe.h"

#define DEVCOPY_HAS_DISTRIBUTED 1

namespace devcopy {

struct DistributedOptions {
  DistributedOptions() = default;
  // Implicit, so an InspectOptions (roots, thresholds) can be passed as is.
  DistributedOptions(InspectOptions o) : inspect(std::move(o)) {} // NOLINT

  InspectOptions inspect;
  /// Bound on each collective: a rank that died, stalls or never calls
  /// inspect_distributed() makes the others throw DistributedError after
  /// this long instead of hanging.
  std::chrono::milliseconds timeout{std::chrono::seconds(120)};

  DistributedOptions &with_timeout(std::chrono::milliseconds t) {
    timeout = t;
    return *this;
  }
};

/// A collective failed or timed out; the message names the rank, the step and
/// the cause. The process group should not be used for more collectives.
class DistributedError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

Report inspect_distributed(const torch::nn::Module &module,
                           c10d::ProcessGroup &group,
                           const DistributedOptions &options = {});
#if TORCH_VERSION_MAJOR >= 2
/// LibTorch 2.x: a backend used on its own (a c10d::ProcessGroupGloo built
/// in C++ is a Backend, not a ProcessGroup).
Report inspect_distributed(const torch::nn::Module &module,
                           c10d::Backend &group,
                           const DistributedOptions &options = {});
#endif

template <class T, class G>
Report inspect_distributed(const std::shared_ptr<T> &module, G &group,
                           const DistributedOptions &options = {}) {
  return inspect_distributed(static_cast<const torch::nn::Module &>(*module),
                             group, options);
}
template <class T, class G>
Report inspect_distributed(const torch::nn::ModuleHolder<T> &module, G &group,
                           const DistributedOptions &options = {}) {
  return inspect_distributed(static_cast<const torch::nn::Module &>(*module),
                             group, options);
}

} // namespace devcopy

#endif
