// Fixture: code devcopy must stay silent on.
#include <torch/torch.h>

torch::Tensor fine(torch::Tensor t, torch::Device dev) {
  auto moved = t.to(dev);
  return moved.sum();
}

torch::Tensor made_there(torch::Device dev) {
  return torch::ones({4}, torch::TensorOptions().device(dev));
}
