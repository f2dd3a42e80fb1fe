// transient-device-copy on a CUDA device: a host-to-device result copied into
// another tensor on the device and freed is reported at the line that made
// it; kept buffers, moves and copies to other devices stay silent.
// Built only when LibTorch has CUDA (ctest probe.observer_transient_cuda).
#include <devcopy/copy_observer.h>
#include <devcopy/rules_catalog.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "observer_test_util.h"

namespace {

using devcopy::CopyObserver;
using devcopy::Report;
namespace rules = devcopy::rules;
using observer_test::count;

class Transient : public ::testing::Test {
protected:
  void SetUp() override {
    if (!torch::cuda::is_available())
      GTEST_SKIP() << "no CUDA device";
  }
  torch::Device gpu{torch::kCUDA, 0};
};

TEST_F(Transient, LoadedThroughTheDeviceIntoParametersIsReported) {
  torch::nn::Linear lin(256, 256);
  lin->to(gpu);
  auto host_w = torch::randn({256, 256});
  auto host_b = torch::randn({256});
  CopyObserver observer;
  observer.watch(*lin);
  // The pattern of load_state_dict(torch.load(f)) into a model already moved.
  auto load = [&](torch::Tensor &p, const torch::Tensor &host) {
    p.copy_(host.to(gpu));
  };
  {
    torch::NoGradGuard no_grad;
    load(lin->weight, host_w);
    load(lin->bias, host_b);
  }
  const Report r = observer.report();
  const auto found = r.findings(std::string(rules::kTransientDeviceCopy));
  ASSERT_EQ(found.size(), 1u) << r;
  EXPECT_EQ(found[0].count, 2);
  EXPECT_EQ(found[0].bytes, (256 * 256 + 256) * 4);
  EXPECT_EQ(found[0].devices, (std::vector<std::string>{"cpu", "cuda:0"}));
  EXPECT_NE(found[0].message.find("only copied into weight"), std::string::npos)
      << r;
  EXPECT_NE(found[0].location.file.find("observer_transient_cuda_test.cpp"),
            std::string::npos)
      << r;
  EXPECT_EQ(count(r, rules::kDiscardedCopy), 0u)
      << r; // it was read: by the copy_
}

TEST_F(Transient, SilentWhenCopiedStraightFromTheHost) {
  auto param = torch::zeros({1024}, gpu);
  auto host = torch::randn({1024});
  CopyObserver observer;
  param.copy_(host);
  EXPECT_EQ(count(observer.report(), rules::kTransientDeviceCopy), 0u)
      << observer.report();
}

TEST_F(Transient, SilentWhileTheStagingBufferLives) {
  auto param = torch::zeros({1024}, gpu);
  auto staging = torch::empty({1024}, gpu);
  CopyObserver observer;
  staging.copy_(torch::randn({1024}));
  param.copy_(staging);
  EXPECT_EQ(count(observer.report(), rules::kTransientDeviceCopy), 0u)
      << observer.report();
}

TEST_F(Transient, SilentForMovesAndUsedResults) {
  torch::nn::Linear lin(64, 64);
  auto host = torch::randn({8, 64});
  CopyObserver observer;
  lin->to(gpu);                        // storages swapped, not copied into
  auto y = lin->forward(host.to(gpu)); // read by compute, not copied
  auto back = torch::empty({8, 64});
  back.copy_(host.to(gpu)); // copied into the host: another device
  y.sum().item<float>();
  EXPECT_EQ(count(observer.report(), rules::kTransientDeviceCopy), 0u)
      << observer.report();
}

TEST_F(Transient, SilentWhenTheDestinationDiedToo) {
  CopyObserver observer;
  {
    auto dst = torch::empty({1024}, gpu);
    dst.copy_(torch::randn({1024}).to(gpu));
  }
  EXPECT_EQ(count(observer.report(), rules::kTransientDeviceCopy), 0u)
      << observer.report();
}

} // namespace
