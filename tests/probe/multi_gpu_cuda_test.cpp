// inspect() in one process that sees several GPUs: copies between two GPUs
// (fingerprinted on each, confirmed through a bounded staging buffer, peer to
// peer or through the host) and a layer left behind on one GPU after the
// model moved to another. Needs 2 CUDA devices; skips, saying so, on fewer.
#include <c10/cuda/CUDACachingAllocator.h>
#include <devcopy/gtest.h>
#include <torch/torch.h>

namespace {

using devcopy::Report;
const std::string kDup(devcopy::rules::kDuplicateStorage);
const std::string kUnreachable(devcopy::rules::kUnreachableAllocation);
constexpr std::int64_t MiB = 1 << 20;

class TwoGpus : public ::testing::Test {
protected:
  void SetUp() override {
    const auto n = torch::cuda::device_count();
    if (n < 2)
      GTEST_SKIP() << "needs 2 CUDA devices, this machine has " << n;
  }
};

TEST_F(TwoGpus, TheSameWeightOnCuda0AndCuda1) {
  torch::nn::Module m;
  at::Tensor w = m.register_parameter(
      "w", at::randn({2048, 1024}, at::Device(at::kCUDA, 0)));
  m.register_buffer("w_on_1", w.detach().to(at::Device(at::kCUDA, 1)));
  at::Tensor near = w.detach().to(at::Device(at::kCUDA, 1));
  near[-1][-1] =
      near[-1][-1].item<float>() + 1; // differs in the last element only
  m.register_buffer("near_on_1", near);
  Report r = devcopy::inspect(m);
  ASSERT_EQ(r.findings(kDup).size(), 1u) << r;
  const devcopy::Finding f = r.findings(kDup)[0];
  EXPECT_EQ(f.bytes, 8 * MiB) << f;
  EXPECT_EQ(f.devices, (std::vector<std::string>{"cuda:0", "cuda:1"})) << f;
  EXPECT_EQ(f.tensors, (std::vector<std::string>{"w", "w_on_1"})) << f;
  std::vector<std::string> devices;
  for (const auto &d : r.devices())
    devices.push_back(d.device);
  EXPECT_EQ(devices, (std::vector<std::string>{"cuda:0", "cuda:1"})) << r;
}

TEST_F(TwoGpus, ALayerLeftBehindOnCuda0) {
  auto net = torch::nn::Sequential(torch::nn::Linear(2048, 2048),
                                   torch::nn::Linear(2048, 2048));
  net->to(at::Device(at::kCUDA, 0));
  std::vector<at::Tensor>
      stale; // e.g. a list of the weights taken before the move
  for (const auto &p : net->parameters())
    stale.push_back(p.detach());
  net->to(at::Device(at::kCUDA, 1));
  devcopy::InspectOptions o;
  o.unreachable_threshold = MiB;
  Report r = devcopy::inspect(*net, o);
  ASSERT_EQ(r.findings(kUnreachable).size(), 1u) << r;
  const devcopy::Finding f = r.findings(kUnreachable)[0];
  EXPECT_EQ(f.devices, std::vector<std::string>{"cuda:0"}) << f;
  EXPECT_GE(f.bytes, 32 * MiB) << f;
  bool saw1 = false;
  for (const auto &d : r.devices())
    if (d.device == "cuda:1") {
      saw1 = true;
      EXPECT_EQ(d.reachable_bytes, 2 * (2048 * 2048 + 2048) * 4) << r;
    } else if (d.device == "cuda:0") {
      EXPECT_EQ(d.reachable_bytes, 0) << r;
    }
  EXPECT_TRUE(saw1) << r;
  stale.clear();
  EXPECT_TRUE(devcopy::inspect(*net, o).findings(kUnreachable).empty());
}

// Different amounts on each GPU, so a report that mixed up device indices
// fails: each device's line must carry its own allocator's figures.
TEST_F(TwoGpus, PerDeviceMemoryMatchesTheAllocator) {
  torch::nn::Module m;
  m.register_parameter(
      "a", at::randn({1024, 1024}, at::Device(at::kCUDA, 0))); // 4 MiB
  m.register_parameter(
      "b", at::randn({3 * 1024, 1024}, at::Device(at::kCUDA, 1))); // 12 MiB
  torch::cuda::synchronize();
  Report r = devcopy::inspect(m);
  ASSERT_EQ(r.devices().size(), 2u) << r;
  for (const auto &d : r.devices()) {
    const int index = std::stoi(d.device.substr(5));
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(
        static_cast<c10::DeviceIndex>(index));
    // Index 0 is StatType::AGGREGATE.
    EXPECT_EQ(d.allocated_bytes, stats.allocated_bytes[0].current)
        << d.device << "\n"
        << r;
    EXPECT_EQ(d.reserved_bytes, stats.reserved_bytes[0].current)
        << d.device << "\n"
        << r;
    EXPECT_EQ(d.reserved_unused_bytes, d.reserved_bytes - d.allocated_bytes)
        << r;
    EXPECT_EQ(d.reachable_bytes, (index == 0 ? 4 : 12) * MiB)
        << d.device << "\n"
        << r;
  }
}

} // namespace
