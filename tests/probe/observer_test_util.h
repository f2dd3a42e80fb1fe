// Lookups into an observer's Report shared by the CPU and CUDA observer tests.
#pragma once

#include <devcopy/report.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace observer_test {

inline std::size_t count(const devcopy::Report& r, std::string_view kind) {
  return r.findings(std::string(kind)).size();
}

/// The summary row for copies from `src` to `dst` as `dtype`, or nullptr.
inline const devcopy::CopyRoute* route(const devcopy::Report& r, const std::string& src,
                                       const std::string& dst,
                                       const std::string& dtype = "float") {
  for (const auto& c : r.copies())
    if (c.src_device == src && c.dst_device == dst && c.dtype == dtype) return &c;
  return nullptr;
}

}  // namespace observer_test
