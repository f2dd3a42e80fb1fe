// The content fingerprint shared by the host and the CUDA kernel. A storage's
// bytes are read as little-endian 64-bit words (the last one zero-padded);
// each word is mixed with its index and the results are summed mod 2^64.
// The sum is order-free, so the host (parallel_for chunks) and the device
// (thread blocks, atomics) may split the work any way and still agree: the
// fingerprints are comparable across devices. It only selects candidates;
// every match is then confirmed byte for byte.
//
// The term uses 32-bit multiplies only: 64-bit integer multiplies are
// emulated on GPUs, and 32-bit lanes vectorize on the host.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define DEVCOPY_HD __host__ __device__ __forceinline__
#else
#define DEVCOPY_HD inline
#endif

namespace devcopy::detail {

DEVCOPY_HD std::uint64_t word_term(std::uint64_t word, std::uint64_t index) {
  // A position key, then each 32-bit half multiplied by an odd constant (a
  // bijection): any change to one word, and any swap of two words, changes
  // the term. Three multiplies a word keep the host loop near memory speed.
  const std::uint32_t key =
      static_cast<std::uint32_t>(index ^ (index >> 32)) * 0x9E3779B1u;
  const std::uint32_t a =
      (static_cast<std::uint32_t>(word) ^ key) * 0x85EBCA6Bu;
  const std::uint32_t b =
      (static_cast<std::uint32_t>(word >> 32) + key) * 0xC2B2AE35u;
  return (static_cast<std::uint64_t>(a) << 32) + b;
}

DEVCOPY_HD std::uint64_t finish_hash(std::uint64_t sum, std::uint64_t nbytes) {
  std::uint64_t x = sum ^ (nbytes * 0x9E3779B97F4A7C15ull);
  x ^= x >> 31;
  x *= 0x7FB5D329728EA185ull;
  x ^= x >> 27;
  return x;
}

/// Words a storage of `nbytes` bytes is read as.
DEVCOPY_HD std::uint64_t word_count(std::uint64_t nbytes) {
  return (nbytes + 7) / 8;
}

/// Mask of the valid bytes of word `index` (all ones except in a partial tail).
DEVCOPY_HD std::uint64_t valid_mask(std::uint64_t nbytes, std::uint64_t index) {
  std::uint64_t left = nbytes - index * 8;
  return left >= 8 ? ~0ull : ((1ull << (left * 8)) - 1);
}

/// Constant storages (every element equal: fresh norm weights, zero biases)
/// are not copies of each other. Element sizes 1, 2, 4 and 8 repeat within a
/// word, 16 (complex double) every two words: word `i` of a constant storage
/// equals pattern word `i % period`, built from the first element. Other
/// element sizes are never called constant.
struct Pattern {
  std::uint64_t word[2] = {0, 0};
  std::uint32_t period = 0; // 0: cannot tell
};

DEVCOPY_HD Pattern make_pattern(const unsigned char *first,
                                std::uint32_t itemsize, std::uint64_t nbytes) {
  Pattern p;
  if (nbytes < itemsize || !(itemsize == 1 || itemsize == 2 || itemsize == 4 ||
                             itemsize == 8 || itemsize == 16))
    return p;
  p.period = itemsize == 16 ? 2 : 1; // itemsize is a power of two from here on
  for (std::uint32_t w = 0; w < p.period; ++w)
    for (std::uint32_t b = 0; b < 8; ++b)
      p.word[w] |=
          static_cast<std::uint64_t>(first[(w * 8 + b) & (itemsize - 1)])
          << (8 * b);
  return p;
}

} // namespace devcopy::detail
