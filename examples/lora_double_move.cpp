// The LoRA adapter that doubles VRAM (seeds/lora-adapter-doubles-vram.txt) in
// C++.
//
// Clip moves itself to the device in its own constructor. Ttd then applies an
// adapter that rebuilds each layer on the host (copying the weights) while a
// stray reference keeps every old layer alive, and moves everything again: the
// rebuilt layers are copied to the device a second time, next to the old ones
// still held there. On the H200 the seed measured 1024 MB allocated for 512 MB
// of parameters; without the early move, 512 MB.
//
// devcopy-tidy flags: devcopy-repeated-module-move (the second move, with a
// note at the first).
#include <torch/torch.h>

#include <iostream>

struct ClipImpl : torch::nn::Module {
  ClipImpl(int layers, int width, torch::Device device) {
    for (int i = 0; i < layers; ++i)
      blocks.push_back(register_module("block" + std::to_string(i),
                                       torch::nn::Linear(width, width)));
    eval();
    to(device); // the early move: everything built so far goes to the device
  }
  torch::Tensor forward(torch::Tensor x) {
    for (auto &b : blocks)
      x = b->forward(x);
    return x;
  }
  std::vector<torch::nn::Linear> blocks;
};
TORCH_MODULE(Clip);

// Rebuilds every layer on the host with the old weights, as a naive adapter
// does; the old layers are returned and kept (the stray reference).
std::vector<torch::nn::Linear> apply_adapter(Clip &clip, int width) {
  std::vector<torch::nn::Linear> old_layers;
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < clip->blocks.size(); ++i) {
    torch::nn::Linear fresh(width, width);
    fresh->weight.copy_(clip->blocks[i]->weight);
    fresh->bias.copy_(clip->blocks[i]->bias);
    old_layers.push_back(clip->blocks[i]);
    clip->blocks[i] = clip->replace_module("block" + std::to_string(i), fresh);
  }
  return old_layers;
}

struct TtdImpl : torch::nn::Module {
  TtdImpl(int layers, int width, torch::Device device)
      : model(register_module("model", Clip(layers, width, device))) {
    stray = apply_adapter(model, width);
    eval();
    to(device); // the second move: the rebuilt layers are copied again
  }
  torch::Tensor forward(torch::Tensor x) { return model->forward(x); }
  Clip model;
  std::vector<torch::nn::Linear> stray; // keeps the first copies alive
};
TORCH_MODULE(Ttd);

int main() {
  const torch::Device device =
      torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  Ttd ttd(/*layers=*/8, /*width=*/32, device);
  int64_t held = 0, live = 0;
  for (const auto &p : ttd->parameters())
    live += p.numel() * p.element_size();
  for (const auto &layer : ttd->stray)
    for (const auto &p : layer->parameters())
      held += p.numel() * p.element_size();
  auto y = ttd->forward(
      torch::randn({4, 32}, torch::TensorOptions().device(device)));
  std::cout << "lora_double_move: device " << device << ", model parameters "
            << live << " bytes, plus " << held
            << " bytes of replaced layers still held; output " << y.sizes()
            << "\n";
}
