#include "mirror.h"

#include <string>
#include <string_view>

namespace py = pybind11;

namespace devcopy::python {
namespace {

// Calls `f(name, value)` for each item of a module's _parameters, _buffers or
// _modules: a dict in eager modules (iterated without Python calls), a
// mapping otherwise.
template <class F> void for_items(py::handle module, const char *attr, F &&f) {
  py::object items = module.attr(attr);
  if (PyDict_Check(items.ptr())) {
    PyObject *key;
    PyObject *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(items.ptr(), &pos, &key, &value))
      if (value != Py_None)
        f(py::reinterpret_borrow<py::str>(key).cast<std::string>(), value);
    return;
  }
  for (py::handle item : items.attr("items")()) {
    py::tuple kv = py::reinterpret_borrow<py::tuple>(item);
    if (!kv[1].is_none())
      f(kv[0].cast<std::string>(), kv[1].ptr());
  }
}

} // namespace

const at::Tensor &unpack_tensor(py::handle obj, const char *what) {
  if (!THPVariable_Check(obj.ptr()))
    throw py::type_error(std::string("devcopy: ") + what + " is a " +
                         Py_TYPE(obj.ptr())->tp_name + ", not a torch.Tensor");
  return THPVariable_Unpack(obj.ptr());
}

namespace {

// A module's _parameters/_buffers/_modules: straight from its instance
// __dict__ (interned keys, no attribute protocol), else through getattr.
// Returns a new reference, or nullptr when the module has no such attribute.
PyObject *module_table(PyObject *m, PyObject *dict, PyObject *key) {
  if (dict) {
    if (PyObject *v = PyDict_GetItemWithError(dict, key))
      return Py_NewRef(v);
    if (PyErr_Occurred())
      throw py::error_already_set();
  }
  PyObject *v = PyObject_GetAttr(m, key);
  if (!v)
    PyErr_Clear();
  return v;
}

struct Keys {
  PyObject *parameters = PyUnicode_InternFromString("_parameters");
  PyObject *buffers = PyUnicode_InternFromString("_buffers");
  PyObject *modules = PyUnicode_InternFromString("_modules");
};

// Calls f(key, value) for each non-None item of a table (a dict, or a
// mapping with items()). `key` is borrowed UTF-8.
template <class F> void for_table(PyObject *table, F &&f) {
  if (!table || table == Py_None)
    return;
  if (PyDict_Check(table)) {
    PyObject *key;
    PyObject *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(table, &pos, &key, &value)) {
      if (value == Py_None)
        continue;
      Py_ssize_t n = 0;
      const char *k = PyUnicode_AsUTF8AndSize(key, &n);
      if (!k)
        throw py::error_already_set();
      f(std::string_view(k, static_cast<std::size_t>(n)), value);
    }
    return;
  }
  for (py::handle item :
       py::reinterpret_borrow<py::object>(table).attr("items")()) {
    py::tuple kv = py::reinterpret_borrow<py::tuple>(item);
    if (kv[1].is_none())
      continue;
    const std::string k = kv[0].cast<std::string>();
    f(std::string_view(k), kv[1].ptr());
  }
}

// One pre-order walk: parameters (each gradient after its parameter) go to
// `compared` as met, buffers to a side list appended after them, which is
// the C++ order (named_parameters, then named_buffers). The name is one
// string grown and shrunk in place.
class Flatten {
public:
  Flatten(bool grads, std::vector<std::pair<std::string, at::Tensor>> &compared,
          std::vector<std::pair<std::string, at::Tensor>> &reachable)
      : grads_(grads), compared_(compared), reachable_(reachable) {}

  void walk(PyObject *m) {
    open_.insert(m);
    PyObject *dict = PyObject_GenericGetDict(m, nullptr); // new reference
    if (!dict)
      PyErr_Clear();
    py::object guard = py::reinterpret_steal<py::object>(dict);
    const std::size_t base = name_.size();
    py::object params = py::reinterpret_steal<py::object>(
        module_table(m, dict, keys().parameters));
    for_table(params.ptr(), [&](std::string_view key, PyObject *p) {
      name_.append(key);
      const at::Tensor &t =
          THPVariable_Check(p)
              ? THPVariable_Unpack(p)
              : unpack_tensor(p, ("parameter " + name_).c_str());
      compared_.emplace_back(name_, t);
      if (grads_ && t.defined()) {
        const at::Tensor &g = t.mutable_grad();
        if (g.defined())
          reachable_.emplace_back(name_ + ".grad", g);
      }
      name_.resize(base);
    });
    py::object bufs = py::reinterpret_steal<py::object>(
        module_table(m, dict, keys().buffers));
    for_table(bufs.ptr(), [&](std::string_view key, PyObject *b) {
      name_.append(key);
      buffers_.emplace_back(
          name_, THPVariable_Check(b)
                     ? THPVariable_Unpack(b)
                     : unpack_tensor(b, ("buffer " + name_).c_str()));
      name_.resize(base);
    });
    py::object children = py::reinterpret_steal<py::object>(
        module_table(m, dict, keys().modules));
    for_table(children.ptr(), [&](std::string_view key, PyObject *child) {
      if (open_.count(child))
        return;
      name_.append(key);
      name_.push_back('.');
      walk(child);
      name_.resize(base);
    });
    open_.erase(m);
  }

  void finish() {
    compared_.reserve(compared_.size() + buffers_.size());
    for (auto &b : buffers_)
      compared_.push_back(std::move(b));
  }

  std::string name_;

private:
  static const Keys &keys() {
    static const Keys k; // interned once, never released
    return k;
  }
  bool grads_;
  std::vector<std::pair<std::string, at::Tensor>> &compared_;
  std::vector<std::pair<std::string, at::Tensor>> &reachable_;
  std::vector<std::pair<std::string, at::Tensor>> buffers_;
  std::unordered_set<PyObject *> open_;
};

} // namespace

void flatten(py::handle module, const std::string &prefix, bool gradients,
             std::vector<std::pair<std::string, at::Tensor>> &compared,
             std::vector<std::pair<std::string, at::Tensor>> &reachable) {
  if (!py::hasattr(module, "_parameters") || !py::hasattr(module, "_modules"))
    throw py::type_error(std::string("devcopy: a ") +
                         Py_TYPE(module.ptr())->tp_name +
                         " is not a torch.nn.Module");
  Flatten f(gradients, compared, reachable);
  f.name_ = prefix;
  f.walk(module.ptr());
  f.finish();
}

std::shared_ptr<torch::nn::Module> Mirror::build(py::handle module) {
  auto found = done_.find(module.ptr());
  if (found != done_.end())
    return found->second;
  const std::string type =
      py::str(py::type::handle_of(module).attr("__name__"));
  if (!py::hasattr(module, "_parameters") || !py::hasattr(module, "_modules"))
    throw py::type_error("devcopy: a " + type + " is not a torch.nn.Module");
  auto mirror = std::make_shared<torch::nn::Module>(type);
  done_.emplace(module.ptr(), mirror);
  open_.insert(module.ptr());
  for_items(module, "_parameters", [&](const std::string &name, PyObject *p) {
    const at::Tensor &t = unpack_tensor(p, ("parameter " + name).c_str());
    // register_parameter sets requires_grad: pass the tensor's own flag, so
    // nothing about the model changes.
    mirror->register_parameter(name, t, t.requires_grad());
  });
  if (py::hasattr(module, "_buffers"))
    for_items(module, "_buffers", [&](const std::string &name, PyObject *b) {
      mirror->register_buffer(name,
                              unpack_tensor(b, ("buffer " + name).c_str()));
    });
  for_items(module, "_modules", [&](const std::string &name, PyObject *child) {
    // A module that contains its own ancestor: once is enough (a C++ tree
    // with a cycle would recurse forever).
    if (!open_.count(child))
      mirror->register_module(name, build(child));
  });
  open_.erase(module.ptr());
  return mirror;
}

} // namespace devcopy::python
