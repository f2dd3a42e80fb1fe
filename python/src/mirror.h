// A Python torch.nn.Module seen as a torch::nn::Module: the same tensors
// (TensorImpls shared, nothing copied, nothing changed), registered under the
// same names in a C++ module tree of the same shape, so the probe's inspect()
// and CopyObserver::watch() read a Python model exactly as a C++ one: tied
// weights and shared submodules stay shared, None entries are left out.
#pragma once

#include <devcopy/probe.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/nn/module.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace devcopy::python {

/// Mirrors Python modules. One instance per call: shared submodules map to
/// one C++ module. Throws pybind11::type_error, naming the object's path, on
/// one that is not a torch.nn.Module; any subclass is accepted.
class Mirror {
public:
  std::shared_ptr<torch::nn::Module> build(pybind11::handle module);

private:
  std::shared_ptr<torch::nn::Module> build(pybind11::handle module,
                                           const std::string &path);
  std::unordered_map<PyObject *, std::shared_ptr<torch::nn::Module>> done_;
  std::unordered_set<PyObject *> open_; // being built: its ancestors
};

/// The tensors of a Python module tree as inspect() roots, named as the C++
/// walk names them ("<prefix>blocks.0.weight"), in its order (parameters
/// pre-order with each gradient after its parameter, then buffers), without
/// building modules: the cheap route for inspect(). Parameters and buffers go
/// to `compared`, gradients to `reachable`.
void flatten(pybind11::handle module, const std::string &prefix, bool gradients,
             std::vector<std::pair<std::string, at::Tensor>> &compared,
             std::vector<std::pair<std::string, at::Tensor>> &reachable);

/// The same walk with the roles kept apart (parameters, buffers, gradients):
/// the route for inspect_distributed(), which counts each role on its own.
void flatten(pybind11::handle module, bool gradients,
             InspectOptions::ModuleTensors &out);

/// The tensor a Python torch.Tensor holds; throws pybind11::type_error naming
/// `what` otherwise.
const at::Tensor &unpack_tensor(pybind11::handle obj, const char *what);

} // namespace devcopy::python
