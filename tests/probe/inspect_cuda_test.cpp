// inspect() on CUDA: copies across devices, the double-VRAM pattern, and the
// caching allocator (cached-memory, available_memory). Needs a CUDA device;
// built only when LibTorch has CUDA (scripts/gpu-test.sh).
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime.h>
#include <devcopy/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2 && __has_include(<torch/csrc/cuda/memory_snapshot.h>)
#include <torch/csrc/cuda/memory_snapshot.h>
#define DEVCOPY_TEST_HISTORY 1
#endif

namespace {

using devcopy::inspect;
using devcopy::Report;
const std::string kDup(devcopy::rules::kDuplicateStorage);
const std::string kUnreachable(devcopy::rules::kUnreachableAllocation);
const std::string kCached(devcopy::rules::kCachedMemory);
constexpr std::int64_t MiB = 1 << 20;

bool contains(const std::vector<std::string> &v, const std::string &s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

class Cuda : public ::testing::Test {
protected:
  void SetUp() override {
    if (!torch::cuda::is_available())
      GTEST_SKIP() << "no CUDA device";
    c10::cuda::CUDACachingAllocator::emptyCache(); // each test starts from a
                                                   // clean cache
  }
};

TEST_F(Cuda, CpuAndCudaCopyOfOneWeight) {
  torch::nn::Module m;
  at::Tensor w = m.register_parameter("w", at::randn({1024, 1024}));
  m.register_buffer("w_gpu", w.detach().cuda());
  m.register_buffer("other_gpu", at::randn({1024, 1024}, at::kCUDA));
  Report r = inspect(m);
  ASSERT_EQ(r.findings(kDup).size(), 1u) << r;
  const devcopy::Finding f =
      r.findings(kDup)[0]; // findings(kind) returns a copy
  EXPECT_EQ(f.bytes, 4 * MiB);
  EXPECT_EQ(f.devices, (std::vector<std::string>{"cpu", "cuda:0"}));
  EXPECT_TRUE(contains(f.tensors, "w") && contains(f.tensors, "w_gpu")) << r;
}

TEST_F(Cuda, TwoCudaCopiesAndALargeCrossDeviceCopy) {
  torch::nn::Module m;
  at::Tensor a = at::randn({1 << 20}, at::kCUDA);
  m.register_buffer("a", a);
  m.register_buffer("b", a.clone());
  m.register_buffer("c", a.clone());
  // 80 MB: the host comparison runs through more than one staging chunk
  at::Tensor big = at::randn({20 << 20});
  m.register_buffer("big_cpu", big);
  m.register_buffer("big_gpu", big.cuda());
  at::Tensor near = big.cuda();
  near[-1] = near[-1].item<float>() + 1; // differs in the last element only
  m.register_buffer("near_gpu", near);
  Report r = inspect(m);
  ASSERT_EQ(r.findings(kDup).size(), 2u) << r;
  EXPECT_EQ(r.wasted_bytes(), 2 * 4 * MiB + 80 * MiB) << r;
  for (const auto &f : r.findings())
    EXPECT_FALSE(contains(f.tensors, "near_gpu")) << r;
}

TEST_F(Cuda, ConstantsViewsAndOddSizesAreSilent) {
  torch::nn::Module m;
  m.register_module("n1",
                    torch::nn::LayerNorm(torch::nn::LayerNormOptions({4096})));
  m.register_module("n2",
                    torch::nn::LayerNorm(torch::nn::LayerNormOptions({4096})));
  m.to(at::kCUDA);
  m.register_buffer(
      "h1",
      at::full({1001}, 3, at::TensorOptions(at::kHalf).device(at::kCUDA)));
  m.register_buffer(
      "h2",
      at::full({1001}, 3, at::TensorOptions(at::kHalf).device(at::kCUDA)));
  at::Tensor t = at::randn({333, 7}, at::kCUDA);
  m.register_buffer("t", t);
  m.register_buffer("tt", t.t());
  m.register_buffer("slice", t.narrow(0, 5, 100));
  m.register_buffer("e1", at::empty({0}, at::kCUDA));
  m.register_buffer("e2", at::empty({0}, at::kCUDA));
  Report r = inspect(m);
  EXPECT_FALSE(r.has_findings()) << r;
  EXPECT_EQ(r.shared().size(), 1u) << r;
}

// The seed "LoRA adapter doubles VRAM": an inner module moves itself to the
// GPU in its constructor; an adapter rebuilds its layers on the host, copying
// weights and keeping the old layers; the owner then moves everything.
struct Inner : torch::nn::Module {
  static constexpr int kLayers = 16, kWidth = 2048;
  Inner() {
    for (int i = 0; i < kLayers; ++i)
      register_module("l" + std::to_string(i),
                      torch::nn::Linear(kWidth, kWidth));
    to(at::kCUDA); // too early
  }
};

struct Adapter {
  std::vector<std::shared_ptr<torch::nn::Module>>
      old_layers; // the stray references
  void apply(Inner &inner) {
    torch::NoGradGuard g;
    for (int i = 0; i < Inner::kLayers; ++i) {
      const std::string name = "l" + std::to_string(i);
      auto old = inner.named_children()[name];
      torch::nn::Linear fresh(Inner::kWidth, Inner::kWidth); // on the host
      fresh->weight.copy_(old->named_parameters()["weight"]);
      fresh->bias.copy_(old->named_parameters()["bias"]);
      inner.replace_module(name, fresh.ptr());
      old_layers.push_back(old);
    }
  }
};

struct Owner : torch::nn::Module {
  std::shared_ptr<Inner> inner;
  Adapter adapter;
  Owner() {
    inner = register_module("inner", std::make_shared<Inner>());
    adapter.apply(*inner);
    to(at::kCUDA);
  }
};

TEST_F(Cuda, DoubleVramIsUnreachableAllocation) {
  const std::int64_t model =
      Inner::kLayers *
      (std::int64_t{Inner::kWidth} * Inner::kWidth + Inner::kWidth) * 4;
  {
    Owner owner;
    Report r = inspect(owner);
    ASSERT_EQ(r.findings(kUnreachable).size(), 1u) << r;
    const devcopy::Finding f = r.findings(kUnreachable)[0];
    EXPECT_GE(f.bytes, model);
    EXPECT_LE(f.bytes, model + 16 * MiB); // block rounding only
    EXPECT_EQ(f.devices, std::vector<std::string>{"cuda:0"});
    EXPECT_GE(f.details.size(), 8u) << r; // the largest blocks, one by one
    EXPECT_EQ(r.devices().back().reachable_bytes, model) << r;

    // The same memory named as a root is reachable on purpose.
    devcopy::InspectOptions o;
    for (std::size_t i = 0; i < owner.adapter.old_layers.size(); ++i)
      o.root("adapter.old" + std::to_string(i), *owner.adapter.old_layers[i]);
    EXPECT_NO_UNREACHABLE_ALLOCATION(owner, o);

    owner.adapter.old_layers.clear(); // the fix: drop the stray references
    EXPECT_NO_UNREACHABLE_ALLOCATION(owner);
  }
}

#ifdef DEVCOPY_TEST_HISTORY
TEST_F(Cuda, UnreachableBlocksCarryTheAllocationSiteWithHistory) {
  torch::cuda::_record_memory_history(/*enabled=*/true, /*record_context=*/true,
                                      /*trace_alloc_max_entries=*/1,
                                      /*trace_alloc_record_context=*/false,
                                      /*record_cpp_context=*/true);
  at::Tensor stray =
      at::empty({128 * MiB}, at::TensorOptions(at::kByte).device(at::kCUDA));
  torch::nn::Module m;
  Report r = inspect(m);
  torch::cuda::_record_memory_history(false);
  ASSERT_EQ(r.findings(kUnreachable).size(), 1u) << r;
  const std::vector<std::string> d = r.findings(kUnreachable)[0].details;
  ASSERT_GE(d.size(), 2u) << r;
  EXPECT_EQ(d[1].rfind("  at ", 0), 0u) << r;
}
#endif

// The seed "reserved memory not reused": 8 x 256 MiB freed, then one 3 GiB.
TEST_F(Cuda, CachedMemoryAndAvailableMemory) {
  const auto bytes = at::TensorOptions(at::kByte).device(at::kCUDA);
  {
    std::vector<at::Tensor> chunks;
    for (int i = 0; i < 8; ++i)
      chunks.push_back(at::empty({256 * MiB}, bytes));
  }
  std::size_t free = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  const std::int64_t available = devcopy::available_memory(at::kCUDA);
  EXPECT_GE(available, static_cast<std::int64_t>(free) + 2048 * MiB - 64 * MiB);
  EXPECT_LE(available, static_cast<std::int64_t>(free) + 2048 * MiB + 64 * MiB);

  at::Tensor big =
      at::empty({3072 * MiB}, bytes); // cannot reuse the 256 MiB blocks
  torch::nn::Module m;
  devcopy::InspectOptions o;
  o.root("big", big);
  Report r = inspect(m, o);
  ASSERT_EQ(r.findings(kCached).size(), 1u) << r;
  EXPECT_GE(r.findings(kCached)[0].bytes, 2048 * MiB);
  const devcopy::DeviceMemory &d = r.devices().back();
  EXPECT_EQ(d.device, "cuda:0");
  EXPECT_GE(d.reserved_bytes, (2048 + 3072) * MiB);
  EXPECT_EQ(d.largest_free_block, 256 * MiB);
  EXPECT_TRUE(r.findings(kUnreachable).empty()) << r; // `big` is a root

  big = at::Tensor();
  c10::cuda::CUDACachingAllocator::emptyCache();
  EXPECT_TRUE(inspect(m).findings(kCached).empty());
}

} // namespace
