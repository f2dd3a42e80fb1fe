// Internal: inspect() in two steps, so inspect_distributed() can fingerprint
// every storage once and reuse the prints for the local findings.
#pragma once

#include <vector>

#include "collect.h"

namespace devcopy::detail {

/// Fingerprints of `st`, index for index. With `all`, every non-empty
/// storage; otherwise only those a duplicate could involve (the rest keep
/// known = false).
std::vector<Print> fingerprints(const std::vector<Storage> &st, bool all);

/// The single-process report (duplicates, shared storage, memory, skipped)
/// over storages already collected and fingerprinted.
Report inspect_collected(Collected c, const std::vector<Print> &prints,
                         const InspectOptions &options);

} // namespace devcopy::detail
