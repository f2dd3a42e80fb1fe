// The runtime probe on the two CUDA memory seeds.
//
// 1. seeds/lora-adapter-doubles-vram.txt: an inner module moves itself to
//    the GPU in its constructor, an adapter rebuilds its layers on the host
//    keeping the old ones, and the owner moves everything again:
//    unreachable-allocation of about the model's size.
// 2. seeds/reserved-memory-not-reused.txt: 8 x 256 MiB freed, then one
//    larger block: cached-memory, and devcopy::available_memory() counting
//    the cached bytes the driver does not.
// Needs a CUDA device; on the CPU it says so and shows the host figures.
#include <devcopy/probe.h>
#include <torch/torch.h>

#include <iostream>

struct Inner : torch::nn::Module {
  explicit Inner(torch::Device device) {
    for (int i = 0; i < 16; ++i)
      register_module("layer" + std::to_string(i),
                      torch::nn::Linear(2048, 2048));
    to(device); // too early: the owner moves it again
  }
};

struct Owner : torch::nn::Module {
  std::vector<std::shared_ptr<torch::nn::Module>>
      stray; // the adapter's old layers
  explicit Owner(torch::Device device) {
    auto inner = register_module("inner", std::make_shared<Inner>(device));
    torch::NoGradGuard no_grad;
    for (const auto &item : inner->named_children()) {
      torch::nn::Linear fresh(2048, 2048); // rebuilt on the host
      fresh->weight.copy_(item.value()->named_parameters()["weight"]);
      fresh->bias.copy_(item.value()->named_parameters()["bias"]);
      stray.push_back(item.value());
      inner->replace_module(item.key(), fresh.ptr());
    }
    to(device);
  }
};

int main() {
  if (!torch::cuda::is_available()) {
    std::cout << "probe_gpu_memory: no CUDA device; unreachable-allocation and "
                 "cached-memory "
                 "read the CUDA caching allocator. Host memory available: "
              << devcopy::format_bytes(devcopy::available_memory(torch::kCPU))
              << "\n";
    return 0;
  }
  {
    Owner owner(torch::kCUDA);
    std::cout << "== double VRAM ==\n" << devcopy::inspect(owner) << "\n";
  }
  const auto bytes = torch::TensorOptions(torch::kByte).device(torch::kCUDA);
  {
    std::vector<torch::Tensor> chunks;
    for (int i = 0; i < 8; ++i)
      chunks.push_back(torch::empty({256 << 20}, bytes));
  }
  torch::Tensor big = torch::empty({std::int64_t{3} << 30}, bytes);
  torch::nn::Module none;
  std::cout << "== reserved memory not reused ==\n"
            << devcopy::inspect(none,
                                devcopy::InspectOptions().root("big", big))
            << "available on cuda:0 (driver free + cached): "
            << devcopy::format_bytes(devcopy::available_memory(torch::kCUDA))
            << "\n";
}
