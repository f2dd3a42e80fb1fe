// The copy observer is exact in any order: discarded, used, returned and kept
// copies, each test with its own observer and exact expectations. ctest runs
// this binary plain (probe.observer_discard), shuffled and repeated 20 times
// (probe.observer_discard_shuffled: any result that depends on what ran
// before fails a round), and as the order pair that once failed
// (probe.observer_discard_pair). Built with debug information: findings name
// this file and line.
#include <devcopy/copy_observer.h>
#include <devcopy/gtest.h>
#include <devcopy/rules_catalog.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "observer_test_util.h"

namespace {

using devcopy::CopyObserver;
using devcopy::Finding;
using devcopy::Report;
namespace rules = devcopy::rules;
using observer_test::discarded;

bool from_this_file(const Finding &f) {
  const std::string &file = f.location.file;
  const std::string name = "observer_discard_test.cpp";
  return file.size() >= name.size() &&
         file.compare(file.size() - name.size(), name.size(), name) == 0;
}

// Checks that `r` has exactly one discarded-copy finding, made at `line` of
// this file, `count` times.
void expect_one_at(const Report &r, int line, std::int64_t count = 1) {
  const auto found = discarded(r);
  ASSERT_EQ(found.size(), 1u) << r;
  EXPECT_EQ(found[0].count, count) << r;
  EXPECT_TRUE(from_this_file(found[0])) << r;
  EXPECT_EQ(found[0].location.line, line) << r;
}

torch::Tensor g_input = torch::randn({8, 8});

TEST(Discard, InputTensor) {
  CopyObserver observer;
  const int line = __LINE__ + 1; // the copy below
  g_input.to(torch::kDouble);
  expect_one_at(observer.report(), line);
}

TEST(Discard, CpuCopyDropped) {
  auto x = torch::randn({16});
  CopyObserver observer;
  const int line = __LINE__ + 1; // the copy below
  x.to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true);
  expect_one_at(observer.report(), line);
}

TEST(Discard, DroppedWhileItsSourceLives) {
  CopyObserver observer;
  int line = 0;
  {
    auto src = torch::randn({32});
    line = __LINE__ + 1; // the copy below
    src.to(torch::kDouble);
  } // the copy died in its statement, its source a moment later
  expect_one_at(observer.report(), line);
}

TEST(Discard, StoredInALocalIsKept) {
  CopyObserver observer;
  {
    auto src = torch::randn({32});
    auto copy = src.to(torch::kDouble);
  } // stored, then dies with its scope: not dropped in its statement
  EXPECT_FALSE(observer.report().has_findings()) << observer.report();
}

// A module keeping a clone as a buffer, built in one function and destroyed
// in another: the clone was stored, not discarded.
struct KeepsInitImpl : torch::nn::Module {
  torch::nn::Linear fc{nullptr};
  torch::Tensor init;
  KeepsInitImpl() : fc(register_module("fc", torch::nn::Linear(4, 4))) {
    init = register_buffer("init_weight", fc->weight.detach().clone());
  }
};
TORCH_MODULE(KeepsInit);

[[gnu::noinline]] KeepsInit build_kept() { return KeepsInit(); }

TEST(Discard, CloneKeptAsABufferIsNotDiscarded) {
  CopyObserver observer;
  {
    auto model = build_kept();
    EXPECT_EQ(model->init.sizes(), model->fc->weight.sizes());
    auto other = KeepsInit(); // built and destroyed here
  }
  auto weight = torch::randn({4, 4});
  {
    KeepsInit model;
    std::vector<torch::Tensor> saved;
    saved.push_back(weight.clone()); // a container keeps it
    model->init = weight.clone();    // so does an attribute
  }
  EXPECT_FALSE(observer.report().has_findings()) << observer.report();
}

[[gnu::noinline]] torch::Tensor widened_dropped() {
  return g_input.to(torch::kDouble);
}

TEST(Discard, ReturnedThenDroppedIsDiscarded) {
  CopyObserver observer;
  widened_dropped(); // the caller drops what the helper returned
  const auto found = discarded(observer.report());
  ASSERT_EQ(found.size(), 1u) << observer.report();
  EXPECT_EQ(found[0].location.function.rfind("widened_dropped", 0), 0u);
}

TEST(Discard, SourceDyingFirstIsAMove) {
  CopyObserver observer;
  {
    auto src = torch::randn({32});
    auto moved = src.to(torch::kDouble);
    src = torch::Tensor();
  }
  EXPECT_FALSE(observer.report().has_findings()) << observer.report();
}

TEST(Discard, UsedCopy) {
  CopyObserver observer;
  {
    auto y = g_input.to(torch::kDouble);
    y.sum();
  }
  {
    auto v = g_input.clone().view({64});
  } // a view taken is a read
  EXPECT_FALSE(observer.report().has_findings()) << observer.report();
}

torch::Tensor widened(const torch::Tensor &t) { return t.to(torch::kDouble); }

TEST(Discard, ReturnedCopy) {
  CopyObserver observer;
  auto kept = widened(g_input);
  EXPECT_FALSE(observer.report().has_findings()) << observer.report();
  EXPECT_EQ(kept.scalar_type(), torch::kDouble);
}

TEST(Discard, KeptInAContainerThenCleared) {
  CopyObserver observer;
  std::vector<torch::Tensor> kept;
  for (int i = 0; i < 3; ++i)
    kept.push_back(g_input.to(torch::kHalf));
  kept.clear(); // stored, then freed unread: kept for a while, not dropped
  EXPECT_FALSE(observer.report().has_findings()) << observer.report();
}

TEST(Discard, RepeatsMergeByCallSite) {
  CopyObserver observer;
  int a = 0, b = 0;
  for (int i = 0; i < 100; ++i) {
    a = __LINE__ + 1; // the copy below
    g_input.to(torch::kDouble);
    b = __LINE__ + 1; // the copy below
    g_input.to(torch::kHalf);
    g_input.to(torch::kDouble).sum(); // used
  }
  const auto found = discarded(observer.report());
  ASSERT_EQ(found.size(), 2u) << observer.report();
  EXPECT_EQ(found[0].location.line, a);
  EXPECT_EQ(found[1].location.line, b);
  EXPECT_EQ(found[0].count, 100);
  EXPECT_EQ(found[0].bytes, 100 * 64 * 8);
  EXPECT_EQ(found[0].first, 1);  // the observer's first copy
  EXPECT_EQ(found[0].last, 298); // three copies per iteration
  EXPECT_EQ(found[1].first, 2);
  EXPECT_NE(found[0].message.find("100 times"), std::string::npos)
      << found[0].message;
}

// Not inlined into std::thread's frames: GCC 12's libbacktrace loses the
// line of a call inlined two levels deep (a lambda inlined into _M_run).
[[gnu::noinline]] int discard_25() {
  int line = 0;
  for (int i = 0; i < 25; ++i) {
    line = __LINE__ + 1; // the copy below
    g_input.to(torch::kDouble);
  }
  return line;
}

TEST(Discard, OnEveryThread) {
  CopyObserver observer;
  std::atomic<int> line{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&line] { line = discard_25(); });
  for (auto &th : threads)
    th.join();
  expect_one_at(observer.report(), line, 100);
}

TEST(Discard, InAutogradHook) {
  auto w = torch::randn({8}, torch::requires_grad());
  auto h = w * 2;
  int line = 0;
  h.register_hook([&line](torch::Tensor g) {
    line = __LINE__ + 1;  // the copy below
    g.to(torch::kDouble); // inside backward, on the engine's thread
  });
  CopyObserver observer;
  h.sum().backward();
  expect_one_at(observer.report(), line);
}

c10::DeleterFnPtr deleter_of(const torch::Tensor &t) {
  return t.storage().data_ptr().get_deleter();
}

TEST(Discard, AllocatorGetsItsDeleterBack) {
  const auto allocators = deleter_of(torch::empty({4}));
  torch::Tensor read, kept;
  {
    CopyObserver observer;
    read = g_input.to(torch::kDouble);
    kept = g_input.to(torch::kDouble);
    EXPECT_NE(deleter_of(kept),
              allocators); // unread: the observer's until read or freed
    read.sum();
    EXPECT_EQ(deleter_of(read), allocators); // read: the allocator's again
  }
  EXPECT_EQ(deleter_of(kept), allocators); // the last observer gave it back
}

// The README's assertion, as a new user wrote it: the dropped conversion
// must fail it, naming the line.
struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{nullptr};
  NetImpl() : fc(register_module("fc", torch::nn::Linear(8, 8))) {}
  torch::Tensor forward(torch::Tensor x, bool offload) {
    auto h = torch::relu(fc->forward(x));
    if (offload)
      h.to(torch::kDouble); // result dropped
    return h;
  }
};
TORCH_MODULE(Net);
constexpr int kDroppedLine = __LINE__ - 5;

Net g_model;

TEST(Discard, ReadmeExampleFails) {
  EXPECT_NONFATAL_FAILURE(
      EXPECT_NO_DISCARDED_COPIES(g_model->forward(g_input, true)),
      "observer_discard_test.cpp:" + std::to_string(kDroppedLine) +
          ": discarded-copy: aten::to copied");
  EXPECT_NO_DISCARDED_COPIES(g_model->forward(g_input, false));
}

TEST(Discard, ReportDirKeepsEachTestsReport) {
  const std::string dir =
      ::testing::TempDir() + "devcopy_reports_" + std::to_string(::getpid());
  ::setenv("DEVCOPY_REPORT_DIR", dir.c_str(), 1);
  EXPECT_NONFATAL_FAILURE(
      EXPECT_NO_DISCARDED_COPIES(g_input.to(torch::kDouble)), "discarded-copy");
  EXPECT_NO_DISCARDED_COPIES(g_input.to(torch::kDouble).sum());
  ::unsetenv("DEVCOPY_REPORT_DIR");
  std::ifstream in(dir + "/Discard.ReportDirKeepsEachTestsReport.json");
  ASSERT_TRUE(in.good()) << dir;
  const std::string json((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  // Both assertions' reports, merged: the first's finding, each one's copy.
  auto occurrences = [&json](const std::string &part) {
    std::size_t n = 0;
    for (auto at = json.find(part); at != std::string::npos;
         at = json.find(part, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(occurrences("\"kind\":\"discarded-copy\""), 1u) << json;
  EXPECT_EQ(occurrences("observer_discard_test.cpp"), 1u) << json;
  EXPECT_EQ(occurrences("\"dtype\":\"double\""), 2u) << json;
  std::filesystem::remove_all(dir);
}

} // namespace
