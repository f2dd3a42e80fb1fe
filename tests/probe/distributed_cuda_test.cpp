// inspect_distributed() with CUDA tensors: two ranks (Gloo, 127.0.0.1) on
// the one GPU of the test machine. Built only when LibTorch has CUDA.
#include <devcopy/distributed.h>
#include <devcopy/gtest.h>
#include <torch/torch.h>

#include "rank_launcher.h"

namespace {

using devcopy::Report;
using devcopy_test::in_rank;
using namespace std::chrono_literals;
const std::string kReplicated(devcopy::rules::kReplicatedAcrossRanks);
const std::string kMisplaced(devcopy::rules::kMisplacedRankMemory);

std::shared_ptr<torch::nn::Sequential> model() {
  torch::manual_seed(0);
  return std::make_shared<torch::nn::Sequential>(torch::nn::Linear(1024, 1024),
                                                 torch::nn::ReLU(),
                                                 torch::nn::Linear(1024, 1024));
}
constexpr std::int64_t kParamBytes = 2 * (1024 * 1024 + 1024) * 4;

const devcopy::Replicated *category(const Report &r, const std::string &c) {
  for (const auto &x : r.replicated())
    if (x.category == c)
      return &x;
  return nullptr;
}

// The set_device bug: every rank builds its model on cuda:0.
TEST(DistributedCuda, EveryRankOnCuda0IsMisplaced) {
  if (!in_rank()) {
    if (!torch::cuda::is_available())
      GTEST_SKIP() << "no CUDA device";
    return devcopy_test::expect_ranks_pass(2, 60s);
  }
  auto pg = devcopy_test::join(30s);
  auto m = model();
  (*m)->to(torch::Device(torch::kCUDA, 0));
  Report r = devcopy::inspect_distributed(
      *m, *pg, devcopy::DistributedOptions().with_timeout(30s));
  ASSERT_EQ(r.findings(kMisplaced).size(), 1u) << r;
  const devcopy::Finding f = r.findings(kMisplaced)[0];
  EXPECT_EQ(f.devices, std::vector<std::string>{"cuda:0"}) << f;
  EXPECT_NE(f.message.find("ranks 0 and 1"), std::string::npos) << f;
  EXPECT_NE(f.message.find("(GPU-"), std::string::npos) << f;
  EXPECT_GE(f.bytes, kParamBytes) << f;
  // The CUDA fingerprints agree across processes: the replica is seen.
  ASSERT_NE(category(r, "parameters"), nullptr) << r;
  EXPECT_EQ(category(r, "parameters")->bytes_per_rank, kParamBytes) << r;
  ASSERT_EQ(r.ranks().size(), 2u) << r;
  for (const auto &m : r.ranks()) {
    EXPECT_EQ(m.device, "cuda:0");
    EXPECT_EQ(m.reachable_bytes, kParamBytes);
    EXPECT_GE(m.allocated_bytes, kParamBytes);
  }
}

// Rank 0 on the GPU, rank 1 on the CPU: nothing shares a GPU, and the same
// weights on a GPU and on a host still count as replicated.
TEST(DistributedCuda, OneRankPerDeviceIsNotMisplaced) {
  if (!in_rank()) {
    if (!torch::cuda::is_available())
      GTEST_SKIP() << "no CUDA device";
    return devcopy_test::expect_ranks_pass(2, 60s);
  }
  auto pg = devcopy_test::join(30s);
  auto m = model();
  if (devcopy_test::rank() == 0)
    (*m)->to(torch::Device(torch::kCUDA, 0));
  Report r = devcopy::inspect_distributed(
      *m, *pg, devcopy::DistributedOptions().with_timeout(30s));
  EXPECT_TRUE(r.findings(kMisplaced).empty()) << r;
  ASSERT_NE(category(r, "parameters"), nullptr) << r;
  EXPECT_EQ(category(r, "parameters")->bytes_per_rank, kParamBytes) << r;
}

} // namespace
