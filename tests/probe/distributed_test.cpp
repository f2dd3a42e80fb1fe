// inspect_distributed() across processes: 2 and 4 CPU ranks through Gloo
// over 127.0.0.1, each a copy of this executable (rank_launcher.h); and the
// cross-rank rules on hand-made records for what only GPUs can show.
#include <devcopy/distributed.h>
#include <devcopy/gtest.h>
#include <torch/torch.h>

#include "rank_launcher.h"
#include "ranks.h"

namespace {

using devcopy::Report;
using devcopy_test::in_rank;
using namespace std::chrono_literals;
const std::string kReplicated(devcopy::rules::kReplicatedAcrossRanks);
const std::string kMisplaced(devcopy::rules::kMisplacedRankMemory);

struct Net : torch::nn::Module {
  Net() {
    fc1 = register_module("fc1", torch::nn::Linear(32, 64));
    bn = register_module("bn", torch::nn::BatchNorm1d(64));
    fc2 = register_module("fc2", torch::nn::Linear(64, 8));
  }
  at::Tensor forward(const at::Tensor &x) {
    return fc2(torch::relu(bn(fc1(x))));
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
};
constexpr std::int64_t kParamBytes = (32 * 64 + 64 + 64 + 64 + 64 * 8 + 8) * 4;
constexpr std::int64_t kBufferBytes =
    64 * 4 * 2 + 8; // running mean, var, batch count

const devcopy::Replicated *category(const Report &r, const std::string &c) {
  for (const auto &x : r.replicated())
    if (x.category == c)
      return &x;
  return nullptr;
}

// What a rank can check of the model after the inspection: the same storages
// holding the same values, gradients included.
struct Snapshot {
  explicit Snapshot(const torch::nn::Module &m) {
    for (const auto &p : m.parameters()) {
      ptrs.push_back(p.data_ptr());
      values.push_back(p.detach().clone());
      grads.push_back(p.grad().defined() ? p.grad().clone() : at::Tensor());
    }
  }
  void expect_same(const torch::nn::Module &m) const {
    const auto params = m.parameters();
    ASSERT_EQ(params.size(), ptrs.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      EXPECT_EQ(params[i].data_ptr(), ptrs[i]);
      EXPECT_TRUE(torch::equal(params[i], values[i]));
      if (grads[i].defined())
        EXPECT_TRUE(torch::equal(params[i].grad(), grads[i]));
    }
  }
  std::vector<void *> ptrs;
  std::vector<at::Tensor> values, grads;
};

// Data parallelism by hand: the same seed, batch and step on both ranks.
TEST(Distributed, TwoRanksDataParallelReplicateStateAndGradients) {
  if (!in_rank())
    return devcopy_test::expect_ranks_pass(2);
  at::set_num_threads(1);
  auto pg = devcopy_test::join(10s);
  torch::manual_seed(0);
  auto net = std::make_shared<Net>();
  torch::optim::Adam opt(net->parameters(), 1e-3);
  net->forward(torch::randn({16, 32})).sum().backward();
  opt.step();
  const Snapshot before(*net);

  Report r = devcopy::inspect_distributed(
      net, *pg, devcopy::InspectOptions().root("opt", opt));
  before.expect_same(*net);
  EXPECT_TRUE(r.findings(kMisplaced).empty()) << r;
  const auto found = r.findings(kReplicated);
  ASSERT_EQ(found.size(), 2u) << r;
  for (const auto &f : found) {
    const bool state = f.message.find("optimizer state") != std::string::npos;
    EXPECT_EQ(f.bytes, state ? 2 * kParamBytes : kParamBytes)
        << f; // (2 - 1) x per rank
    EXPECT_NE(f.message.find("identical on all 2 ranks"), std::string::npos)
        << f;
    EXPECT_EQ(f.tensors.size(), state ? 12u : 6u) << f;
  }
  const auto *params = category(r, "parameters");
  ASSERT_NE(params, nullptr) << r;
  EXPECT_TRUE(params->expected);
  EXPECT_EQ(params->bytes_per_rank, kParamBytes);
  EXPECT_EQ(params->ranks, 2);
  ASSERT_NE(category(r, "buffers"), nullptr) << r;
  EXPECT_EQ(category(r, "buffers")->bytes_per_rank, kBufferBytes);
  ASSERT_NE(category(r, "optimizer state"), nullptr);
  EXPECT_FALSE(category(r, "optimizer state")->expected);
  ASSERT_EQ(r.ranks().size(), 2u) << r;
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(r.ranks()[k].rank, k);
    EXPECT_EQ(r.ranks()[k].device, "cpu");
    EXPECT_EQ(r.ranks()[k].reachable_bytes,
              4 * kParamBytes + kBufferBytes); // + grads, 2 x state
  }
  EXPECT_DOUBLE_EQ(r.rank_skew(), 1.0);
  EXPECT_NE(r.to_json().find("\"rank_skew\":1.0000"), std::string::npos);
}

// Four ranks with their own weights: nothing but a shared table and a buffer
// identical on every rank is replicated; a buffer on three of the four, or
// gradients that differ on one rank, are not. Rank 3 holds an extra 1 MiB.
TEST(Distributed, FourRanksCountOnlyWhatEveryRankHolds) {
  if (!in_rank())
    return devcopy_test::expect_ranks_pass(4);
  at::set_num_threads(1);
  const int rank = devcopy_test::rank();
  auto pg = devcopy_test::join(10s);
  torch::manual_seed(100 + rank);
  auto net = std::make_shared<Net>();
  net->register_buffer("table", torch::arange(4096, torch::kFloat));
  net->register_buffer("three_of_four",
                       torch::full({1024}, rank == 3 ? 2.5 : 1.5));
  if (rank == 3)
    net->register_buffer("extra", torch::ones({256 * 1024}));
  for (auto &p : net->parameters())
    p.mutable_grad() = torch::full_like(p, rank == 2 ? 0.5 : 0.25);
  const Snapshot before(*net);

  Report r = devcopy::inspect_distributed(net, *pg);
  before.expect_same(*net);
  EXPECT_TRUE(r.findings(kReplicated).empty()) << r;
  EXPECT_EQ(category(r, "gradients"), nullptr) << r;
  // Of the parameters, only the fresh batch norm's ones and zeros.
  ASSERT_NE(category(r, "parameters"), nullptr) << r;
  EXPECT_EQ(category(r, "parameters")->bytes_per_rank, 2 * 64 * 4) << r;
  ASSERT_NE(category(r, "buffers"), nullptr) << r;
  // The table, and the batch norm's fresh statistics and counter.
  EXPECT_EQ(category(r, "buffers")->bytes_per_rank, 4096 * 4 + kBufferBytes)
      << r;
  EXPECT_EQ(category(r, "buffers")->ranks, 4);
  ASSERT_EQ(r.ranks().size(), 4u) << r;
  const std::int64_t base =
      2 * kParamBytes + kBufferBytes + 4096 * 4 + 1024 * 4;
  for (int k = 0; k < 4; ++k)
    EXPECT_EQ(r.ranks()[k].reachable_bytes, base + (k == 3 ? (1 << 20) : 0))
        << r;
  EXPECT_NEAR(r.rank_skew(), double(base + (1 << 20)) / double(base), 1e-9);
  std::ostringstream text;
  text << r;
  EXPECT_NE(text.str().find("rank memory skew"), std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("rank 3 holds"), std::string::npos) << text.str();
}

TEST(Distributed, ARankThatExitsGivesAnErrorNotAHang) {
  if (!in_rank())
    return devcopy_test::expect_ranks_pass(2);
  auto pg = devcopy_test::join(5s);
  if (devcopy_test::rank() == 1)
    std::_Exit(0); // gone before the inspection
  Net net;
  const auto start = std::chrono::steady_clock::now();
  try {
    devcopy::inspect_distributed(
        net, *pg, devcopy::DistributedOptions().with_timeout(3s));
    ADD_FAILURE() << "inspect_distributed returned although rank 1 exited";
  } catch (const devcopy::DistributedError &e) {
    const std::string what = e.what();
    std::cout << "rank 0 got: " << what << std::endl; // before _Exit
    EXPECT_NE(what.find("on rank 0 of 2"), std::string::npos) << what;
    EXPECT_NE(what.find("a rank exited or stalled"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  // Gloo sees the closed connection at once; a store-backed group waits out
  // the timeout (FileStore's wait overshoots it, up to about twice).
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  std::_Exit(::testing::Test::HasFailure()
                 ? 1
                 : 0); // the group's threads hold a dead peer
}

TEST(Distributed, ARankThatStallsTimesOut) {
  if (!in_rank())
    return devcopy_test::expect_ranks_pass(2);
  auto pg = devcopy_test::join(1s);
  if (devcopy_test::rank() == 1) {
    std::this_thread::sleep_for(5s); // never calls inspect_distributed
    std::_Exit(0);
  }
  Net net;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(
      {
        try {
          devcopy::inspect_distributed(
              net, *pg, devcopy::DistributedOptions().with_timeout(1s));
        } catch (const devcopy::DistributedError &e) {
          std::cout << "rank 0 got: " << e.what() << std::endl;
          EXPECT_NE(std::string(e.what()).find("timeout 1000 ms"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      devcopy::DistributedError);
  EXPECT_LT(std::chrono::steady_clock::now() - start,
            4s); // the timeout and some slack
  std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
}

// Rank 0's record (4,000 storages) outgrows its slot in the gather, rank 1's
// (10) does not: the rest travels in a second gather, and only the buffers
// both ranks hold are replicated.
TEST(Distributed, ARecordLongerThanItsSlotStillArrivesWhole) {
  if (!in_rank())
    return devcopy_test::expect_ranks_pass(2);
  at::set_num_threads(1);
  const int rank = devcopy_test::rank();
  auto pg = devcopy_test::join(10s);
  torch::nn::Module m;
  const int buffers = rank == 0 ? 4000 : 10;
  for (int i = 0; i < buffers; ++i)
    m.register_buffer("b" + std::to_string(i),
                      torch::arange(i, i + 4, torch::kFloat));
  Report r = devcopy::inspect_distributed(m, *pg);
  ASSERT_NE(category(r, "buffers"), nullptr) << r;
  EXPECT_EQ(category(r, "buffers")->storages, 10) << r;
  EXPECT_EQ(category(r, "buffers")->bytes_per_rank, 10 * 16) << r;
  ASSERT_EQ(r.ranks().size(), 2u) << r;
  EXPECT_EQ(r.ranks()[0].reachable_bytes, 4000 * 16);
  EXPECT_EQ(r.ranks()[1].reachable_bytes, 10 * 16);
}

TEST(Distributed, OneRankHasNothingToCompare) {
  devcopy_test::StoreDir dir;
  auto pg = devcopy_test::make_group(dir.path(), 0, 1, 5s);
  Net net;
  net.register_buffer("copy",
                      net.fc1->weight.detach().clone()); // a local duplicate
  Report r = devcopy::inspect_distributed(net, *pg);
  EXPECT_TRUE(r.replicated().empty()) << r;
  EXPECT_TRUE(r.findings(kReplicated).empty()) << r;
  EXPECT_EQ(r.findings(std::string(devcopy::rules::kDuplicateStorage)).size(),
            1u)
      << r;
  ASSERT_EQ(r.ranks().size(), 1u);
  EXPECT_EQ(r.ranks()[0].reachable_bytes,
            kParamBytes + kBufferBytes + 32 * 64 * 4);
}

// What needs GPUs, on records as the ranks would send them.
devcopy::detail::RankRecord gpu_rank(int rank, std::string host,
                                     std::string uuid, std::int64_t bytes) {
  devcopy::detail::RankRecord r;
  r.rank = rank;
  r.host = std::move(host);
  r.devices.push_back({"cpu", "", 1024, -1, -1});
  r.devices.push_back(
      {"cuda:0", std::move(uuid), bytes, bytes + 4096, bytes + (2 << 20)});
  return r;
}

Report merged(const std::vector<devcopy::detail::RankRecord> &ranks) {
  std::vector<devcopy::detail::RankRecord> sent;
  for (const auto &r : ranks) {
    const std::vector<unsigned char> bytes = devcopy::detail::encode(r);
    sent.push_back(devcopy::detail::decode(bytes.data(), bytes.size()));
  }
  Report report;
  devcopy::detail::merge_ranks(sent, 0, {}, report);
  return report;
}

TEST(RankRecords, EveryRankOnCuda0IsMisplaced) {
  Report r = merged({gpu_rank(0, "node1", "GPU-aa", 100 << 20),
                     gpu_rank(1, "node1", "GPU-aa", 100 << 20),
                     gpu_rank(2, "node1", "GPU-aa", 60 << 20)});
  ASSERT_EQ(r.findings(kMisplaced).size(), 1u) << r;
  const devcopy::Finding f = r.findings(kMisplaced)[0];
  EXPECT_EQ(f.bytes, (100 << 20) + (60 << 20) + 2 * 4096) << f;
  EXPECT_EQ(f.devices, std::vector<std::string>{"cuda:0"});
  EXPECT_NE(f.message.find("ranks 0, 1 and 2"), std::string::npos) << f;
  EXPECT_NE(f.message.find("node1 (GPU-aa)"), std::string::npos) << f;
  EXPECT_NE(f.message.find("set_device(local_rank)"), std::string::npos) << f;
  ASSERT_EQ(f.details.size(), 3u);
  EXPECT_EQ(f.details[2],
            "rank 2: cuda:0, 60.00 MiB reachable, 60.00 MiB allocated")
      << f;
  EXPECT_EQ(r.ranks().size(), 6u);
}

TEST(RankRecords, OwnGpusOrOtherHostsAreNotMisplaced) {
  // cuda:0 of each rank is another GPU (CUDA_VISIBLE_DEVICES), or another host.
  EXPECT_FALSE(merged({gpu_rank(0, "node1", "GPU-aa", 1 << 20),
                       gpu_rank(1, "node1", "GPU-bb", 1 << 20)})
                   .has_findings());
  EXPECT_FALSE(merged({gpu_rank(0, "node1", "GPU-aa", 1 << 20),
                       gpu_rank(1, "node2", "GPU-aa", 1 << 20)})
                   .has_findings());
  // A rank with nothing on the shared GPU does not count.
  auto idle = gpu_rank(1, "node1", "GPU-aa", 0);
  idle.devices[1].allocated = 0;
  EXPECT_FALSE(
      merged({gpu_rank(0, "node1", "GPU-aa", 1 << 20), idle}).has_findings());
}

TEST(RankRecords, ATruncatedRecordIsAnErrorNotACrash) {
  auto rec = gpu_rank(0, "node1", "GPU-aa", 1);
  rec.storages.push_back({42, 64, 6, devcopy::detail::Category::parameter});
  const std::vector<unsigned char> bytes = devcopy::detail::encode(rec);
  for (std::size_t cut :
       {std::size_t{0}, std::size_t{3}, bytes.size() / 2, bytes.size() - 1})
    EXPECT_THROW(devcopy::detail::decode(bytes.data(), cut), std::runtime_error)
        << cut;
  const auto back = devcopy::detail::decode(bytes.data(), bytes.size());
  ASSERT_EQ(back.storages.size(), 1u);
  EXPECT_EQ(back.storages[0].hash, 42u);
  EXPECT_EQ(back.devices[1].gpu, "GPU-aa");
}

} // namespace
