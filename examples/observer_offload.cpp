// The seed's offload forward pass (see offload_forward.cpp) run under a
// devcopy::CopyObserver: the report shows one discarded copy per layer, named
// by a ModuleScope, then the same pass without the dropped copies reports
// none. On a GPU the copies go to the host with non_blocking, so each one
// also leaves a pinned block held (ineffective-non-blocking).
#include <devcopy/copy_observer.h>
#include <torch/torch.h>

#include <iostream>

int main() {
  torch::manual_seed(0);
  const bool cuda = torch::cuda::is_available();
  const torch::Device device = cuda ? torch::kCUDA : torch::kCPU;
  torch::nn::ModuleList layers;
  for (int i = 0; i < 8; ++i)
    layers->push_back(torch::nn::Linear(64, 64));
  layers->to(device);
  auto x = torch::randn({16, 64}, device);

  auto forward = [&](bool offload) {
    torch::Tensor prev = x, out;
    for (std::size_t i = 0; i < layers->size(); ++i) {
      devcopy::ModuleScope scope("layers." + std::to_string(i));
      out = torch::relu(layers[i]->as<torch::nn::Linear>()->forward(prev));
      // The seed's prev.to('cpu', non_blocking=True); on a CPU-only machine
      // copy=true makes the copy happen all the same.
      if (offload)
        prev.to(torch::kCPU, /*non_blocking=*/true, /*copy=*/true);
      prev = out;
    }
    return out;
  };

  {
    devcopy::CopyObserver observer;
    auto out = forward(/*offload=*/true);
    std::cout << "== with the dropped offload copies\n" << observer.report();
  }
  {
    devcopy::CopyObserver observer;
    auto out = forward(/*offload=*/false);
    out.sum().backward();
    std::cout << "== without them\n" << observer.report();
  }
  return 0;
}
