#include "mirror.h"

#include <string>

namespace py = pybind11;

namespace devcopy::python {
namespace {

// Calls `f(name, value)` for each item of a module's _parameters, _buffers or
// _modules: a dict in eager modules (iterated without Python calls), a
// mapping otherwise.
template <class F>
void for_items(py::handle module, const char* attr, F&& f) {
  py::object items = module.attr(attr);
  if (PyDict_Check(items.ptr())) {
    PyObject* key;
    PyObject* value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(items.ptr(), &pos, &key, &value))
      if (value != Py_None) f(py::reinterpret_borrow<py::str>(key).cast<std::string>(), value);
    return;
  }
  for (py::handle item : items.attr("items")()) {
    py::tuple kv = py::reinterpret_borrow<py::tuple>(item);
    if (!kv[1].is_none()) f(kv[0].cast<std::string>(), kv[1].ptr());
  }
}

}  // namespace

const at::Tensor& unpack_tensor(py::handle obj, const char* what) {
  if (!THPVariable_Check(obj.ptr()))
    throw py::type_error(std::string("devcopy: ") + what + " is a " +
                         Py_TYPE(obj.ptr())->tp_name + ", not a torch.Tensor");
  return THPVariable_Unpack(obj.ptr());
}

namespace {

class Flatten {
 public:
  Flatten(bool grads, std::vector<std::pair<std::string, at::Tensor>>& compared,
          std::vector<std::pair<std::string, at::Tensor>>& reachable)
      : grads_(grads), compared_(compared), reachable_(reachable) {}

  // Torch's own module.named_parameters(recurse) order: the module's own,
  // then each child's, depth first; a module inside itself is not re-entered.
  void params(py::handle m, const std::string& prefix) {
    open_.insert(m.ptr());
    for_items(m, "_parameters", [&](const std::string& name, PyObject* p) {
      const at::Tensor& t = THPVariable_Check(p) ? THPVariable_Unpack(p)
                                                 : unpack_tensor(p, ("parameter " + prefix + name).c_str());
      compared_.emplace_back(prefix + name, t);
      if (grads_ && t.defined() && t.grad().defined())
        reachable_.emplace_back(prefix + name + ".grad", t.grad());
    });
    for_items(m, "_modules", [&](const std::string& name, PyObject* child) {
      if (!open_.count(child)) params(child, prefix + name + ".");
    });
    open_.erase(m.ptr());
  }

  void buffers(py::handle m, const std::string& prefix) {
    open_.insert(m.ptr());
    if (py::hasattr(m, "_buffers"))
      for_items(m, "_buffers", [&](const std::string& name, PyObject* b) {
        compared_.emplace_back(prefix + name, THPVariable_Check(b) ? THPVariable_Unpack(b)
                                              : unpack_tensor(b, ("buffer " + prefix + name).c_str()));
      });
    for_items(m, "_modules", [&](const std::string& name, PyObject* child) {
      if (!open_.count(child)) buffers(child, prefix + name + ".");
    });
    open_.erase(m.ptr());
  }

 private:
  bool grads_;
  std::vector<std::pair<std::string, at::Tensor>>& compared_;
  std::vector<std::pair<std::string, at::Tensor>>& reachable_;
  std::unordered_set<PyObject*> open_;
};

}  // namespace

void flatten(py::handle module, const std::string& prefix, bool gradients,
             std::vector<std::pair<std::string, at::Tensor>>& compared,
             std::vector<std::pair<std::string, at::Tensor>>& reachable) {
  if (!py::hasattr(module, "_parameters") || !py::hasattr(module, "_modules"))
    throw py::type_error(std::string("devcopy: a ") + Py_TYPE(module.ptr())->tp_name +
                         " is not a torch.nn.Module");
  Flatten f(gradients, compared, reachable);
  f.params(module, prefix);
  f.buffers(module, prefix);
}

std::shared_ptr<torch::nn::Module> Mirror::build(py::handle module) {
  auto found = done_.find(module.ptr());
  if (found != done_.end()) return found->second;
  const std::string type = py::str(py::type::handle_of(module).attr("__name__"));
  if (!py::hasattr(module, "_parameters") || !py::hasattr(module, "_modules"))
    throw py::type_error("devcopy: a " + type + " is not a torch.nn.Module");
  auto mirror = std::make_shared<torch::nn::Module>(type);
  done_.emplace(module.ptr(), mirror);
  open_.insert(module.ptr());
  for_items(module, "_parameters", [&](const std::string& name, PyObject* p) {
    const at::Tensor& t = unpack_tensor(p, ("parameter " + name).c_str());
    // register_parameter sets requires_grad: pass the tensor's own flag, so
    // nothing about the model changes.
    mirror->register_parameter(name, t, t.requires_grad());
  });
  if (py::hasattr(module, "_buffers"))
    for_items(module, "_buffers", [&](const std::string& name, PyObject* b) {
      mirror->register_buffer(name, unpack_tensor(b, ("buffer " + name).c_str()));
    });
  for_items(module, "_modules", [&](const std::string& name, PyObject* child) {
    // A module that contains its own ancestor: once is enough (a C++ tree
    // with a cycle would recurse forever).
    if (!open_.count(child)) mirror->register_module(name, build(child));
  });
  open_.erase(module.ptr());
  return mirror;
}

}  // namespace devcopy::python
