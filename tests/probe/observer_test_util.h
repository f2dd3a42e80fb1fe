// Lookups into an observer's Report shared by the CPU and CUDA observer tests.
#pragma once

#include <devcopy/report.h>
#include <devcopy/rules_catalog.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace observer_test {

/// Findings of `kind` (each may merge several occurrences at one site).
inline std::size_t count(const devcopy::Report &r, std::string_view kind) {
  return r.findings(std::string(kind)).size();
}

/// Occurrences of `kind`: the findings' counts summed.
inline std::int64_t occurrences(const devcopy::Report &r,
                                std::string_view kind) {
  std::int64_t n = 0;
  for (const auto &f : r.findings(std::string(kind)))
    n += f.count;
  return n;
}

inline std::vector<devcopy::Finding> discarded(const devcopy::Report &r) {
  return r.findings(std::string(devcopy::rules::kDiscardedCopy));
}

/// The summary row for copies from `src` to `dst` as `dtype`, or nullptr.
inline const devcopy::CopyRoute *route(const devcopy::Report &r,
                                       const std::string &src,
                                       const std::string &dst,
                                       const std::string &dtype = "float") {
  for (const auto &c : r.copies())
    if (c.src_device == src && c.dst_device == dst && c.dtype == dtype)
      return &c;
  return nullptr;
}

} // namespace observer_test
