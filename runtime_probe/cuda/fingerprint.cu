// Fingerprint and comparison kernels. Bandwidth-bound by design: 16-byte
// loads, one pass, one atomic per 32 KiB block, no allocation.
#include <cstdint>

#include "../src/fingerprint.h"
#include "kernels.h"

namespace devcopy::detail::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 8; // 16-byte loads in flight per thread
constexpr int kRounds = 4; // so a block reads 128 KiB: setup is amortised
constexpr std::uint64_t kBlockWords =
    std::uint64_t{kThreads} * kUnroll * kRounds * 2;

__device__ __forceinline__ std::uint64_t load_word(const unsigned char *p,
                                                   std::uint64_t nbytes,
                                                   std::uint64_t i,
                                                   bool aligned8) {
  const std::uint64_t off = i * 8;
  if (aligned8 && off + 8 <= nbytes)
    return __ldg(reinterpret_cast<const unsigned long long *>(p + off));
  std::uint64_t w = 0;
  const std::uint64_t len = nbytes - off < 8 ? nbytes - off : 8;
  for (std::uint64_t j = 0; j < len; ++j)
    w |= static_cast<std::uint64_t>(p[off + j]) << (8 * j);
  return w;
}

__global__ void __launch_bounds__(kThreads)
    fingerprint_kernel(const Desc *descs, int count, unsigned long long *sums,
                       unsigned int *varied) {
  // The storage this block reads: the last one starting at or before it.
  const std::uint64_t block = blockIdx.x;
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (descs[mid].first_block <= block)
      lo = mid;
    else
      hi = mid - 1;
  }
  const Desc d = descs[lo];
  const std::uint64_t words = word_count(d.nbytes);
  const std::uint64_t full = d.nbytes / 8;
  const bool aligned16 = (reinterpret_cast<std::uintptr_t>(d.data) & 15) == 0;
  const bool aligned8 = (reinterpret_cast<std::uintptr_t>(d.data) & 7) == 0;
  // The pattern is built once per block from the first element.
  __shared__ std::uint64_t pat_word[2];
  __shared__ std::uint32_t pat_period;
  if (threadIdx.x == 0) {
    const Pattern p = make_pattern(d.data, d.itemsize, d.nbytes);
    pat_word[0] = p.word[0];
    pat_word[1] = p.word[1];
    pat_period = p.period;
  }
  __syncthreads();
  Pattern pat;
  pat.word[0] = pat_word[0];
  pat.word[1] = pat_word[1];
  pat.period = pat_period;
  const std::uint64_t pat1 = pat.word[pat.period == 2 ? 1 : 0];
  std::uint64_t sum = 0, diff = pat.period == 0 ? 1 : 0;
  const std::uint64_t base = (block - d.first_block) * kBlockWords;
  if (aligned16 && base + kBlockWords <= full) {
    // Every block but a storage's last: all loads of a round are issued
    // before any is used, with no bounds test between them.
    for (int round = 0; round < kRounds; ++round) {
      ulonglong2 v[kUnroll];
      const std::uint64_t first =
          base + 2 * (static_cast<std::uint64_t>(round) * kUnroll * kThreads +
                      threadIdx.x);
#pragma unroll
      for (int k = 0; k < kUnroll; ++k)
        v[k] = __ldg(reinterpret_cast<const ulonglong2 *>(d.data) + first / 2 +
                     static_cast<std::uint64_t>(k) * kThreads);
#pragma unroll
      for (int k = 0; k < kUnroll; ++k) {
        const std::uint64_t i =
            first + 2 * static_cast<std::uint64_t>(k) * kThreads;
        sum += word_term(v[k].x, i) + word_term(v[k].y, i + 1);
        diff |= (v[k].x ^ pat.word[0]) | (v[k].y ^ pat1);
      }
    }
  } else {
    for (int round = 0; round < kRounds; ++round) {
#pragma unroll
      for (int k = 0; k < kUnroll; ++k) {
        const std::uint64_t i =
            base +
            2 * ((static_cast<std::uint64_t>(round) * kUnroll + k) * kThreads +
                 threadIdx.x);
        if (aligned16 && i + 2 <= full) {
          const ulonglong2 v =
              __ldg(reinterpret_cast<const ulonglong2 *>(d.data + i * 8));
          sum += word_term(v.x, i) + word_term(v.y, i + 1);
          diff |= (v.x ^ pat.word[0]) | (v.y ^ pat1); // i is even
        } else {
          for (std::uint64_t j = i; j < i + 2 && j < words; ++j) {
            const std::uint64_t w = load_word(d.data, d.nbytes, j, aligned8);
            sum += word_term(w, j);
            diff |=
                (w ^ ((j & 1) ? pat1 : pat.word[0])) & valid_mask(d.nbytes, j);
          }
        }
      }
    }
  }
  // Block reduction: warps by shuffle, then one atomic per block.
  unsigned int any = diff != 0;
  for (int o = 16; o > 0; o /= 2) {
    sum += __shfl_down_sync(0xffffffffu, sum, o);
    any |= __shfl_down_sync(0xffffffffu, any, o);
  }
  __shared__ std::uint64_t warp_sum[kThreads / 32];
  __shared__ unsigned int warp_any[kThreads / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) {
    warp_sum[warp] = sum;
    warp_any[warp] = any;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / 32; ++w) {
      sum += warp_sum[w];
      any |= warp_any[w];
    }
    atomicAdd(&sums[lo], static_cast<unsigned long long>(sum));
    if (any)
      atomicOr(&varied[lo], 1u);
  }
}

__global__ void compare_kernel(const unsigned char *a, const unsigned char *b,
                               std::uint64_t nbytes, bool aligned8,
                               unsigned int *differs) {
  const std::uint64_t words = word_count(nbytes);
  const std::uint64_t stride =
      static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i =
           blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
       i < words; i += stride) {
    if (load_word(a, nbytes, i, aligned8) !=
        load_word(b, nbytes, i, aligned8)) {
      atomicOr(differs, 1u);
      return;
    }
  }
}

} // namespace

std::uint64_t blocks_for(std::uint64_t nbytes) {
  return (word_count(nbytes) + kBlockWords - 1) / kBlockWords;
}

void launch_fingerprint(const Desc *descs, int count,
                        std::uint64_t total_blocks, unsigned long long *sums,
                        unsigned int *varied, cudaStream_t stream) {
  if (count == 0 || total_blocks == 0)
    return;
  fingerprint_kernel<<<static_cast<unsigned int>(total_blocks), kThreads, 0,
                       stream>>>(descs, count, sums, varied);
}

void launch_compare(const unsigned char *a, const unsigned char *b,
                    std::uint64_t nbytes, unsigned int *differs,
                    cudaStream_t stream) {
  const bool aligned8 = ((reinterpret_cast<std::uintptr_t>(a) |
                          reinterpret_cast<std::uintptr_t>(b)) &
                         7) == 0;
  std::uint64_t blocks = (word_count(nbytes) + kThreads - 1) / kThreads;
  if (blocks > 8192)
    blocks = 8192;
  if (blocks == 0)
    return;
  compare_kernel<<<static_cast<unsigned int>(blocks), kThreads, 0, stream>>>(
      a, b, nbytes, aligned8, differs);
}

} // namespace devcopy::detail::gpu
