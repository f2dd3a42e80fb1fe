// The CUDA half of backend.h for LibTorch builds without CUDA.
#include "backend.h"

#if !DEVCOPY_HAS_CUDA

#include <stdexcept>

namespace devcopy::detail {

bool cuda_compiled() { return false; }
std::unique_ptr<CudaPrints> fingerprint_cuda(int, const std::vector<Span> &) {
  throw std::logic_error(
      "devcopy: built without CUDA, cannot read CUDA memory");
}
bool equal_cuda(const Span &, int, const Span &, int) {
  throw std::logic_error(
      "devcopy: built without CUDA, cannot read CUDA memory");
}
AllocatorState cuda_allocator_state(int, bool,
                                    const std::vector<std::uint64_t> &) {
  return {};
}
std::vector<std::string> cuda_block_context(const Block &) { return {}; }
int cuda_device_count() { return 0; }
std::string cuda_device_uuid(int) { return {}; }
std::int64_t cuda_available_memory(int) { return -1; }
bool cuda_trace_memory(MemorySink) { return false; }

} // namespace devcopy::detail

#endif
