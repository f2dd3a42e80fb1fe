// The observer's findings, merged by call site: every repeat of one finding
// at one place (same stack, module, op, route and dtype) is one Site with a
// count, so memory grows with the number of distinct sites, not with the
// number of copies (a discarding training loop of a million steps holds one
// Site per line that discards). LibTorch-free.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "copy_observer_findings.h"
#include "copy_observer_stack.h"

namespace devcopy::observer {

/// Which finding a copy gave.
enum class Verdict : std::uint8_t {
  discarded,
  pinned_block_held,
  pageable_non_blocking,
  transient,
};

struct Site {
  Verdict verdict;
  CopyEvent event; // the first occurrence
  Stack stack;
  std::int64_t count = 0;
  std::int64_t bytes = 0;
  std::uint64_t first = 0; // ordinals among the copies the observer saw
  std::uint64_t last = 0;
};

/// Stack hash -> the user's frame, symbolized once per process and shared by
/// every observer. Bounded: cleared past kMax entries.
class Symbols {
public:
  static constexpr std::size_t kMax = 1 << 14;
  SourceLocation get(const Stack &stack);

private:
  std::mutex mu_; // never held while symbolizing
  std::unordered_map<std::uint64_t, SourceLocation> cache_;
};

class Sites {
public:
  /// Distinct sites kept per observer; later new sites are merged into one
  /// per verdict, with no location.
  static constexpr std::size_t kMax = 1024;

  void add(Verdict verdict, const CopyEvent &event, const Stack *stack,
           std::uint64_t ordinal);
  std::vector<Site> snapshot() const;
  bool overflowed() const { return overflowed_; }

private:
  std::unordered_map<std::string, Site> sites_;
  bool overflowed_ = false;
};

/// One finding per user location (sites reached through different callers
/// of the same line are merged), in order of first occurrence.
std::vector<Finding> site_findings(const std::vector<Site> &sites,
                                   Symbols &symbols);

} // namespace devcopy::observer
