#include "models.h"

NetImpl::NetImpl(torch::Device device) {
  block = register_module("block", Block(device));
  auto h = torch::nn::Linear(8, 2);
  h->to(device);
  head = register_module("head", h);
}

PipelineImpl::PipelineImpl(torch::Device device) {
  stage = register_module("stage", Block(device));
}

Plain build_plain(torch::Device device) {
  Plain plain;
  plain->to(device);
  return plain;
}
