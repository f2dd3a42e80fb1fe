// GoogleTest side of rank_spawn.h: a test runs itself as N rank processes,
// each running only that test (with DEVCOPY_TEST_RANK set) and its
// assertions. A rank that hangs is killed at the deadline and fails the test.
#pragma once

#include <gtest/gtest.h>

#include "rank_spawn.h"

namespace devcopy_test {

/// Launches `n` ranks of the current test and expects each to exit 0.
inline void
expect_ranks_pass(int n,
                  std::chrono::seconds limit = std::chrono::seconds(30)) {
  const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string filter = std::string("--gtest_filter=") +
                             info->test_suite_name() + "." + info->name();
  StoreDir dir;
  bool overran = false;
  const std::vector<int> codes =
      spawn_ranks(n, {filter}, dir.path(), limit, &overran);
  EXPECT_FALSE(overran) << "a rank was still running after " << limit.count()
                        << " s: killed";
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(codes[r], 0) << "rank " << r << " failed (its output is above)";
}

} // namespace devcopy_test
