#include "models.h"

HostImpl::HostImpl() {
  fc = register_module("fc", torch::nn::Linear(4, 4));
  fc->to(torch::kCPU);
}

EarlyImpl::EarlyImpl(torch::Device device, bool move_early) {
  fc = register_module("fc", torch::nn::Linear(4, 4));
  if (move_early)
    to(device);
}
