// The copy observer at scale: memory after a million discarded
// copies (findings are merged by call site, so it must stay flat), and the
// latency of report() while 4 threads copy. CPU only; prints figures.
//
// Usage: observer_step_scale [--copies N] [--reports R]
#include <devcopy/copy_observer.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>
#include <vector>

namespace {

double rss_mib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) *
         static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

} // namespace

int main(int argc, char **argv) {
  long copies = 1000000;
  int reports = 400;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--copies") && i + 1 < argc)
      copies = std::atol(argv[++i]);
    else if (!std::strcmp(argv[i], "--reports") && i + 1 < argc)
      reports = std::atoi(argv[++i]);
    else {
      std::cerr
          << "observer_step_scale: unknown argument '" << argv[i]
          << "' (usage: observer_step_scale [--copies N] [--reports R])\n";
      return 2;
    }
  }
  torch::set_num_threads(1);
  auto x = torch::randn({16});
  for (int i = 0; i < 1000; ++i)
    x.to(torch::kDouble); // warm the allocator

  {
    devcopy::CopyObserver observer;
    x.to(torch::kDouble);
    (void)observer.report(); // the first report reads symbol tables once
  }
  const double before = rss_mib();
  const auto t0 = Clock::now();
  devcopy::CopyObserver observer;
  for (long i = 0; i < copies; ++i)
    x.to(torch::kDouble); // discarded, one call site
  const double loop_ms = ms_since(t0);
  const auto t1 = Clock::now();
  const devcopy::Report r = observer.report();
  const double first_report_ms = ms_since(t1);
  std::int64_t counted = 0;
  for (const auto &f : r.findings())
    counted += f.count;
  std::printf("observer_step_scale: %ld discarded copies: %zu finding(s) "
              "counting %lld, "
              "memory +%.1f MiB (%.0f -> %.0f MiB RSS), %.2f us per copy, "
              "report() %.3f ms\n",
              copies, r.findings().size(), static_cast<long long>(counted),
              rss_mib() - before, before, rss_mib(),
              loop_ms * 1000.0 / static_cast<double>(copies), first_report_ms);

  // report() while 4 threads copy (discarded and used copies, 4 sites).
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      auto y = torch::randn({16});
      while (!stop.load(std::memory_order_relaxed)) {
        y.to(torch::kDouble);
        y.to(torch::kHalf).sum();
      }
    });
  std::vector<double> ms;
  const auto t2 = Clock::now();
  for (int i = 0; i < reports; ++i) {
    const auto t = Clock::now();
    (void)observer.report();
    ms.push_back(ms_since(t));
  }
  const double total_ms = ms_since(t2);
  stop = true;
  for (auto &th : threads)
    th.join();
  std::sort(ms.begin(), ms.end());
  std::printf("observer_step_scale: report() under 4 copying threads: %d calls "
              "in %.1f ms, "
              "median %.3f ms, p99 %.3f ms, max %.3f ms (target: a few ms)\n",
              reports, total_ms, ms[ms.size() / 2], ms[ms.size() * 99 / 100],
              ms.back());
  return 0;
}
