// Fixture for the devcopy command's tests: one finding per rule it exercises.
#include <torch/torch.h>

void offload(torch::Tensor prev) {
  prev.to(torch::kCPU, true);  // discarded copy, with a fix-it
}

torch::Tensor step(torch::Tensor mask, torch::Tensor x, torch::Device dev) {
  torch::Tensor sum = x;
  for (int i = 0; i < 10; ++i) {
    sum = sum + mask.to(dev);  // same copy every iteration; a note names the loop
  }
  return sum;
}

torch::Tensor ones(torch::Device dev) {
  return torch::ones({4}).to(dev);  // created on the host, then moved
}

void silenced(torch::Tensor t) {
  t.to(torch::kCPU);  // NOLINT(devcopy-discarded-copy)
}
