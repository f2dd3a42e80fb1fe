#include "models.h"

EncoderImpl::EncoderImpl(torch::Device device) {
  fc = register_module("fc", torch::nn::Linear(8, 8));
  this->to(device);
}

DecoderImpl::DecoderImpl(torch::Device device) {
  fc = register_module("fc", torch::nn::Linear(8, 8));
  to(device);
}
