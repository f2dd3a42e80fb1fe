// CopyObserver on a CUDA device: pageable against pinned host memory,
// non_blocking copies, device-to-host syncs, the seed's offload forward pass.
// Built only when LibTorch has CUDA (ctest probe.observer_cuda, label cuda).
#include <c10/cuda/CUDAStream.h>
#include <devcopy/copy_observer.h>
#include <devcopy/rules_catalog.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "observer_test_util.h"

#include <atomic>
#include <thread>

namespace {

using devcopy::CopyObserver;
using devcopy::Report;
namespace rules = devcopy::rules;

using observer_test::count;
using observer_test::route;

class ObserverCuda : public ::testing::Test {
protected:
  void SetUp() override {
    if (!torch::cuda::is_available())
      GTEST_SKIP() << "no CUDA device";
  }
  torch::Device gpu{torch::kCUDA, 0};
};

TEST_F(ObserverCuda, NonBlockingFromPageableHostIsIneffective) {
  auto pageable = torch::randn({1024});
  auto pinned = torch::randn({1024}).pin_memory();
  CopyObserver observer;
  auto a = pageable.to(gpu, /*non_blocking=*/true);
  auto b = pinned.to(gpu, /*non_blocking=*/true);
  auto c = pageable.to(gpu); // blocking, and says so: fine
  (a + b + c).sum().item<float>();
  const Report r = observer.report();
  const auto found = r.findings(std::string(rules::kIneffectiveNonBlocking));
  ASSERT_EQ(found.size(), 1u) << r;
  EXPECT_EQ(found[0].bytes, 1024 * 4);
  EXPECT_NE(found[0].message.find("pageable host memory to cuda:0"),
            std::string::npos);
  EXPECT_EQ(count(r, rules::kDiscardedCopy), 0u) << r;
  ASSERT_NE(route(r, "cpu", "cuda:0"), nullptr);
  EXPECT_EQ(route(r, "cpu", "cuda:0")->count, 3);
  EXPECT_EQ(r.host_syncs(), 1); // the item()
}

TEST_F(ObserverCuda, NonBlockingIntoPageableHostIsIneffective) {
  auto d = torch::randn({256}, gpu);
  auto host = torch::empty({256});
  CopyObserver observer;
  host.copy_(d, /*non_blocking=*/true);
  host.sum();
  const Report r = observer.report();
  ASSERT_EQ(count(r, rules::kIneffectiveNonBlocking), 1u) << r;
  EXPECT_EQ(count(r, rules::kDiscardedCopy), 0u)
      << r;                     // in place: never discarded
  EXPECT_EQ(r.host_syncs(), 1); // pageable: the host waited
}

TEST_F(ObserverCuda, DiscardedNonBlockingCopyHoldsAPinnedBlock) {
  auto d = torch::randn({4096}, gpu);
  CopyObserver observer;
  d.to(torch::kCPU, /*non_blocking=*/true);
  torch::cuda::synchronize();
  const Report r = observer.report();
  EXPECT_EQ(count(r, rules::kDiscardedCopy), 1u) << r;
  const auto held = r.findings(std::string(rules::kIneffectiveNonBlocking));
  ASSERT_EQ(held.size(), 1u) << r;
  EXPECT_NE(held[0].message.find("pinned block stays cached"),
            std::string::npos);
  EXPECT_EQ(held[0].bytes, 4096 * 4);
  EXPECT_EQ(r.host_syncs(), 0); // pinned and non-blocking: no wait
}

TEST_F(ObserverCuda, UsedNonBlockingCopyToPinnedIsClean) {
  auto d = torch::randn({4096}, gpu);
  CopyObserver observer;
  auto h = d.to(torch::kCPU, /*non_blocking=*/true);
  torch::cuda::synchronize();
  h.sum();
  const Report r = observer.report();
  EXPECT_FALSE(r.has_findings()) << r;
}

TEST_F(ObserverCuda, CountsDeviceToHostSyncs) {
  auto d = torch::randn({64}, gpu);
  CopyObserver observer;
  auto h = d.to(torch::kCPU); // blocking copy: 1
  h.sum();
  d.sum().item<float>();           // item: 1
  auto nz = torch::nonzero(d > 0); // nonzero: 1
  auto g = d * 2;                  // on the device: none
  const Report r = observer.report();
  EXPECT_EQ(r.host_syncs(), 3) << r;
  ASSERT_NE(route(r, "cuda:0", "cpu"), nullptr);
  EXPECT_EQ(route(r, "cuda:0", "cpu")->count, 1);
  EXPECT_EQ(route(r, "cuda:0", "cpu")->bytes, 64 * 4);
}

TEST_F(ObserverCuda, AutogradDeviceThreadIsObserved) {
  auto w = torch::randn({256},
                        torch::TensorOptions().device(gpu).requires_grad(true));
  CopyObserver observer;
  // CUDA backward runs on the autograd engine's device thread: its copy of
  // the gradient back to float is counted there, and is no finding.
  w.to(torch::kDouble).sum().backward();
  const Report r = observer.report();
  EXPECT_FALSE(r.has_findings()) << r;
  ASSERT_NE(route(r, "cuda:0", "cuda:0", "double"), nullptr) << r;
  ASSERT_NE(route(r, "cuda:0", "cuda:0", "float"), nullptr) << r;
  EXPECT_EQ(route(r, "cuda:0", "cuda:0", "float")->count, 1);
}

TEST_F(ObserverCuda, DiscardInHookOnTheDeviceThreadIsReportedWithItsLine) {
  auto w = torch::randn({256},
                        torch::TensorOptions().device(gpu).requires_grad(true));
  auto h = w * 2;
  std::atomic<int> line{0};
  std::thread::id hook_thread;
  h.register_hook([&](torch::Tensor g) {
    hook_thread = std::this_thread::get_id();
    line = __LINE__ + 1; // the copy below
    g.to(torch::kCPU);   // dropped, on the engine's device thread
  });
  CopyObserver observer;
  h.sum().backward();
  torch::cuda::synchronize();
  EXPECT_NE(hook_thread,
            std::this_thread::get_id()); // it ran on the engine's thread
  const Report r = observer.report();
  const auto found = observer_test::discarded(r);
  ASSERT_EQ(found.size(), 1u) << r;
  EXPECT_EQ(found[0].devices, (std::vector<std::string>{"cuda:0", "cpu"}));
  EXPECT_EQ(found[0].location.line, line.load()) << r;
  EXPECT_NE(found[0].location.file.find("observer_cuda_test.cpp"),
            std::string::npos)
      << r;
}

TEST_F(ObserverCuda, RecordStreamOnATrackedCopyStillWorks) {
  // record_stream checks the allocator's deleter: the read restores it first.
  auto h = torch::randn({1024}).pin_memory();
  CopyObserver observer;
  auto d = h.to(gpu, /*non_blocking=*/true);
  auto side = c10::cuda::getStreamFromPool();
  d.record_stream(side);
  const auto allocators =
      torch::empty({1}, gpu).storage().data_ptr().get_deleter();
  EXPECT_EQ(d.storage().data_ptr().get_deleter(), allocators);
  d = torch::Tensor();
  torch::cuda::synchronize();
  EXPECT_EQ(count(observer.report(), rules::kDiscardedCopy), 0u)
      << observer.report();
}

// The seed's forward pass on the GPU: each layer's input "offloaded" with a
// dropped non-blocking to(kCPU).
torch::Tensor offload_forward(torch::nn::ModuleList &layers, torch::Tensor x,
                              bool offload) {
  torch::Tensor prev = x;
  for (std::size_t i = 0; i < layers->size(); ++i) {
    devcopy::ModuleScope scope("layers." + std::to_string(i));
    x = torch::relu(layers[i]->as<torch::nn::Linear>()->forward(prev));
    if (offload)
      prev.to(torch::kCPU, /*non_blocking=*/true);
    prev = x;
  }
  return x;
}

TEST_F(ObserverCuda, OffloadForwardReportsOneDiscardedCopyPerLayer) {
  constexpr int kLayers = 40, kWidth = 64, kBatch = 8;
  torch::nn::ModuleList layers;
  for (int i = 0; i < kLayers; ++i)
    layers->push_back(torch::nn::Linear(kWidth, kWidth));
  layers->to(gpu);
  auto x = torch::randn({kBatch, kWidth}, gpu);
  {
    CopyObserver observer;
    auto out = offload_forward(layers, x, /*offload=*/true);
    torch::cuda::synchronize();
    const Report r = observer.report();
    const auto found = r.findings(std::string(rules::kDiscardedCopy));
    ASSERT_EQ(found.size(), static_cast<std::size_t>(kLayers)) << r;
    EXPECT_EQ(found[0].devices, (std::vector<std::string>{"cuda:0", "cpu"}));
    EXPECT_EQ(found[0].bytes, kBatch * kWidth * 4);
    EXPECT_EQ(found[7].module, "layers.7");
    EXPECT_EQ(count(r, rules::kIneffectiveNonBlocking),
              static_cast<std::size_t>(kLayers));
    EXPECT_EQ(r.host_syncs(), 0);
  }
  {
    CopyObserver observer;
    auto out = offload_forward(layers, x, /*offload=*/false);
    out.sum().backward();
    EXPECT_FALSE(observer.report().has_findings()) << observer.report();
  }
}

TEST_F(ObserverCuda, StaleAfterMoveToTheDevice) {
  torch::nn::Linear lin(64, 64);
  CopyObserver observer;
  observer.watch(*lin);
  auto alias = lin->bias.detach();
  lin->to(gpu);
  const Report r = observer.report();
  const auto found = r.findings(std::string(rules::kStaleAfterMove));
  ASSERT_EQ(found.size(), 1u) << r;
  EXPECT_EQ(found[0].tensors, std::vector<std::string>{"bias"});
  EXPECT_EQ(found[0].devices, std::vector<std::string>{"cpu"});
  EXPECT_EQ(found[0].bytes, 64 * 4);
  EXPECT_EQ(route(r, "cpu", "cuda:0")->count, 2);
}

} // namespace
