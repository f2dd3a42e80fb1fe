// What a CopyObserver costs on a training step, beside what LibTorch's own
// profiler (torch::autograd::profiler::RecordProfile) costs on the same step.
//
// A mid-size MLP (Linear + LayerNorm + GELU blocks, Adam, MSE loss, the batch
// copied from pinned host memory each step, the loss read each step) runs in
// rounds; each round times the same number of steps plain, under an observer,
// under a do-nothing RecordFunction callback that needs inputs (the floor any
// such observer pays) and under the profiler, in rotating order. Medians over
// rounds; the ratios are against plain. Target for the observer: <= 1.05 on a
// GPU.
//
// Usage: observer_step [--steps N] [--rounds R] [--cpu]
#include <ATen/record_function.h>
#include <devcopy/copy_observer.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <ostream>
#include <streambuf>
#include <string>

namespace {

struct Shape {
  const char *name;
  int width, depth, batch;
};

struct MlpImpl : torch::nn::Module {
  torch::nn::Sequential body;
  MlpImpl(const Shape &s)
      : body(register_module("body", torch::nn::Sequential())) {
    for (int i = 0; i < s.depth; ++i) {
      body->push_back(torch::nn::Linear(s.width, s.width));
      body->push_back(
          torch::nn::LayerNorm(torch::nn::LayerNormOptions({s.width})));
      body->push_back(torch::nn::GELU());
    }
  }
  torch::Tensor forward(torch::Tensor x) { return body->forward(x); }
};
TORCH_MODULE(Mlp);

// The profiler's trace goes nowhere: only its recording cost is measured.
struct NullBuffer : std::streambuf {
  int overflow(int c) override { return c; }
};

enum Mode { kPlain, kObserver, kFloor, kProfiler, kModes };
const char *const kNames[kModes] = {"plain", "observer", "floor", "profiler"};

// The floor: a global RecordFunction callback that needs inputs and does
// nothing. What the observer costs above it is its own work.
std::unique_ptr<at::ObserverContext> nothing(const at::RecordFunction &) {
  return nullptr;
}
struct Floor {
  at::CallbackHandle handle = at::addGlobalCallback(
      at::RecordFunctionCallback(&nothing).needsInputs(true).scopes(
          {at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
           at::RecordScope::USER_SCOPE}));
  ~Floor() { at::removeCallback(handle); }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Result {
  double ms[kModes];
  std::int64_t copies = 0;
  std::size_t findings = 0;
};

Result measure(const Shape &shape, torch::Device device, int steps,
               int rounds) {
  const bool cuda = device.is_cuda();
  torch::manual_seed(0);
  Mlp model(shape);
  model->to(device);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-4));
  auto host_x = torch::randn({shape.batch, shape.width});
  auto host_y = torch::randn({shape.batch, shape.width});
  if (cuda) {
    host_x = host_x.pin_memory();
    host_y = host_y.pin_memory();
  }
  auto step = [&] {
    auto x = host_x.to(device, /*non_blocking=*/cuda);
    auto y = host_y.to(device, /*non_blocking=*/cuda);
    opt.zero_grad();
    auto loss = torch::mse_loss(model->forward(x), y);
    loss.backward();
    opt.step();
    return loss.item<float>(); // logging the loss: one sync per step
  };
  auto timed = [&](int n) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i)
      step();
    if (cuda)
      torch::cuda::synchronize();
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - t0)
               .count() /
           n;
  };

  for (int i = 0; i < 5; ++i)
    step(); // warm-up: allocator, kernels, Adam state
  NullBuffer null_buffer;
  std::ostream null_stream(&null_buffer);
  std::vector<double> ms[kModes];
  devcopy::Report seen;
  for (int r = 0; r < rounds; ++r) {
    for (int k = 0; k < kModes; ++k) {
      const Mode mode = static_cast<Mode>((r + k) % kModes); // rotate the order
      if (mode == kPlain) {
        ms[mode].push_back(timed(steps));
      } else if (mode == kObserver) {
        devcopy::CopyObserver observer;
        ms[mode].push_back(timed(steps));
        seen = observer.report();
      } else if (mode == kFloor) {
        Floor floor;
        ms[mode].push_back(timed(steps));
      } else {
        torch::autograd::profiler::RecordProfile profile(null_stream);
        ms[mode].push_back(timed(steps));
      } // the profiler writes its trace here, outside the timing
    }
  }
  Result result;
  for (int k = 0; k < kModes; ++k)
    result.ms[k] = median(ms[k]);
  for (const auto &c : seen.copies())
    result.copies += c.count;
  result.findings = seen.findings().size();
  return result;
}

} // namespace

int main(int argc, char **argv) {
  int steps = 0, rounds = 7;
  bool force_cpu = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--steps") && i + 1 < argc)
      steps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--cpu"))
      force_cpu = true;
    else {
      std::cerr
          << "observer_step: unknown argument '" << argv[i]
          << "' (usage: observer_step [--steps N] [--rounds R] [--cpu])\n";
      return 2;
    }
  }
  const bool cuda = !force_cpu && torch::cuda::is_available();
  const torch::Device device =
      cuda ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  // A mid-size model for the device (134M parameters on a GPU, 0.4M on the
  // CPU), and on a GPU also a small one whose step is bound by the host
  // launching ops: there every op's RecordFunction cost shows in full.
  if (rounds < 1)
    rounds = 1;
  // Built, not assigned: GCC 13 warns (-Wnonnull) on assigning a braced list
  // to an empty vector.
  const std::vector<Shape> shapes =
      cuda ? std::vector<Shape>{{"mid-size", 4096, 8, 1024},
                                {"launch-bound", 1024, 8, 256}}
           : std::vector<Shape>{{"mid-size", 256, 6, 64}};
  for (const Shape &shape : shapes) {
    const Result r =
        measure(shape, device, steps > 0 ? steps : (cuda ? 20 : 10), rounds);
    std::printf("observer_step: %s %s, %d x (Linear(%d) + LayerNorm + GELU), "
                "batch %d, Adam; "
                "%d rounds, median ms/step\n",
                device.str().c_str(), shape.name, shape.depth, shape.width,
                shape.batch, rounds);
    for (int k = 0; k < kModes; ++k) {
      std::printf("  %-9s %9.3f ms/step", kNames[k], r.ms[k]);
      if (k != kPlain)
        std::printf("   ratio %.3f", r.ms[k] / r.ms[kPlain]);
      std::printf("\n");
    }
    const double ratio = r.ms[kObserver] / r.ms[kPlain];
    std::printf("  observer ratio %.3f (target <= 1.05 on a GPU), profiler "
                "ratio %.3f; the "
                "observer saw %lld copies and %zu findings in its last round; "
                "stack capture %s\n",
                ratio, r.ms[kProfiler] / r.ms[kPlain],
                static_cast<long long>(r.copies), r.findings,
                devcopy::locates_copies() ? "on" : "off (no libbacktrace)");
  }
  return 0;
}
