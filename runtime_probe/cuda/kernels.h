// Internal: the CUDA kernels behind fingerprint_cuda() and equal_cuda().
// Plain CUDA runtime types only: fingerprint.cu includes no LibTorch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace devcopy::detail::gpu {

/// One storage to fingerprint; blocks [first_block, next first_block) read it.
struct Desc {
  const unsigned char *data;
  std::uint64_t nbytes;
  std::uint64_t first_block;
  std::uint32_t itemsize;
};

/// Thread blocks needed for a storage of `nbytes` (32 KiB per block).
std::uint64_t blocks_for(std::uint64_t nbytes);

/// sums[i] += word terms of storage i; varied[i] |= 1 unless constant.
/// Both must be zeroed; `descs` lives in device memory.
void launch_fingerprint(const Desc *descs, int count,
                        std::uint64_t total_blocks, unsigned long long *sums,
                        unsigned int *varied, cudaStream_t stream);

/// *differs = 1 when the `nbytes` bytes at a and b differ (device pointers).
void launch_compare(const unsigned char *a, const unsigned char *b,
                    std::uint64_t nbytes, unsigned int *differs,
                    cudaStream_t stream);

} // namespace devcopy::detail::gpu
