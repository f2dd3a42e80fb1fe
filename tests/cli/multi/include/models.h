// The model classes of a small project: declared here, their constructors
// defined in src/*.cpp, the model created and moved in src/main.cpp.
#pragma once
#include <torch/torch.h>

// block.cpp: moves its member in its constructor.
struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(torch::Device device);
  torch::nn::Linear conv1{nullptr};
};
TORCH_MODULE(Block);

// encoder.cpp: moves itself in its constructor (`this->to(device)`).
struct EncoderImpl : torch::nn::Module {
  explicit EncoderImpl(torch::Device device);
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Encoder);

// encoder.cpp: moves itself in its constructor (a bare `to(device)`).
struct DecoderImpl : torch::nn::Module {
  explicit DecoderImpl(torch::Device device);
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Decoder);

// net.cpp: registers a Block, and a head it moved before registering it.
struct NetImpl : torch::nn::Module {
  explicit NetImpl(torch::Device device);
  Block block{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(Net);

// net.cpp: only registers a Block (whose constructor moves it).
struct PipelineImpl : torch::nn::Module {
  explicit PipelineImpl(torch::Device device);
  Block stage{nullptr};
};
TORCH_MODULE(Pipeline);

// host.cpp: moves its member to the CPU only; moves itself when asked to.
struct HostImpl : torch::nn::Module {
  HostImpl();
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Host);
struct EarlyImpl : torch::nn::Module {
  EarlyImpl(torch::Device device, bool move_early);
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Early);

// Nothing moves it but main.
struct PlainImpl : torch::nn::Module {
  PlainImpl() { fc = register_module("fc", torch::nn::Linear(4, 4)); }
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Plain);

// net.cpp: builds a Plain, moves it and returns it.
Plain build_plain(torch::Device device);
