// Internal: the storages a module (and its roots) reach, each counted once.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "backend.h"
#include "devcopy/probe.h"

namespace devcopy::detail {

/// What a storage is to the model, strongest first: a storage reached both as
/// a parameter and through an optimizer's param_groups is a parameter.
enum class Category : std::uint8_t {
  parameter,
  buffer,
  root,
  gradient,
  optimizer_state
};
const char *category_name(Category c);

/// One distinct storage, with every name that reaches it.
struct Storage {
  const void *key =
      nullptr; // the StorageImpl: identity, never dereferenced later
  c10::Device device = c10::kCPU;
  Span span;
  at::ScalarType dtype = at::kByte;
  std::vector<std::string> names; // names that take part in duplicate detection
  std::vector<std::string> others; // gradients, optimizer state: reachable only
  bool comparable = false;         // may be reported as a duplicate
  Category category = Category::root;
};

struct Collected {
  std::vector<Storage> storages;
  std::vector<Skipped> skipped;
};

/// Walks `module` and the roots of `options`. Odd tensors (undefined, meta,
/// sparse, quantized, ...) land in `skipped` with a reason, never in a crash.
Collected collect(const torch::nn::Module &module,
                  const InspectOptions &options);

std::string device_name(const c10::Device &device);

} // namespace devcopy::detail
