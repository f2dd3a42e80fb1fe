// inspect() against one clone() of all parameter bytes, in the same run:
//   probe_inspect [cuda|cpu|cross|both] [MiB]
//     (default both: 2048 MiB cuda, 512 MiB cpu, and with two GPUs cross:
//      1024 MiB on cuda:0 with a copy of every layer on cuda:1)
// Prints the median of 5 runs of each and their ratio. Targets: <= 1.0 on
// the GPU and across GPUs (the probe only reads; clone reads and writes),
// <= 1.5 on the CPU.
#include <devcopy/probe.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

// Square layers of 64 MiB each, created where they live; one layer is also
// registered as a copy so the exact comparison runs too.
struct Model : torch::nn::Module {
  Model(std::int64_t mib, const at::Device &dev) {
    const std::int64_t layers = std::max<std::int64_t>(1, mib / 64);
    for (std::int64_t i = 0; i < layers; ++i)
      register_parameter(
          "layer" + std::to_string(i),
          at::randn({4096, 4096}, at::TensorOptions().device(dev)));
    register_buffer("copy_of_layer0",
                    named_parameters()["layer0"].detach().clone());
  }
};

// Every layer on cuda:0 has a copy on cuda:1: each pair is fingerprinted on
// its own GPU and then confirmed byte for byte across the two.
struct CrossModel : torch::nn::Module {
  explicit CrossModel(std::int64_t mib) {
    const std::int64_t layers = std::max<std::int64_t>(1, mib / 64);
    for (std::int64_t i = 0; i < layers; ++i) {
      const at::Tensor w =
          register_parameter("layer" + std::to_string(i),
                             at::randn({4096, 4096}, at::Device(at::kCUDA, 0)));
      register_buffer("layer" + std::to_string(i) + "_on_cuda1",
                      w.detach().to(at::Device(at::kCUDA, 1)));
    }
  }
};

void sync(const at::Device &dev) {
  if (dev.is_cuda())
    for (int d = 0; d < static_cast<int>(torch::cuda::device_count()); ++d)
      torch::cuda::synchronize(d);
}

template <class F> double median_ms(const at::Device &dev, F &&f) {
  std::vector<double> ms;
  for (int i = 0; i < 6; ++i) { // the first run warms caches and the allocator
    sync(dev);
    auto t0 = std::chrono::steady_clock::now();
    f();
    sync(dev);
    auto t1 = std::chrono::steady_clock::now();
    if (i > 0)
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

template <class M>
void measure(M &m, const at::Device &dev, const std::string &name,
             double target) {
  std::int64_t bytes = 0;
  for (const auto &p : m.parameters())
    bytes += p.nbytes();
  for (const auto &b : m.buffers())
    bytes += b.nbytes();
  std::size_t findings = 0;
  const double inspect_ms =
      median_ms(dev, [&] { findings = devcopy::inspect(m).findings().size(); });
  devcopy::InspectOptions no_allocator;
  no_allocator.allocator = false;
  const double content_ms =
      median_ms(dev, [&] { devcopy::inspect(m, no_allocator); });
  const double clone_ms = median_ms(dev, [&] {
    std::vector<at::Tensor> copies;
    for (const auto &p : m.parameters())
      copies.push_back(p.detach().clone());
    for (const auto &b : m.buffers())
      copies.push_back(b.clone());
    sync(dev);
  });
  const double ratio = inspect_ms / clone_ms;
  std::printf("probe_inspect %-6s %s in %zu tensors, %d threads: inspect %.3f "
              "ms (%.3f ms without "
              "the allocator), clone %.3f ms, ratio %.2f (target <= %.1f) %s "
              "[%zu finding(s)]\n",
              name.c_str(), devcopy::format_bytes(bytes).c_str(),
              m.parameters().size() + m.buffers().size(), at::get_num_threads(),
              inspect_ms, content_ms, clone_ms, ratio, target,
              ratio <= target ? "ok" : "OVER", findings);
}

void run(const at::Device &dev, std::int64_t mib, double target) {
  Model m(mib, dev);
  measure(m, dev, dev.str(), target);
}

void run_cross(std::int64_t mib) {
  if (torch::cuda::device_count() < 2) {
    std::printf("probe_inspect cross: needs 2 CUDA devices, this machine has "
                "%d, skipped\n",
                static_cast<int>(torch::cuda::device_count()));
    return;
  }
  CrossModel m(mib);
  const at::Device dev(at::kCUDA, 0);
  measure(m, dev, "cross", 1.0);
  // An exact comparison across GPUs must bring one side's bytes over the
  // link, so the copy that does only that is the other yardstick.
  std::int64_t crossing = 0;
  for (const auto &b : m.buffers())
    crossing += b.nbytes();
  const double inspect_ms = median_ms(dev, [&] { devcopy::inspect(m); });
  const double copy_ms = median_ms(dev, [&] {
    std::vector<at::Tensor> copies;
    for (const auto &b : m.buffers())
      copies.push_back(b.to(dev));
    sync(dev);
  });
  std::printf("probe_inspect cross  inspect %.3f ms, copy of the cuda:1 side "
              "to cuda:0 (%s) %.3f ms, "
              "ratio %.2f\n",
              inspect_ms, devcopy::format_bytes(crossing).c_str(), copy_ms,
              inspect_ms / copy_ms);
}

} // namespace

int main(int argc, char **argv) {
  const std::string which = argc > 1 ? argv[1] : "both";
  const std::int64_t mib = argc > 2 ? std::atoll(argv[2]) : 0;
  if (which != "cpu" && which != "cuda" && which != "cross" &&
      which != "both") {
    std::fprintf(stderr, "usage: probe_inspect [cuda|cpu|cross|both] [MiB]\n");
    return 2;
  }
  torch::NoGradGuard no_grad;
  if (which == "cross") {
    run_cross(mib ? mib : 1024);
    return 0;
  }
  if (which != "cpu") {
    if (torch::cuda::is_available())
      run(at::kCUDA, mib ? mib : 2048, 1.0);
    else
      std::printf("probe_inspect cuda: no CUDA device, skipped\n");
  }
  if (which == "both" && torch::cuda::is_available())
    run_cross(mib ? mib / 2 : 1024);
  if (which != "cuda")
    run(at::kCPU, mib ? mib : 512, 1.5);
  return 0;
}
