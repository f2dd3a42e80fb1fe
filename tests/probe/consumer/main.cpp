// Uses the installed headers and both exported targets: the probe finds the
// copy, and the GoogleTest macro passes on the fixed module.
#include <devcopy/gtest.h>

TEST(Consumer, FindsCopyThroughPackage) {
  torch::nn::Module copied, tied;
  at::Tensor w = at::randn({64, 64});
  copied.register_buffer("a", w);
  copied.register_buffer("b", w.clone());
  tied.register_buffer("a", w);
  tied.register_buffer("b", w);
  EXPECT_EQ(devcopy::inspect(copied)
                .findings(std::string(devcopy::rules::kDuplicateStorage))
                .size(),
            1u);
  EXPECT_NO_DUPLICATE_STORAGE(tied);
}
