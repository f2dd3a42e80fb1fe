// The CUDA half of backend.h: kernel launches on the current stream, device
// buffers from the caching allocator (bounded: descriptors, sums, and one
// staging chunk), and the allocator's own accounting.
#include <ATen/cuda/PeerToPeerAccess.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/version.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "backend.h"
#include "fingerprint.h"
#include "kernels.h"

#if TORCH_VERSION_MAJOR >= 2 &&                                                \
    __has_include(<torch/csrc/profiler/combined_traceback.h>)
#include <torch/csrc/profiler/combined_traceback.h>
#define DEVCOPY_ALLOCATION_CONTEXT 1
#endif

namespace devcopy::detail {
namespace {

namespace alloc = c10::cuda::CUDACachingAllocator;

constexpr std::size_t kBatch = 4096; // descriptors per launch
constexpr std::int64_t kStaging = std::int64_t{64} << 20; // cross-device chunk

// Device memory from the caching allocator, returned on scope exit.
class Buffer {
public:
  explicit Buffer(std::size_t n)
      : p_(alloc::raw_alloc(std::max<std::size_t>(n, 1))) {}
  ~Buffer() { alloc::raw_delete(p_); }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  template <class T> T *as(std::size_t byte_offset = 0) const {
    return reinterpret_cast<T *>(static_cast<char *>(p_) + byte_offset);
  }

private:
  void *p_;
};

} // namespace

std::vector<std::string> cuda_block_context(const Block &block) {
  std::vector<std::string> lines;
#ifdef DEVCOPY_ALLOCATION_CONTEXT
  auto *ctx = static_cast<c10::GatheredContext *>(block.context.get());
  auto *tb = dynamic_cast<torch::CapturedTraceback *>(ctx);
  if (tb == nullptr)
    return lines;
  torch::SymbolizedTracebacks s = torch::symbolize({tb});
  if (s.tracebacks.empty())
    return lines;
  for (std::uint64_t idx : s.tracebacks.front()) {
    const auto &f = s.all_frames.at(idx);
    lines.push_back("at " + f.funcname + " (" + f.filename + ":" +
                    std::to_string(f.lineno) + ")");
    if (lines.size() == 12)
      break; // the allocation site, not the whole stack
  }
#else
  (void)block;
#endif
  return lines;
}

bool cuda_compiled() { return true; }
int cuda_device_count() { return static_cast<int>(c10::cuda::device_count()); }

// Cached: cudaGetDeviceProperties queries every property of the device on
// each call, and a GPU's UUID never changes.
std::string cuda_device_uuid(int device) {
  static std::mutex mu;
  static std::map<int, std::string> known;
  std::lock_guard<std::mutex> lock(mu);
  auto it = known.find(device);
  if (it != known.end())
    return it->second;
  cudaDeviceProp prop;
  C10_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  static const char *const digits = "0123456789abcdef";
  std::string out = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10)
      out += '-';
    const auto b = static_cast<unsigned char>(prop.uuid.bytes[i]);
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  known.emplace(device, out);
  return out;
}

namespace {

// One launch of at most kBatch descriptors: its device buffer (descriptors,
// then the sums and the varied flags) lives until the sums are read.
struct Launch {
  std::vector<gpu::Desc> descs;
  std::unique_ptr<Buffer> buf;
  std::size_t sums_at = 0, varied_at = 0;
};

class InFlight final : public CudaPrints {
public:
  InFlight(int device, const std::vector<Span> &spans) : device_(device) {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    for (std::size_t start = 0; start < spans.size(); start += kBatch) {
      const std::size_t n = std::min(kBatch, spans.size() - start);
      Launch &l = launches_.emplace_back();
      std::uint64_t blocks = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const Span &s = spans[start + i];
        l.descs.push_back(
            {s.data, static_cast<std::uint64_t>(s.nbytes), blocks, s.itemsize});
        blocks += gpu::blocks_for(s.nbytes);
      }
      l.sums_at = (n * sizeof(gpu::Desc) + 15) / 16 * 16;
      l.varied_at = l.sums_at + n * sizeof(unsigned long long);
      l.buf = std::make_unique<Buffer>(l.varied_at + n * sizeof(unsigned int));
      auto *sums = l.buf->as<unsigned long long>(l.sums_at);
      C10_CUDA_CHECK(cudaMemcpyAsync(l.buf->as<gpu::Desc>(), l.descs.data(),
                                     n * sizeof(gpu::Desc),
                                     cudaMemcpyHostToDevice, stream));
      C10_CUDA_CHECK(cudaMemsetAsync(
          sums, 0, n * (sizeof(unsigned long long) + sizeof(unsigned int)),
          stream));
      gpu::launch_fingerprint(l.buf->as<gpu::Desc>(), static_cast<int>(n),
                              blocks, sums,
                              l.buf->as<unsigned int>(l.varied_at), stream);
      C10_CUDA_CHECK(cudaGetLastError());
    }
  }

  std::vector<Print> finish() override {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device_));
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    std::vector<Print> out;
    for (Launch &l : launches_) {
      const std::size_t n = l.descs.size();
      // Pageable destinations: each copy returns once it is done.
      std::vector<unsigned long long> sums(n);
      std::vector<unsigned int> varied(n);
      C10_CUDA_CHECK(cudaMemcpyAsync(
          sums.data(), l.buf->as<unsigned long long>(l.sums_at),
          n * sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream));
      C10_CUDA_CHECK(cudaMemcpyAsync(
          varied.data(), l.buf->as<unsigned int>(l.varied_at),
          n * sizeof(unsigned int), cudaMemcpyDeviceToHost, stream));
      C10_CUDA_CHECK(cudaStreamSynchronize(stream));
      for (std::size_t i = 0; i < n; ++i) {
        Print p;
        p.hash = finish_hash(sums[i], l.descs[i].nbytes);
        p.constant = varied[i] == 0;
        out.push_back(p);
      }
      l.buf.reset();
    }
    launches_.clear();
    return out;
  }

  std::vector<std::uint64_t> scratch() const override {
    std::vector<std::uint64_t> blocks;
    for (const Launch &l : launches_)
      if (l.buf)
        blocks.push_back(reinterpret_cast<std::uint64_t>(l.buf->as<void>()));
    return blocks;
  }

private:
  int device_;
  std::vector<Launch> launches_;
};

} // namespace

std::unique_ptr<CudaPrints> fingerprint_cuda(int device,
                                             const std::vector<Span> &spans) {
  return std::make_unique<InFlight>(device, spans);
}

bool equal_cuda(const Span &a, int device_a, const Span &b, int device_b) {
  if (a.nbytes != b.nbytes)
    return false;
  if (device_a < 0 && device_b < 0)
    return equal_host(a, b);
  // Compare on a's device (or b's, when a is host memory).
  const Span &here = device_a >= 0 ? a : b;
  const Span &there = device_a >= 0 ? b : a;
  const int dev = device_a >= 0 ? device_a : device_b;
  const int other = device_a >= 0 ? device_b : device_a;
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(dev));
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  Buffer flag(sizeof(unsigned int));
  C10_CUDA_CHECK(cudaMemsetAsync(flag.as<unsigned int>(), 0,
                                 sizeof(unsigned int), stream));
  // With peer access (NVLink, PCIe P2P) the kernel reads the other GPU's
  // bytes in place: no staging copies, no round trip per chunk. PyTorch
  // enables the same access for its own cross-device copies.
  const bool direct =
      other == dev || (other >= 0 && at::cuda::get_p2p_access(
                                         static_cast<c10::DeviceIndex>(dev),
                                         static_cast<c10::DeviceIndex>(other)));
  if (direct) {
    if (other != dev) // finish pending writes to the peer's storage first
      c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(other))
          .synchronize();
    gpu::launch_compare(here.data, there.data, here.nbytes,
                        flag.as<unsigned int>(), stream);
  } else {
    if (other >= 0) // finish pending writes to the peer's storage first
      c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(other))
          .synchronize();
    const std::int64_t chunk = std::min(kStaging, here.nbytes);
    Buffer staging(chunk);
    for (std::int64_t off = 0; off < here.nbytes; off += chunk) {
      const std::int64_t len = std::min(chunk, here.nbytes - off);
      if (other < 0)
        C10_CUDA_CHECK(cudaMemcpyAsync(staging.as<void>(), there.data + off,
                                       len, cudaMemcpyHostToDevice, stream));
      else
        C10_CUDA_CHECK(cudaMemcpyPeerAsync(
            staging.as<void>(), dev, there.data + off, other, len, stream));
      gpu::launch_compare(here.data + off, staging.as<unsigned char>(), len,
                          flag.as<unsigned int>(), stream);
    }
  }
  C10_CUDA_CHECK(cudaGetLastError());
  unsigned int differs = 0;
  C10_CUDA_CHECK(cudaMemcpyAsync(&differs, flag.as<unsigned int>(),
                                 sizeof differs, cudaMemcpyDeviceToHost,
                                 stream));
  C10_CUDA_CHECK(cudaStreamSynchronize(stream));
  return differs == 0;
}

AllocatorState cuda_allocator_state(int device, bool with_blocks,
                                    const std::vector<std::uint64_t> &scratch) {
  AllocatorState s;
  if (device < 0 || device >= cuda_device_count())
    return s;
  try {
    const auto stats =
        alloc::getDeviceStats(static_cast<c10::DeviceIndex>(device));
    // Index 0 is StatType::AGGREGATE in LibTorch 1.13 and 2.x alike.
    s.allocated = stats.allocated_bytes[0].current;
    s.reserved = stats.reserved_bytes[0].current;
    s.known = true;
  } catch (const c10::Error &) {
    return s; // the allocator has not been initialised: nothing allocated yet
  }
  if (!with_blocks)
    return s;
#if TORCH_VERSION_MAJOR >= 2
  const auto segments = alloc::snapshot().segments;
#else
  const auto segments = alloc::snapshot();
#endif
  for (const auto &seg : segments) {
    if (seg.device != device)
      continue;
    std::uint64_t addr = seg.address; // blocks tile their segment in order
    for (const auto &b : seg.blocks) {
      const auto size = static_cast<std::int64_t>(b.size);
      const bool ours = b.allocated && std::find(scratch.begin(), scratch.end(),
                                                 addr) != scratch.end();
      if (ours)
        s.allocated -= size;
      if (!b.allocated || ours)
        s.largest_free = std::max(s.largest_free, size);
      Block block{addr, size, b.allocated && !ours, {}};
#if TORCH_VERSION_MAJOR >= 2
      if (block.allocated)
        block.context =
            b.context_when_allocated; // converts to shared_ptr<void>
#endif
      s.blocks.push_back(std::move(block));
      addr += b.size;
    }
  }
  std::sort(
      s.blocks.begin(), s.blocks.end(),
      [](const Block &x, const Block &y) { return x.address < y.address; });
  return s;
}

std::int64_t cuda_available_memory(int device) {
  if (device < 0 || device >= cuda_device_count())
    return -1;
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  std::size_t free = 0, total = 0;
  C10_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const AllocatorState s = cuda_allocator_state(device, false);
  return static_cast<std::int64_t>(free) + (s.reserved - s.allocated);
}

} // namespace devcopy::detail
