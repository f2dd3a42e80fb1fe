// Internal: what inspect() needs from each device kind. The host half lives
// in src/host_backend.cpp; the CUDA half in cuda/ when Torch has CUDA, and
// src/cuda_stub.cpp otherwise. No LibTorch types, so cuda/*.cu can include it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace devcopy::detail {

/// The raw bytes of one storage.
struct Span {
  const unsigned char *data = nullptr;
  std::int64_t nbytes = 0;
  std::uint32_t itemsize = 1;
};

struct Print {
  std::uint64_t hash = 0;
  bool constant = false; // every element equal: never a copy
  bool known = false;    // set by inspect() for the storages it hashed
};

// Host memory: chunks hashed with at::parallel_for, exact comparison memcmp.
std::vector<Print> fingerprint_host(const std::vector<Span> &spans);
bool equal_host(const Span &a, const Span &b);

// CUDA memory. Every function is callable without CUDA (stubs answer
// "unknown"), so inspect() needs no #ifdef.
bool cuda_compiled();
/// Fingerprints of spans that all live on one CUDA device, in flight: the
/// kernels run on the current stream while the host goes on (inspect() reads
/// the allocator meanwhile); finish() waits and returns them, span for span.
class CudaPrints {
public:
  virtual ~CudaPrints() = default;
  virtual std::vector<Print> finish() = 0;
  /// Addresses of the device blocks holding the kernels' descriptors and
  /// sums until finish(): the probe's own memory, not the user's.
  virtual std::vector<std::uint64_t> scratch() const = 0;
};
/// Launches the fingerprint kernels for `spans` on CUDA device `device`, with
/// O(spans) bytes of device memory, and returns without waiting.
std::unique_ptr<CudaPrints> fingerprint_cuda(int device,
                                             const std::vector<Span> &spans);
/// Exact comparison; `device` -1 means host memory. Bytes move in bounded
/// chunks through a staging buffer, never whole tensors.
bool equal_cuda(const Span &a, int device_a, const Span &b, int device_b);

struct Block {
  std::uint64_t address = 0;
  std::int64_t size = 0;
  bool allocated = false;
  std::shared_ptr<void>
      context; // the allocator's record of the allocation site, if any
};

struct AllocatorState {
  bool known = false;
  std::int64_t allocated = 0;
  std::int64_t reserved = 0;
  std::int64_t largest_free = 0;
  std::vector<Block> blocks; // every block of the device, in address order
};

/// The caching allocator's view of `device`; blocks only when `with_blocks`.
/// Blocks at the addresses in `scratch` (CudaPrints::scratch() of prints in
/// flight) count as free, as they will be once the prints are read.
AllocatorState
cuda_allocator_state(int device, bool with_blocks,
                     const std::vector<std::uint64_t> &scratch = {});
/// The allocation stack of `block`, one frame a line; empty unless history is
/// recorded (LibTorch 2.x). Symbolizing is slow: call it for reported blocks
/// only.
std::vector<std::string> cuda_block_context(const Block &block);
/// CUDA devices, 0 without CUDA.
int cuda_device_count();
/// The GPU's UUID as nvidia-smi prints it ("GPU-1a2b..."): the same physical
/// GPU has the same UUID in every process, whatever CUDA_VISIBLE_DEVICES
/// numbers it. Empty without CUDA.
std::string cuda_device_uuid(int device);
/// Driver free memory plus reserved-but-unused; -1 without CUDA.
std::int64_t cuda_available_memory(int device);

// The CUDA caching allocator's events, for the observer's memory timeline.
enum class MemoryAction { alloc, free, segment_alloc, segment_free };
using MemorySink = void (*)(MemoryAction action, int device,
                            std::uint64_t address, std::int64_t bytes);
/// Sends the allocator's events to `sink` (nullptr: none). False where the
/// allocator reports no events (LibTorch 1.13, no CUDA, not initialised).
/// The hook runs under the allocator's lock: `sink` must stay cheap.
bool cuda_trace_memory(MemorySink sink);

} // namespace devcopy::detail
