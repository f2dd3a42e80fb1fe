// Host-created tensors moved every step, and .item() every step: the training
// loop pattern the PyTorch tuning guide warns about, in C++.
//
// Each step fills its noise and labels on the host and copies them to the
// device (create them there instead), copies the loop-invariant class weights
// again (hoist the copy), and reads the loss with .item(), a device-to-host
// sync that stalls the pipeline every iteration (accumulate on the device,
// read once).
//
// devcopy-tidy flags: devcopy-create-then-move, devcopy-copy-in-loop,
// devcopy-host-sync-in-loop.
#include <torch/torch.h>

#include <iostream>

int main() {
  torch::manual_seed(0);
  const torch::Device device =
      torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  const int64_t batch = 32, features = 16, classes = 4, steps = 20;

  torch::nn::Sequential model(torch::nn::Linear(features, 32),
                              torch::nn::ReLU(),
                              torch::nn::Linear(32, classes));
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(),
                              torch::optim::SGDOptions(0.1));
  auto class_weights = torch::ones({classes});

  double running_loss = 0;
  for (int64_t step = 0; step < steps; ++step) {
    auto inputs =
        torch::randn({batch, features}).to(device); // made on the host, moved
    auto labels =
        torch::randint(classes, {batch}).to(device); // made on the host, moved
    auto weights = class_weights.to(device);         // the same copy every step
    auto loss = torch::nn::functional::cross_entropy(
        model->forward(inputs), labels,
        torch::nn::functional::CrossEntropyFuncOptions().weight(weights));
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    running_loss += loss.item<double>(); // a sync every step
  }
  std::cout << "training_step: device " << device << ", mean loss "
            << running_loss / steps << "\n";
}
