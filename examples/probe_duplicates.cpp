// The runtime probe on a module that holds a copy of its own weights.
//
// The decoder was initialised by copying the encoder (clone), where tying was
// meant: devcopy::inspect() reports duplicate-storage with both names. The
// tied output projection shares the embedding's storage: counted once, listed
// as information. The two LayerNorms hold equal (constant) weights: not
// copies, not reported. The meta buffer cannot be read: skipped, and said so.
// Runs on the CPU; `DEVCOPY_PROBE=fail probe_duplicates` makes check() throw.
#include <devcopy/probe.h>
#include <torch/torch.h>

#include <iostream>

struct Net : torch::nn::Module {
  torch::nn::Embedding embed{nullptr};
  torch::nn::Linear encoder{nullptr}, decoder{nullptr}, project{nullptr};
  Net() {
    embed = register_module("embed", torch::nn::Embedding(1000, 256));
    encoder = register_module("encoder", torch::nn::Linear(256, 256));
    decoder = register_module("decoder", torch::nn::Linear(256, 256));
    project = register_module("project", torch::nn::Linear(256, 1000));
    register_module("norm1",
                    torch::nn::LayerNorm(torch::nn::LayerNormOptions({256})));
    register_module("norm2",
                    torch::nn::LayerNorm(torch::nn::LayerNormOptions({256})));
    register_buffer(
        "shape_only",
        torch::empty({1024}, torch::TensorOptions().device(torch::kMeta)));
    torch::NoGradGuard no_grad;
    project->weight.set_data(embed->weight);           // tied: one storage
    decoder->weight.set_data(encoder->weight.clone()); // meant to tie: a copy
  }
};

int main() {
  Net net;
  devcopy::Report report = devcopy::inspect(net);
  std::cout << report << "\n" << report.to_json() << "\n";
  std::cout << "\n== devcopy::check(net), DEVCOPY_PROBE="
            << devcopy::to_string(devcopy::mode_from_env(devcopy::Mode::warn))
            << " ==" << std::endl;
  devcopy::check(net); // off: silent; warn: the report on stderr; fail: throws
}
