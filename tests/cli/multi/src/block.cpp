#include "models.h"

BlockImpl::BlockImpl(torch::Device device) {
  conv1 = register_module("conv1", torch::nn::Linear(8, 8));
  conv1->to(device);
}
