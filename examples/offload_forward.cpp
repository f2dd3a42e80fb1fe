// The discarded offload copy (seeds/offload-copy-does-not-free.txt) in C++.
//
// The forward pass "offloads" each activation to the host as soon as the next
// layer has consumed it. But Tensor::to does not work in place: it returns a
// new tensor, which is dropped at once, so nothing leaves the device. (Even
// when assigned, autograd still holds `prev` for backward; the Python fix is
// torch.autograd.graph.save_on_cpu.) On the H200 the seed's 40 x Linear(4096)
// model peaks at 3266 MB either way. Sizes here are small so it runs anywhere.
//
// devcopy-tidy flags: devcopy-discarded-copy.
#include <torch/torch.h>

#include <iostream>

struct DeepModelImpl : torch::nn::Module {
  DeepModelImpl(int layer_num, int layer_size) {
    for (int i = 0; i < layer_num; ++i)
      layers.push_back(
          register_module("layer" + std::to_string(i),
                          torch::nn::Linear(layer_size, layer_size)));
  }

  torch::Tensor forward(torch::Tensor x, bool offload) {
    if (!offload) {
      for (auto &layer : layers)
        x = torch::relu(layer->forward(x));
      return x;
    }
    torch::Tensor prev = x;
    for (auto &layer : layers) {
      x = torch::relu(layer->forward(prev));
      prev.to(torch::kCPU,
              /*non_blocking=*/true); // the copy is made, then dropped
      prev = x;
    }
    return x;
  }

  std::vector<torch::nn::Linear> layers;
};
TORCH_MODULE(DeepModel);

int main() {
  torch::manual_seed(0);
  const torch::Device device =
      torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  DeepModel model(/*layer_num=*/40, /*layer_size=*/64);
  model->to(device);
  auto x = torch::randn({16, 64}, torch::TensorOptions().device(device));
  auto plain = model->forward(x, /*offload=*/false);
  auto offloaded = model->forward(x, /*offload=*/true);
  offloaded.sum().backward();
  std::cout << "offload_forward: device " << device
            << ", outputs equal: " << std::boolalpha
            << torch::allclose(plain, offloaded)
            << " (the 'offload' changed nothing: every activation stayed on "
               "the device)\n";
}
