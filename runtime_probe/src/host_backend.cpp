// Host memory fingerprints: the storages are cut into chunks of at most 1 MiB
// and the chunks hashed in parallel, so one large tensor and many small ones
// both keep every thread busy.
#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "backend.h"
#include "fingerprint.h"

namespace devcopy::detail {
namespace {

constexpr std::int64_t kChunkWords = 1 << 17; // 1 MiB

struct Chunk {
  std::size_t span;
  std::uint64_t first_word, end_word;
};

std::uint64_t load_word(const unsigned char *data, std::uint64_t nbytes,
                        std::uint64_t index) {
  std::uint64_t w = 0;
  std::uint64_t off = index * 8;
  std::memcpy(&w, data + off,
              std::min<std::uint64_t>(8, nbytes - off)); // little-endian host
  return w;
}

// The hot loop over whole words. Branch-free (period 1 passes the same
// pattern twice) so it vectorizes; built for AVX2 and for the baseline ISA,
// picked at load time.
__attribute__((target_clones("avx2", "default"))) void
hash_words(const unsigned char *data, std::uint64_t first, std::uint64_t end,
           std::uint64_t pat0, std::uint64_t pat1, std::uint64_t *sum_out,
           std::uint64_t *diff_out) {
  std::uint64_t sum = 0, diff = 0;
  for (std::uint64_t i = first; i < end; ++i) {
    std::uint64_t w;
    std::memcpy(&w, data + i * 8, 8); // little-endian host, any alignment
    sum += word_term(w, i);
    diff |= w ^ ((i & 1) ? pat1 : pat0);
  }
  *sum_out = sum;
  *diff_out = diff;
}

} // namespace

std::vector<Print> fingerprint_host(const std::vector<Span> &spans) {
  std::vector<Chunk> chunks;
  for (std::size_t s = 0; s < spans.size(); ++s) {
    const std::uint64_t words = word_count(spans[s].nbytes);
    for (std::uint64_t w = 0; w < words; w += kChunkWords)
      chunks.push_back({s, w, std::min<std::uint64_t>(words, w + kChunkWords)});
  }
  std::vector<std::uint64_t> sums(chunks.size(), 0);
  std::vector<unsigned char> varied(chunks.size(), 0);
  at::parallel_for(
      0, static_cast<std::int64_t>(chunks.size()), 1,
      [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t c = b; c < e; ++c) {
          const Chunk &ch = chunks[c];
          const Span &sp = spans[ch.span];
          const std::uint64_t n = static_cast<std::uint64_t>(sp.nbytes);
          const Pattern pat = make_pattern(sp.data, sp.itemsize, n);
          const std::uint64_t pat1 = pat.word[pat.period == 2 ? 1 : 0];
          const std::uint64_t full_end = std::max(
              ch.first_word, std::min<std::uint64_t>(ch.end_word, n / 8));
          std::uint64_t sum = 0, diff = 0;
          hash_words(sp.data, ch.first_word, full_end, pat.word[0], pat1, &sum,
                     &diff);
          if (pat.period == 0)
            diff = 1;
          for (std::uint64_t i = full_end; i < ch.end_word;
               ++i) { // the partial tail word
            const std::uint64_t w = load_word(sp.data, n, i);
            sum += word_term(w, i);
            diff |= (w ^ pat.word[pat.period == 2 ? (i & 1) : 0]) &
                    valid_mask(n, i);
          }
          sums[c] = sum;
          varied[c] = diff != 0;
        }
      });
  std::vector<Print> out(spans.size());
  std::vector<std::uint64_t> total(spans.size(), 0);
  std::vector<bool> any_varied(spans.size(), false);
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    total[chunks[c].span] += sums[c];
    if (varied[c])
      any_varied[chunks[c].span] = true;
  }
  for (std::size_t s = 0; s < spans.size(); ++s) {
    out[s].hash =
        finish_hash(total[s], static_cast<std::uint64_t>(spans[s].nbytes));
    out[s].constant =
        !any_varied[s] &&
        make_pattern(spans[s].data, spans[s].itemsize, spans[s].nbytes)
                .period != 0;
  }
  return out;
}

bool equal_host(const Span &a, const Span &b) {
  if (a.nbytes != b.nbytes)
    return false;
  const std::int64_t chunk = kChunkWords * 8;
  const std::int64_t n = (a.nbytes + chunk - 1) / chunk;
  std::atomic<bool> same{true};
  at::parallel_for(0, n, 1, [&](std::int64_t b0, std::int64_t e0) {
    for (std::int64_t c = b0; c < e0 && same.load(std::memory_order_relaxed);
         ++c) {
      const std::int64_t off = c * chunk, len = std::min(chunk, a.nbytes - off);
      if (std::memcmp(a.data + off, b.data + off, len) != 0)
        same = false;
    }
  });
  return same;
}

} // namespace devcopy::detail
