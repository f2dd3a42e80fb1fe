// CopyObserver on the dispatcher: only the copying ops pay for it, on every
// thread, and LibTorch's own copy_ behaviour (its version counter) is kept.
// Internal headers: the count of the observer's hooks on this thread.
#include <ATen/record_function.h>
#include <devcopy/copy_observer.h>
#include <devcopy/rules_catalog.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "copy_observer_ops.h"
#include "observer_test_util.h"

#include <thread>

namespace {

using devcopy::CopyObserver;
using devcopy::observer::calls_on_this_thread;
namespace rules = devcopy::rules;

using observer_test::count;
using observer_test::occurrences;
using observer_test::route;

bool op_callbacks() {
  return at::getStepCallbacksUnlessEmpty(at::RecordScope::FUNCTION).has_value();
}

// Ops that copy nothing: contiguous inputs, no autograd, no conversion (a
// Python-number scalar is a double or long tensor the kernel converts: a
// copy inside it, which the observer does see).
torch::Tensor compute_step(const torch::Tensor &x, const torch::Tensor &w) {
  auto h = torch::mm(x, w);
  h = torch::relu(h) * h + h;
  h.add_(torch::sigmoid(h));
  return torch::softmax(h, 1).sum();
}

TEST(Dispatch, OpsThatCopyNothingPayNothing) {
  auto x = torch::randn({8, 16});
  auto w = torch::randn({16, 16});
  CopyObserver observer;
  const auto before = calls_on_this_thread();
  for (int i = 0; i < 10; ++i)
    compute_step(x, w);
  EXPECT_EQ(calls_on_this_thread(), before); // no hook ran for them
  EXPECT_FALSE(op_callbacks());              // no per-op callback either
  EXPECT_EQ(observer.report().copies().size(), 0u);
}

TEST(Dispatch, OpsPayForTheReadCheckOnlyWhileACopyIsUnread) {
  auto x = torch::randn({8, 16});
  auto w = torch::randn({16, 16});
  CopyObserver observer;
  auto before = calls_on_this_thread();
  auto y = x.to(torch::kDouble); // a copying op: its kernel runs
  EXPECT_GT(calls_on_this_thread(), before);
  EXPECT_TRUE(op_callbacks()); // y is unread: any op may read it
  y.sum();                     // read: the check is off again
  EXPECT_FALSE(op_callbacks());
  before = calls_on_this_thread();
  compute_step(x, w);
  EXPECT_EQ(calls_on_this_thread(), before);
  EXPECT_EQ(count(observer.report(), rules::kDiscardedCopy), 0u);
}

TEST(Dispatch, KernelsLeaveWithTheLastObserver) {
  auto x = torch::randn({8});
  {
    CopyObserver outer;
    {
      CopyObserver inner;
    }
    const auto before = calls_on_this_thread();
    x.to(torch::kDouble); // the outer one still observes
    EXPECT_GT(calls_on_this_thread(), before);
  }
  const auto before = calls_on_this_thread();
  x.to(torch::kDouble);
  x.clone();
  torch::zeros({8}).copy_(x);
  EXPECT_EQ(calls_on_this_thread(), before);
}

TEST(Dispatch, InPlaceCopyStillBumpsTheVersion) {
  auto a = torch::zeros({4});
  const auto b = torch::ones({4});
  const auto v0 = a._version();
  {
    CopyObserver observer;
    a.copy_(b); // through the observer's copy_ kernel
    EXPECT_EQ(a._version(), v0 + 1);
    // Autograd relies on it: a saved result changed in place is caught.
    auto w = torch::randn({4}, torch::requires_grad());
    auto e = w.exp(); // exp saves its result for backward
    e.copy_(b);
    EXPECT_THROW(e.sum().backward(), c10::Error);
  }
  a.copy_(b); // LibTorch's own kernel again
  EXPECT_EQ(a._version(), v0 + 2);
}

TEST(Dispatch, KernelScratchCopiesAreNotCounted) {
  auto x = torch::randn({4, 6});
  auto w = torch::randn({3, 6});
  auto b = torch::randn({3});
  auto t = torch::randn({6, 4}).t(); // not contiguous
  CopyObserver observer;
  torch::nn::functional::linear(x, w, b); // addmm copies its bias
  torch::mm(t, w.t());                    // and may copy its operands
  torch::cat({x, x});
  EXPECT_EQ(observer.report().copies().size(), 0u) << observer.report();
  t.contiguous(); // the user's copy is
  EXPECT_EQ(route(observer.report(), "cpu", "cpu", "float")->count, 1);
}

// Backward run from a thread started after the observer: it inherited no
// thread-local state from the observer's thread, and its copies are seen,
// the hook's judged, the engine's counted.
TEST(Dispatch, BackwardOnAThreadOfItsOwnIsObserved) {
  auto w = torch::randn({8}, torch::requires_grad());
  CopyObserver observer;
  auto loss = w.to(torch::kDouble).sum(); // backward copies the grad back
  loss.register_hook([](torch::Tensor g) {
    g.to(torch::kHalf); // dropped inside backward
    return g;
  });
  std::thread worker([&] { loss.backward(); });
  worker.join();
  const auto r = observer.report();
  EXPECT_EQ(occurrences(r, rules::kDiscardedCopy), 1) << r;
  ASSERT_NE(route(r, "cpu", "cpu", "float"), nullptr) << r;
  EXPECT_EQ(route(r, "cpu", "cpu", "float")->count, 1); // the engine's copy
  ASSERT_NE(route(r, "cpu", "cpu", "c10::Half"), nullptr) << r;
  EXPECT_TRUE(w.grad().defined());
}

// Inside InferenceMode nothing tells a user's copy from a kernel's, so
// copies there are never judged: silent rather than wrong.
TEST(Dispatch, InferenceModeCopiesAreNotJudged) {
  auto x = torch::randn({8});
  CopyObserver observer;
  {
    c10::InferenceMode guard;
    x.to(torch::kDouble);
    x.clone();
  }
  EXPECT_EQ(count(observer.report(), rules::kDiscardedCopy), 0u);
  x.to(torch::kDouble); // outside it, judged again
  EXPECT_EQ(count(observer.report(), rules::kDiscardedCopy), 1u);
}

} // namespace
