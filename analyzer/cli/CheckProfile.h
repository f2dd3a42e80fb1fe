// --enable-check-profile: clang-tidy's per-check timers, summed over the
// units. Each unit's ClangTidyContext stores its profile (clang-tidy's JSON)
// in a folder of its own below a temporary one; print() reads them all, so
// parallel units never interleave their tables on stderr.
#pragma once

#include <cstddef>
#include <string>

#include "llvm/Support/raw_ostream.h"

namespace devcopy::cli {

class CheckProfile {
public:
  explicit CheckProfile(bool enabled);
  ~CheckProfile(); // removes the temporary folder
  CheckProfile(const CheckProfile &) = delete;
  CheckProfile &operator=(const CheckProfile &) = delete;

  /// Where unit `index` stores its profile; "" when profiling is off.
  std::string folderFor(std::size_t index) const;
  /// One line per check, the costliest first: wall, user and system seconds.
  void print(llvm::raw_ostream &os) const;

private:
  std::string root_;
};

} // namespace devcopy::cli
