// inspect() on the CPU: duplicates, shared storage, constants, odd tensors,
// the GoogleTest macros and DEVCOPY_PROBE. One translation unit on purpose:
// each file including LibTorch costs ~15 s to compile.
#include <devcopy/gtest.h>
#include <gtest/gtest-spi.h>
#include <torch/torch.h>

#include <cstdlib>
#include <sstream>

namespace {

using devcopy::inspect;
using devcopy::Report;

::testing::AssertionResult Contains(const char *text_expr, const char *,
                                    const std::string &text,
                                    const std::string &part) {
  if (text.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << text_expr << " lacks \"" << part << "\":\n"
         << text;
}
#define EXPECT_CONTAINS(text, part) EXPECT_PRED_FORMAT2(Contains, text, part)
const std::string kDup(devcopy::rules::kDuplicateStorage);

bool contains(const std::vector<std::string> &v, const std::string &s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

struct Pair : torch::nn::Module {
  torch::nn::Linear enc{nullptr}, dec{nullptr};
  Pair() {
    enc = register_module("enc", torch::nn::Linear(64, 32));
    dec = register_module("dec", torch::nn::Linear(64, 32));
  }
};

// DEVCOPY_PROBE for one scope.
struct ProbeEnv {
  explicit ProbeEnv(const char *v) { setenv("DEVCOPY_PROBE", v, 1); }
  ~ProbeEnv() { unsetenv("DEVCOPY_PROBE"); }
};

TEST(Inspect, CopiedWeightIsADuplicate) {
  Pair m;
  torch::NoGradGuard g;
  m.dec->weight.set_data(m.enc->weight.detach().clone());
  Report r = inspect(m);
  ASSERT_EQ(r.findings().size(), 1u) << r;
  const devcopy::Finding &f = r.findings()[0];
  EXPECT_EQ(f.kind, kDup);
  EXPECT_EQ(f.bytes, 64 * 32 * 4);
  EXPECT_EQ(f.devices, std::vector<std::string>{"cpu"});
  EXPECT_TRUE(contains(f.tensors, "enc.weight") &&
              contains(f.tensors, "dec.weight"));
  EXPECT_TRUE(std::islower(static_cast<unsigned char>(f.message[0])))
      << f.message;
  EXPECT_CONTAINS(f.message, "8.00 KiB");
}

TEST(Inspect, CopiedSubmoduleReportsEachTensor) {
  torch::nn::Sequential a(torch::nn::Linear(16, 16), torch::nn::Linear(16, 16));
  torch::nn::Module owner;
  owner.register_module("a", a.ptr());
  owner.register_module("b", a->clone());
  Report r = inspect(owner);
  EXPECT_EQ(r.findings(kDup).size(), 4u) << r; // two weights, two biases
  EXPECT_EQ(r.wasted_bytes(), 2 * (16 * 16 + 16) * 4);
}

TEST(Inspect, TiesAliasesAndViewsAreSharedNotDuplicated) {
  Pair m;
  m.dec->weight.set_data(m.enc->weight); // tied: two tensors, one storage
  at::Tensor t = at::randn({8, 8});
  m.register_buffer("alias1", t);
  m.register_buffer("alias2", t);
  m.register_buffer("row", t[3]);               // view with an offset
  m.register_buffer("cols", t.narrow(1, 2, 4)); // non-contiguous view
  Report r = inspect(m);
  EXPECT_FALSE(r.has_findings()) << r;
  ASSERT_EQ(r.shared().size(), 2u) << r;
  const std::int64_t unique = (64 * 32 + 32 + 32) * 4 + 64 * 4;
  ASSERT_EQ(r.devices().size(), 1u);
  EXPECT_EQ(r.devices()[0].reachable_bytes, unique); // each storage once
  EXPECT_EQ(r.devices()[0].allocated_bytes, -1);     // no allocator on the CPU
}

TEST(Inspect, FromBlobOverAParameterIsSharedNotACopy) {
  Pair m;
  at::Tensor w = m.enc->weight;
  // A second StorageImpl over the parameter's own memory (no copy made).
  m.register_buffer("blob",
                    at::from_blob(w.data_ptr(), w.sizes(), w.options()));
  // And one over its second half, at an offset.
  m.register_buffer("half",
                    at::from_blob(static_cast<float *>(w.data_ptr()) + 32 * 32,
                                  {32, 32}, w.options()));
  Report r = inspect(m);
  EXPECT_FALSE(r.has_findings()) << r;
  ASSERT_EQ(r.shared().size(), 1u) << r;
  EXPECT_TRUE(contains(r.shared()[0].tensors, "enc.weight") &&
              contains(r.shared()[0].tensors, "blob") &&
              contains(r.shared()[0].tensors, "half"))
      << r;
  ASSERT_EQ(r.devices().size(), 1u);
  EXPECT_EQ(r.devices()[0].reachable_bytes,
            (2 * 64 * 32 + 2 * 32) * 4); // the memory once
  // A real copy beside the alias is still a duplicate.
  m.register_buffer("copy", w.detach().clone());
  Report copied = inspect(m);
  ASSERT_EQ(copied.findings(kDup).size(), 1u) << copied;
  EXPECT_TRUE(contains(copied.findings(kDup)[0].tensors, "copy"));
}

TEST(Inspect, ManyEqualTensorsGiveOneBoundedFinding) {
  torch::nn::Module m;
  const int n = 100000;
  at::Tensor t = at::arange(4, at::kFloat);
  for (int i = 0; i < n; ++i)
    m.register_buffer("t" + std::to_string(i), t.clone());
  Report r = inspect(m);
  const std::vector<devcopy::Finding> dups =
      r.findings(kDup); // a copy, not a view
  ASSERT_EQ(dups.size(), 1u);
  const devcopy::Finding &f = dups[0];
  EXPECT_LT(f.message.size(), 1000u) << f.message.substr(0, 2000);
  EXPECT_CONTAINS(f.message, "t5 on cpu and 99994 more");
  EXPECT_EQ(f.tensors.size(),
            std::size_t(n)); // the report itself stays complete
  EXPECT_EQ(f.bytes, std::int64_t(n - 1) * 16);
  std::ostringstream text;
  text << r;
  EXPECT_LT(text.str().size(), 5000u);
  EXPECT_CONTAINS(text.str(), "and 99980 more");
  EXPECT_NE(r.to_json().find("\"t99999\""), std::string::npos);
}

TEST(Inspect, ConstantTensorsAreNotCopies) {
  torch::nn::Module m;
  m.register_module("n1",
                    torch::nn::LayerNorm(torch::nn::LayerNormOptions({256})));
  m.register_module("n2",
                    torch::nn::LayerNorm(torch::nn::LayerNormOptions({256})));
  m.register_buffer("z1", at::zeros({1000}, at::kDouble));
  m.register_buffer("z2", at::zeros({1000}, at::kDouble));
  m.register_buffer("c1", at::full({3, 5}, 7, at::kComplexDouble));
  m.register_buffer("c2", at::full({3, 5}, 7, at::kComplexDouble));
  m.register_buffer("h1",
                    at::full({7}, 2, at::kHalf)); // 14 bytes: a partial word
  m.register_buffer("h2", at::full({7}, 2, at::kHalf));
  EXPECT_FALSE(inspect(m).has_findings()) << inspect(m);
}

TEST(Inspect, SimilarIsNotEqual) {
  torch::nn::Module m;
  at::Tensor a = at::randn({1001});
  at::Tensor b = a.clone();
  b[1000] = b[1000].item<float>() + 1; // last, partial word differs
  m.register_buffer("a", a);
  m.register_buffer("b", b);
  m.register_buffer("bits",
                    a.view(at::kInt).clone()); // same bytes, other dtype
  m.register_buffer("e1", at::empty({0}));
  m.register_buffer("e2", at::empty({0}));
  Report r = inspect(m);
  EXPECT_FALSE(r.has_findings()) << r;
  EXPECT_TRUE(r.skipped().empty()) << r;
}

TEST(Inspect, NonContiguousCopyIsFound) {
  torch::nn::Module m;
  at::Tensor a = at::randn({32, 16});
  m.register_buffer("a", a);
  m.register_buffer("t",
                    a.clone().t()); // a copy seen through a transposed view
  Report r = inspect(m);
  ASSERT_EQ(r.findings(kDup).size(), 1u) << r;
}

TEST(Inspect, OddTensorsAreSkippedWithAReason) {
  torch::nn::Module m;
  m.register_buffer(
      "meta", at::empty({1 << 20}, at::TensorOptions().device(at::kMeta)));
  m.register_buffer("sparse", at::eye(4).to_sparse());
  at::Tensor q = at::quantize_per_tensor(at::rand({16}), 0.1, 0, at::kQUInt8);
  m.register_buffer("q1", q);
  m.register_buffer("q2", q.clone());
  devcopy::InspectOptions o;
  o.root("missing", at::Tensor());
  Report r = inspect(m, o);
  EXPECT_FALSE(r.has_findings()) << r;
  auto reason = [&](const std::string &name) {
    for (const auto &s : r.skipped())
      if (s.tensor == name)
        return s.reason;
    return std::string("(not skipped)");
  };
  EXPECT_CONTAINS(reason("meta"), "meta");
  EXPECT_CONTAINS(reason("sparse"), "Sparse");
  EXPECT_CONTAINS(reason("q1"), "quantized");
  EXPECT_CONTAINS(reason("missing"), "undefined");
  ASSERT_EQ(r.devices().size(), 1u);
  EXPECT_EQ(r.devices()[0].reachable_bytes,
            2 * 16); // quantized bytes still count
}

TEST(Inspect, RootsJoinDuplicateDetectionAndReachability) {
  Pair m;
  at::Tensor copy = m.enc->weight.detach().clone();
  Report r = inspect(m, devcopy::InspectOptions().root("backup", copy));
  ASSERT_EQ(r.findings(kDup).size(), 1u) << r;
  EXPECT_TRUE(contains(r.findings()[0].tensors, "backup"));

  torch::optim::Adam opt(m.parameters());
  m.enc(at::randn({4, 64})).sum().backward();
  opt.step();
  devcopy::InspectOptions with_opt;
  with_opt.root("adam", opt);
  Report r2 = inspect(m, with_opt);
  EXPECT_FALSE(r2.has_findings()) << r2;
  const std::int64_t params = 2 * (64 * 32 + 32) * 4;
  // enc has gradients and Adam state (two moments): params + grads + 2 * enc
  EXPECT_EQ(r2.devices()[0].reachable_bytes, params + 3 * (64 * 32 + 32) * 4)
      << r2;
}

TEST(Inspect, ReadsOnlyAndKeepsNothingAlive) {
  Pair m;
  at::Tensor before = m.enc->weight.detach().clone();
  const void *data = m.enc->weight.data_ptr();
  const auto uses = m.enc->weight.use_count();
  const auto storage_uses = m.enc->weight.storage().use_count();
  inspect(m);
  EXPECT_EQ(m.enc->weight.data_ptr(), data);
  EXPECT_TRUE(m.enc->weight.equal(before));
  EXPECT_EQ(m.enc->weight.use_count(), uses);
  EXPECT_EQ(m.enc->weight.storage().use_count(), storage_uses);
}

Pair &duplicated() {
  static Pair *m = [] {
    auto *p = new Pair;
    torch::NoGradGuard g;
    p->dec->bias.set_data(p->enc->bias.detach().clone());
    return p;
  }();
  return *m;
}

TEST(Gtest, MacrosPassOnCleanModules) {
  Pair clean;
  EXPECT_NO_DUPLICATE_STORAGE(clean);
  ASSERT_NO_DUPLICATE_STORAGE(clean, devcopy::InspectOptions());
  EXPECT_NO_UNREACHABLE_ALLOCATION(clean);
  EXPECT_NO_PROBE_FINDINGS(std::make_shared<Pair>());
  EXPECT_CLEAN_REPORT(inspect(clean));
  EXPECT_NO_UNREACHABLE_ALLOCATION(duplicated()); // other rules do not count
}

TEST(Gtest, MacrosFailWithTheReport) {
  ProbeEnv env("fail");
  EXPECT_NONFATAL_FAILURE(EXPECT_NO_DUPLICATE_STORAGE(duplicated()),
                          "dec.bias");
  EXPECT_NONFATAL_FAILURE(EXPECT_NO_PROBE_FINDINGS(duplicated()),
                          "devcopy: duplicate-storage");
  EXPECT_FATAL_FAILURE(ASSERT_NO_DUPLICATE_STORAGE(duplicated()),
                       "1 duplicate-storage finding");
  EXPECT_NONFATAL_FAILURE(EXPECT_CLEAN_REPORT(inspect(duplicated())),
                          "enc.bias");
}

TEST(Gtest, MacrosHonourDevcopyProbe) {
  {
    ProbeEnv env("off");
    EXPECT_NO_DUPLICATE_STORAGE(duplicated());
  }
  ProbeEnv env("warn");
  ::testing::internal::CaptureStderr();
  EXPECT_NO_DUPLICATE_STORAGE(duplicated());
  EXPECT_CONTAINS(::testing::internal::GetCapturedStderr(), "dec.bias");
}

TEST(Check, ModesFromTheEnvironment) {
  {
    ProbeEnv env("off");
    EXPECT_FALSE(devcopy::check(duplicated()).has_findings());
  }
  {
    ProbeEnv env("fail");
    try {
      devcopy::check(duplicated());
      ADD_FAILURE() << "fail mode did not throw";
    } catch (const devcopy::ProbeFailure &e) {
      EXPECT_CONTAINS(e.what(), "devcopy: duplicate-storage");
      EXPECT_EQ(e.report().findings().size(), 1u);
    }
    Pair clean;
    EXPECT_NO_THROW(devcopy::check(clean));
  }
  for (const char *v :
       {"warn", "loud"}) { // a bad value warns and falls back to warn
    ProbeEnv env(v);
    ::testing::internal::CaptureStderr();
    EXPECT_TRUE(devcopy::check(duplicated()).has_findings());
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_CONTAINS(err, "devcopy: summary: 1 finding");
    if (std::string(v) == "loud")
      EXPECT_CONTAINS(err, "must be off, warn or fail, not 'loud'");
  }
}

TEST(AvailableMemory, HostAndUnknownDevices) {
  EXPECT_GT(devcopy::available_memory(at::kCPU), 0);
  if (!torch::cuda::is_available())
    EXPECT_EQ(devcopy::available_memory(at::kCUDA), -1);
}

} // namespace
