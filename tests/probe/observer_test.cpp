// CopyObserver: what it reports and what it must stay silent on. One binary;
// the ObserverCuda suite skips itself without a CUDA device (ctest runs it as
// probe.observer_cuda, label cuda).
#include <ATen/record_function.h>
#include <devcopy/copy_observer.h>
#include <devcopy/gtest.h>
#include <devcopy/rules_catalog.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "observer_test_util.h"

#include <cstdlib>
#include <sstream>
#include <thread>

namespace {

using devcopy::CopyObserver;
using devcopy::Report;
namespace rules = devcopy::rules;

using observer_test::count;
using observer_test::occurrences;
using observer_test::route;

// The forward pass of examples/offload_forward.cpp (the seed report), small:
// each layer's input is "offloaded" and the copy dropped.
struct OffloadNetImpl : torch::nn::Module {
  torch::nn::ModuleList layers;
  OffloadNetImpl(int n, int width)
      : layers(register_module("layers", torch::nn::ModuleList())) {
    for (int i = 0; i < n; ++i)
      layers->push_back(torch::nn::Linear(width, width));
  }
  enum class Offload { none, discarded, kept };
  torch::Tensor forward(torch::Tensor x, Offload offload,
                        std::vector<torch::Tensor> *kept = nullptr) {
    switch (offload) {
    case Offload::discarded:
      return run<Offload::discarded>(x, kept);
    case Offload::kept:
      return run<Offload::kept>(x, kept);
    default:
      return run<Offload::none>(x, kept);
    }
  }

private:
  // One function per variant: an optimizer may merge two branches' copy
  // temporaries into one destructor call (GCC 13 does), and a free on
  // another statement's line reads as a stored copy.
  template <Offload O>
  torch::Tensor run(torch::Tensor x, std::vector<torch::Tensor> *kept) {
    torch::Tensor prev = x;
    for (std::size_t i = 0; i < layers->size(); ++i) {
      devcopy::ModuleScope scope("layers." + std::to_string(i));
      x = torch::relu(layers[i]->as<torch::nn::Linear>()->forward(prev));
      // The seed's `prev.to('cpu', non_blocking=True)`; copy=true so that it
      // copies on a CPU-only machine too.
      if constexpr (O == Offload::discarded)
        prev.to(torch::kCPU, /*non_blocking=*/true, /*copy=*/true);
      if constexpr (O == Offload::kept)
        kept->push_back(prev.to(torch::kCPU, true, true));
      prev = x;
    }
    return x;
  }
};
TORCH_MODULE(OffloadNet);

constexpr int kLayers = 40, kWidth = 16, kBatch = 4;
constexpr std::int64_t kActivationBytes = kBatch * kWidth * sizeof(float);

TEST(Observer, OffloadForwardReportsOneDiscardedCopyPerLayer) {
  OffloadNet net(kLayers, kWidth);
  auto x = torch::randn({kBatch, kWidth});
  CopyObserver observer;
  auto out = net->forward(x, OffloadNetImpl::Offload::discarded);
  const Report r = observer.report();
  const auto found = r.findings(std::string(rules::kDiscardedCopy));
  ASSERT_EQ(found.size(), static_cast<std::size_t>(kLayers)) << r;
  for (int i = 0; i < kLayers; ++i) {
    EXPECT_EQ(found[i].op, "aten::to");
    EXPECT_EQ(found[i].bytes, kActivationBytes);
    EXPECT_EQ(found[i].devices, (std::vector<std::string>{"cpu", "cpu"}));
  }
  // Every layer is named once, through ModuleScope.
  std::set<std::string> modules;
  for (const auto &f : found)
    modules.insert(f.module);
  EXPECT_EQ(modules.size(), static_cast<std::size_t>(kLayers));
  EXPECT_TRUE(modules.count("layers.0") && modules.count("layers.39"));
  const auto *c = route(r, "cpu", "cpu", "float");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->count, kLayers);
  EXPECT_EQ(c->bytes, kLayers * kActivationBytes);
  EXPECT_EQ(r.host_syncs(), 0);
  // A host-to-host non_blocking copy has no pageable-memory problem.
  EXPECT_EQ(count(r, rules::kIneffectiveNonBlocking), 0u);
  EXPECT_EQ(count(r, rules::kStaleAfterMove), 0u);
  std::ostringstream text;
  text << r;
  EXPECT_NE(text.str().find("freed unread while the source stayed alive"),
            std::string::npos);
}

TEST(Observer, FixedOffloadForwardReportsNone) {
  OffloadNet net(kLayers, kWidth);
  auto x = torch::randn({kBatch, kWidth});
  CopyObserver observer;
  auto out = net->forward(x, OffloadNetImpl::Offload::none);
  out.sum().backward();
  std::vector<torch::Tensor> kept; // offloaded and kept: not discarded
  auto out2 = net->forward(x, OffloadNetImpl::Offload::kept, &kept);
  const Report r = observer.report();
  EXPECT_FALSE(r.has_findings()) << r;
  EXPECT_EQ(kept.size(), static_cast<std::size_t>(kLayers));
}

TEST(Observer, UsedCopiesAreNotDiscarded) {
  auto x = torch::randn({8, 8});
  CopyObserver observer;
  {
    auto y = x.to(torch::kDouble);
    y.sum();
  } // read by an op
  {
    auto v = x.clone().view({64});
    v.add_(1);
  } // read through a view
  {
    auto a = x.to(torch::kDouble);
    auto b = a.to(torch::kFloat);
    b.mean();
  } // chained
  {
    auto h = x.to(torch::kDouble);
    devcopy::mark_read(h);
  } // read via data_ptr
  std::vector<torch::Tensor> parts{x.clone(), x.clone()};
  auto cat = torch::cat(parts); // read as a TensorList
  parts.clear();
  const Report r = observer.report();
  EXPECT_EQ(count(r, rules::kDiscardedCopy), 0u) << r;
}

torch::Tensor as_double(const torch::Tensor &t) { return t.to(torch::kDouble); }

TEST(Observer, ReturnedAndStoredCopiesAreNotDiscarded) {
  auto x = torch::randn({8});
  CopyObserver observer;
  auto kept = as_double(x); // returned and still alive at report time
  const Report r = observer.report();
  EXPECT_FALSE(r.has_findings()) << r;
  EXPECT_EQ(kept.scalar_type(), torch::kDouble);
}

TEST(Observer, InPlaceCopyIsNeverDiscarded) {
  auto x = torch::randn({16});
  CopyObserver observer;
  {
    auto buf = torch::empty({16}, torch::kDouble);
    buf.copy_(x);
  } // filled, dropped unread
  const Report r = observer.report();
  EXPECT_FALSE(r.has_findings()) << r;
  const auto *c = route(r, "cpu", "cpu", "double");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->count, 1);
  EXPECT_EQ(c->bytes, 16 * 8);
}

TEST(Observer, DiscardedConversionIsReportedWithItsSize) {
  auto x = torch::randn({32, 4});
  CopyObserver observer;
  x.to(torch::kDouble);
  const Report r = observer.report();
  const auto found = r.findings(std::string(rules::kDiscardedCopy));
  ASSERT_EQ(found.size(), 1u) << r;
  EXPECT_EQ(found[0].bytes, 32 * 4 * 8);
  EXPECT_EQ(
      found[0].message.rfind(
          "aten::to copied 1.00 KiB of a double [32, 4] tensor from cpu to cpu",
          0),
      0u)
      << found[0].message;
}

TEST(Observer, CopyOutlivingItsSourceIsAMove) {
  CopyObserver observer;
  {
    auto src = torch::randn({64});
    auto moved = src.to(torch::kDouble);
    src = torch::Tensor(); // the source dies first: x = x.to(...) in two steps
  }
  EXPECT_FALSE(observer.report().has_findings());
}

TEST(Observer, CountsEachByteOnceAndNotKernelScratch) {
  auto x = torch::randn({4, 6});
  auto w = torch::randn({3, 6});
  auto b = torch::randn({3});
  CopyObserver observer;
  auto y = x.to(torch::kDouble); // to -> _to_copy -> copy_: one copy
  auto z = x.t().contiguous();   // contiguous -> clone -> copy_: one copy
  auto lin = torch::nn::functional::linear(
      x, w, b); // addmm copies its bias: no transfer
  const Report r = observer.report();
  ASSERT_EQ(r.copies().size(), 2u) << r;
  EXPECT_EQ(route(r, "cpu", "cpu", "double")->count, 1);
  EXPECT_EQ(route(r, "cpu", "cpu", "double")->bytes, 24 * 8);
  EXPECT_EQ(route(r, "cpu", "cpu", "float")->count, 1);
  EXPECT_EQ(route(r, "cpu", "cpu", "float")->bytes, 24 * 4);
}

TEST(Observer, UserScopeNamesTheModule) {
  auto x = torch::randn({8});
  CopyObserver observer;
  {
    RECORD_USER_SCOPE("encoder.block1");
    x.to(torch::kDouble);
  }
  const auto found =
      observer.report().findings(std::string(rules::kDiscardedCopy));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].module, "encoder.block1");
}

TEST(Observer, StaleAfterMoveNamesTheAliasedParameter) {
  torch::nn::Linear lin(4, 4);
  CopyObserver observer;
  observer.watch(*lin, "fc");
  auto alias = lin->weight.detach(); // shares the old storage
  auto same = lin->weight;           // the parameter itself: follows the move
  lin->to(torch::kDouble);
  const Report r = observer.report();
  const auto found = r.findings(std::string(rules::kStaleAfterMove));
  ASSERT_EQ(found.size(), 1u) << r;
  EXPECT_EQ(found[0].tensors, std::vector<std::string>{"fc.weight"});
  EXPECT_EQ(found[0].bytes, 16 * 4);
  EXPECT_EQ(found[0].devices, std::vector<std::string>{"cpu"});
  EXPECT_EQ(count(r, rules::kDiscardedCopy),
            0u); // the moved copies are used by set_data
  alias = torch::Tensor();
  EXPECT_EQ(count(observer.report(), rules::kStaleAfterMove), 0u);
  EXPECT_EQ(same.scalar_type(), torch::kDouble);
}

using Named = std::vector<std::pair<std::string, torch::Tensor>>;

TEST(Observer, LazyNamesAreTakenAtTheFirstFindingThatNeedsThem) {
  torch::nn::Linear lin(4, 4);
  int walks = 0;
  CopyObserver observer;
  observer.watch_lazily([&] {
    ++walks;
    return Named{{"fc.weight", lin->weight}};
  });
  (void)lin->forward(torch::randn({2, 4}));   // nothing copied: nothing named
  auto kept = lin->weight.to(torch::kDouble); // kept: no finding to name
  EXPECT_EQ(walks, 0);
  for (int i = 0; i < 2; ++i)
    lin->weight.to(torch::kDouble); // discarded, of the parameter
  EXPECT_EQ(walks, 1);
  const auto found = observer_test::discarded(observer.report());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].tensors, std::vector<std::string>{"fc.weight"});
  EXPECT_EQ(found[0].count, 2);
}

TEST(Observer, LazyNamesAreTheModelsAtTheFirstFinding) {
  auto before = torch::randn({4});
  auto after = torch::randn({8});
  torch::Tensor weight = before;
  CopyObserver observer;
  observer.watch_lazily([&] { return Named{{"weight", weight}}; });
  weight = after; // replaced after the observer started, before a finding
  after.to(torch::kDouble);
  before.to(torch::kDouble);
  const auto found = observer_test::discarded(observer.report());
  ASSERT_EQ(found.size(), 2u);
  for (const auto &f : found)
    EXPECT_EQ(f.tensors, f.bytes == 8 * 8 ? std::vector<std::string>{"weight"}
                                          : std::vector<std::string>{});
}

TEST(Observer, ANamerThatThrowsNamesNothingAndSaysWhy) {
  auto x = torch::randn({4});
  CopyObserver observer;
  observer.watch_lazily([]() -> Named { throw std::runtime_error("no tree"); });
  x.to(torch::kDouble);
  const Report r = observer.report();
  ASSERT_EQ(observer_test::discarded(r).size(), 1u) << r;
  EXPECT_TRUE(observer_test::discarded(r)[0].tensors.empty());
  ASSERT_EQ(r.skipped().size(), 1u) << r;
  EXPECT_EQ(r.skipped()[0].reason,
            "the model's tensors are not named in findings: no tree");
}

TEST(Observer, MoveWithoutAliasIsClean) {
  torch::nn::Linear lin(4, 4);
  CopyObserver observer;
  lin->to(torch::kDouble);
  lin->to(torch::kDouble); // a no-op move: nothing copied
  const Report r = observer.report();
  EXPECT_FALSE(r.has_findings()) << r;
  EXPECT_EQ(route(r, "cpu", "cpu", "double")->count,
            2); // weight and bias, once
}

TEST(Observer, AutogradEngineCopiesAreCountedNotFlagged) {
  auto w = torch::randn({8}, torch::requires_grad());
  CopyObserver observer;
  w.to(torch::kDouble)
      .sum()
      .backward(); // backward copies the gradient back to float
  const Report r = observer.report();
  EXPECT_EQ(count(r, rules::kDiscardedCopy), 0u) << r;
  ASSERT_NE(route(r, "cpu", "cpu", "float"), nullptr) << r;
  EXPECT_EQ(route(r, "cpu", "cpu", "float")->count, 1);
}

TEST(Observer, ThreadsCountExactly) {
  constexpr int kThreads = 4, kIters = 100;
  std::vector<torch::Tensor> sources;
  for (int t = 0; t < kThreads; ++t)
    sources.push_back(torch::randn({16}));
  CopyObserver observer;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const auto &x = sources[t];
      for (int i = 0; i < kIters; ++i) {
        x.to(torch::kDouble).sum(); // used
        x.to(torch::kHalf);         // discarded
      }
    });
  }
  for (auto &th : threads)
    th.join();
  const Report r = observer.report();
  EXPECT_EQ(occurrences(r, rules::kDiscardedCopy), kThreads * kIters);
  EXPECT_EQ(count(r, rules::kDiscardedCopy), 1u); // one call site
  ASSERT_NE(route(r, "cpu", "cpu", "double"), nullptr);
  EXPECT_EQ(route(r, "cpu", "cpu", "double")->count, kThreads * kIters);
  EXPECT_EQ(route(r, "cpu", "cpu", "double")->bytes,
            kThreads * kIters * 16 * 8);
  EXPECT_EQ(route(r, "cpu", "cpu", "c10::Half")->count, kThreads * kIters);
}

TEST(Observer, ManyLiveUnreadCopiesAreTrackedExactly) {
  // More unread copies than the lock-free filter has bits: reads and deaths
  // must still be matched one by one.
  auto x = torch::randn({4});
  CopyObserver observer;
  std::vector<torch::Tensor> copies;
  for (int i = 0; i < 100; ++i) {
    copies.push_back(x.to(torch::kDouble)); // kept, unread
    if (i % 2 == 0)
      x.to(torch::kHalf); // dropped among them
  }
  for (int i = 0; i < 200; ++i)
    x.add(1); // unrelated ops while they live
  for (int i = 0; i < 100; i += 2)
    copies[i].sum(); // read half of them
  copies.clear();    // stored, so not discarded, read or not
  for (int i = 0; i < 50; ++i)
    x.add(1);
  EXPECT_EQ(occurrences(observer.report(), rules::kDiscardedCopy), 50);
}

TEST(Observer, NestedObserversSeeTheirOwnLifetime) {
  auto x = torch::randn({8});
  CopyObserver outer;
  x.to(torch::kDouble);
  {
    CopyObserver inner;
    x.to(torch::kHalf);
    EXPECT_EQ(occurrences(inner.report(), rules::kDiscardedCopy), 1);
  }
  EXPECT_EQ(occurrences(outer.report(), rules::kDiscardedCopy), 2);
}

TEST(Observer, KeepsNothingAliveAndRemovesItsCallback) {
  const bool had_callbacks = at::hasGlobalCallbacks();
  auto x = torch::randn({8});
  c10::weak_intrusive_ptr<c10::StorageImpl> weak =
      x.storage().getWeakStorageImpl();
  {
    CopyObserver observer;
    auto y = x.to(torch::kDouble);
    weak = y.storage().getWeakStorageImpl();
    y = torch::Tensor();
    EXPECT_TRUE(weak.expired()); // the observer held no strong reference
    EXPECT_TRUE(at::hasGlobalCallbacks());
  }
  EXPECT_EQ(at::hasGlobalCallbacks(), had_callbacks);
}

// ---- GoogleTest assertions
// ---------------------------------------------------

torch::Tensor g_x;

TEST(ObserverAssertions, PassOnUsedCopiesAndFailOnDiscardedOnes) {
  g_x = torch::randn({8});
  EXPECT_NO_DISCARDED_COPIES(g_x.to(torch::kDouble).sum());
  ASSERT_NO_DISCARDED_COPIES(g_x.to(torch::kDouble).sum());
  // A statement with commas, and several statements, in one assertion.
  EXPECT_NO_DISCARDED_COPIES(auto y = g_x.to(torch::kDouble, false, true);
                             y.sum());
  EXPECT_NONFATAL_FAILURE(EXPECT_NO_DISCARDED_COPIES(g_x.to(torch::kDouble)),
                          "discarded-copy");
  EXPECT_FATAL_FAILURE(ASSERT_NO_DISCARDED_COPIES(g_x.to(torch::kDouble)),
                       "discarded-copy");
}

TEST(ObserverAssertions, HonourDevcopyProbeOff) {
  g_x = torch::randn({8});
  ::setenv("DEVCOPY_PROBE", "off", 1);
  EXPECT_NO_DISCARDED_COPIES(g_x.to(torch::kDouble));
  ::setenv("DEVCOPY_PROBE", "warn", 1);
  EXPECT_NO_DISCARDED_COPIES(g_x.to(torch::kDouble));
  ::unsetenv("DEVCOPY_PROBE");
}

} // namespace
