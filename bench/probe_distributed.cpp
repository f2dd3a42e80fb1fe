// inspect_distributed() on 4 CPU ranks (Gloo over 127.0.0.1) against inspect()
// of the same 1,000-tensor model, in the same run:
//   probe_distributed [ranks] [KiB per tensor]      (default 4, 64)
// Every rank gets one intra-op thread (one core each, as on a real cluster)
// and the same model (data parallelism: everything is replicated, the
// largest report). Both are timed on every rank at once, between barriers,
// in alternating rounds (a load that drifts slows both alike), median of 15
// after a warm-up; rank 0 prints the ratio (target <= 1.5). A
// lone inspect() in the launcher, with the machine otherwise idle, is printed
// for context.
#include <devcopy/distributed.h>
#include <devcopy/probe.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "rank_spawn.h"

namespace {

// 250 blocks of a linear layer (weight, bias) and a norm (weight, bias).
std::shared_ptr<torch::nn::Module> model(std::int64_t kib) {
  torch::manual_seed(0);
  const std::int64_t width = std::max<std::int64_t>(
      8, static_cast<std::int64_t>(std::sqrt(kib * 256.0)));
  auto m = std::make_shared<torch::nn::Module>();
  for (int b = 0; b < 250; ++b) {
    m->register_module("fc" + std::to_string(b),
                       torch::nn::Linear(width, width));
    auto norm = torch::nn::LayerNorm(torch::nn::LayerNormOptions({width}));
    torch::NoGradGuard no_grad;
    norm->weight.normal_(); // trained-looking: not constant
    norm->bias.normal_();
    m->register_module("norm" + std::to_string(b), norm);
  }
  return m;
}

template <class F> double time_ms(F &&f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

double median(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

constexpr int kRounds = 15;

template <class F> double median_ms(F &&f) {
  f(); // warm-up
  std::vector<double> ms;
  for (int i = 0; i < kRounds; ++i)
    ms.push_back(time_ms(f));
  return median(ms);
}

int rank_main(std::int64_t kib, double lone_ms) {
  at::set_num_threads(1);
  auto m = model(kib);
  auto pg = devcopy_test::join(std::chrono::seconds(60));
  auto barrier = [&] { pg->barrier()->wait(); };
  devcopy::Report r;
  auto local = [&] { devcopy::inspect(*m); };
  auto distributed = [&] { r = devcopy::inspect_distributed(*m, *pg); };
  barrier();
  local();
  distributed(); // warm-up
  std::vector<double> local_runs, dist_runs;
  for (int i = 0; i < kRounds; ++i) {
    barrier();
    local_runs.push_back(time_ms(local));
    barrier();
    dist_runs.push_back(time_ms(distributed));
  }
  const double local_ms = median(local_runs), dist_ms = median(dist_runs);
  barrier();
  if (devcopy_test::rank() == 0) {
    std::int64_t bytes = 0;
    for (const auto &p : m->parameters())
      bytes += p.nbytes();
    std::printf("probe_distributed: %zu tensors, %s per rank, %d ranks (%s, 1 "
                "thread each), %zu replicated "
                "categories found\n",
                m->parameters().size(), devcopy::format_bytes(bytes).c_str(),
                devcopy_test::world(), pg->getBackendName().c_str(),
                r.replicated().size());
    std::printf("  inspect (every rank at once) %.2f ms, inspect_distributed "
                "%.2f ms: ratio %.2f (target <= 1.5)\n",
                local_ms, dist_ms, dist_ms / local_ms);
    std::printf("  a lone inspect (the launcher, before the ranks start): %.2f "
                "ms (inspect_distributed / lone: %.2f)\n",
                lone_ms, dist_ms / lone_ms);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  const int ranks = argc > 1 ? std::atoi(argv[1]) : 4;
  const std::int64_t kib = argc > 2 ? std::atoll(argv[2]) : 64;
  if (devcopy_test::in_rank())
    return rank_main(kib, argc > 3 ? std::atof(argv[3]) : 0);
  at::set_num_threads(1);
  double lone_ms = 0;
  {
    auto m = model(kib);
    lone_ms = median_ms([&] { devcopy::inspect(*m); });
  }
  devcopy_test::StoreDir dir;
  bool overran = false;
  const std::vector<int> codes = devcopy_test::spawn_ranks(
      ranks,
      {std::to_string(ranks), std::to_string(kib), std::to_string(lone_ms)},
      dir.path(), std::chrono::seconds(300), &overran);
  for (int c : codes)
    if (c != 0 || overran) {
      std::fprintf(stderr, "probe_distributed: a rank failed (exit %d)%s\n", c,
                   overran ? ", timed out" : "");
      return 1;
    }
  return 0;
}
