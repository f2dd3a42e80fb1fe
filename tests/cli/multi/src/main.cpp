#include "models.h"

void apply_lora(torch::nn::Module &m); // rebuilds layers on the host

void train(torch::Device device, bool move_early) {
  Block block(device);
  block->to(device);
  Encoder encoder(device);
  apply_lora(*encoder);
  encoder->to(device);
  Net net(device);
  net->to(device);
  Pipeline pipeline(device);
  pipeline->to(device);
  Decoder decoder(device);
  decoder->to(device);
  auto built = build_plain(device);
  built->to(device);
  Block quiet(device);
  quiet->to(device); // NOLINT(devcopy-repeated-module-move)

  // Silent: a CPU-only constructor, opposite conditions, offload and reload,
  // one move anywhere.
  Host host;
  host->to(device);
  Early early(device, move_early);
  if (!move_early)
    early->to(device);
  Encoder offloaded(device);
  offloaded->to(torch::kCPU);
  offloaded->to(device);
  Plain plain;
  plain->to(device);
}
