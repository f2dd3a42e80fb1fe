// Internal: inspect() in two steps, so inspect_distributed() can fingerprint
// every storage once and reuse the prints for the local findings.
#pragma once

#include <memory>
#include <vector>

#include "backend.h"

#include "collect.h"

namespace devcopy::detail {

/// Fingerprints of `st`, index for index. With `all`, every non-empty
/// storage; otherwise only those a duplicate could involve (the rest keep
/// known = false). Host storages are hashed in the constructor; CUDA ones
/// run on their devices until wait(), so the host can read the allocator
/// meanwhile.
class Fingerprints {
public:
  Fingerprints(const std::vector<Storage> &st, bool all);
  /// Device blocks the prints in flight on CUDA device `slot` hold.
  std::vector<std::uint64_t> scratch(int slot) const;
  /// The prints, once every device is done.
  const std::vector<Print> &wait();

private:
  struct Pending {
    int slot;
    std::vector<std::size_t> storages;
    std::unique_ptr<CudaPrints> prints;
  };
  std::vector<Print> prints_;
  std::vector<Pending> pending_;
};

/// The single-process report (duplicates, shared storage, memory, skipped)
/// over storages already collected and being fingerprinted; `c` keeps its
/// storages (its skipped entries move into the report).
Report inspect_collected(Collected &c, Fingerprints &prints,
                         const InspectOptions &options);

} // namespace devcopy::detail
