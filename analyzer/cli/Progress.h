// One line on stderr per finished translation unit, as run-clang-tidy prints
// them, so a CI log shows a long run moving even where stderr is no terminal:
//   [3/40] src/train.cpp 12.1 s, 2 findings
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "Finding.h"

namespace devcopy::cli {

class Progress {
public:
  /// `total` units; paths are shown relative to `cwd`.
  Progress(std::size_t total, std::string cwd);
  /// The line of one unit: its findings (compile errors counted apart), or
  /// that its analysis crashed. Safe to call from any worker.
  void finished(const std::string &file, double seconds,
                const std::vector<Finding> &findings, bool crashed);

  /// The line's text, without the count ("src/a.cpp 1.2 s, 1 finding").
  static std::string describe(const std::string &shown, double seconds,
                              const std::vector<Finding> &findings,
                              bool crashed);

private:
  std::mutex mu_;
  std::size_t done_ = 0, total_;
  std::string cwd_;
};

} // namespace devcopy::cli
