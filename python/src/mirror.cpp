#include "mirror.h"

#include <cstring>
#include <string>
#include <string_view>

namespace py = pybind11;

namespace devcopy::python {
namespace {

std::string a_type(py::handle obj) {
  const std::string name = Py_TYPE(obj.ptr())->tp_name;
  const bool vowel = !name.empty() && std::strchr("aeiouAEIOU", name[0]);
  return (vowel ? "an " : "a ") + name;
}

} // namespace

const at::Tensor &unpack_tensor(py::handle obj, const char *what) {
  if (!THPVariable_Check(obj.ptr()))
    throw py::type_error(std::string("devcopy: ") + what + " is " +
                         a_type(obj) + ", not a torch.Tensor");
  return THPVariable_Unpack(obj.ptr());
}

namespace {

void require_module(py::handle obj, const std::string &what) {
  // torch.nn.Module itself, imported once: any subclass is accepted, however
  // it overrides attribute access or whether it ran Module.__init__.
  static PyObject *module_type =
      py::object(py::module_::import("torch.nn").attr("Module"))
          .release()
          .ptr();
  const int is = PyObject_IsInstance(obj.ptr(), module_type);
  if (is < 0)
    throw py::error_already_set();
  if (!is)
    throw py::type_error("devcopy: " + what + " is " + a_type(obj) +
                         ", not a torch.nn.Module");
}

// A module's _parameters/_buffers/_modules: straight from its instance
// __dict__ (interned keys, no attribute protocol, so no user override runs),
// else through getattr. Returns a new reference, or nullptr when the module
// has no such attribute (a subclass that never ran Module.__init__).
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

const Keys &keys() {
  static const Keys k; // interned once, never released
  return k;
}

// The three tables of one module (each None-like when absent).
struct Tables {
  py::object parameters, buffers, modules;
  explicit Tables(PyObject *m) {
    PyObject *dict = PyObject_GenericGetDict(m, nullptr); // new reference
    if (!dict)
      PyErr_Clear();
    py::object guard = py::reinterpret_steal<py::object>(dict);
    parameters = py::reinterpret_steal<py::object>(
        module_table(m, dict, keys().parameters));
    buffers = py::reinterpret_steal<py::object>(
        module_table(m, dict, keys().buffers));
    modules = py::reinterpret_steal<py::object>(
        module_table(m, dict, keys().modules));
  }
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
    const Tables tables(m);
    const std::size_t base = name_.size();
    for_table(tables.parameters.ptr(), [&](std::string_view key, PyObject *p) {
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
    for_table(tables.buffers.ptr(), [&](std::string_view key, PyObject *b) {
      name_.append(key);
      buffers_.emplace_back(
          name_, THPVariable_Check(b)
                     ? THPVariable_Unpack(b)
                     : unpack_tensor(b, ("buffer " + name_).c_str()));
      name_.resize(base);
    });
    for_table(tables.modules.ptr(), [&](std::string_view key, PyObject *child) {
      if (open_.count(child))
        return;
      name_.append(key);
      require_module(child, "submodule " + name_);
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
  std::vector<std::pair<std::string, at::Tensor>> take_buffers() {
    return std::move(buffers_);
  }

  std::string name_;

private:
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
  require_module(module, "the model");
  Flatten f(gradients, compared, reachable);
  f.name_ = prefix;
  f.walk(module.ptr());
  f.finish();
}

void flatten(py::handle module, bool gradients,
             InspectOptions::ModuleTensors &out) {
  require_module(module, "the model");
  Flatten f(gradients, out.parameters, out.gradients);
  f.walk(module.ptr());
  out.buffers = f.take_buffers();
}

std::shared_ptr<torch::nn::Module> Mirror::build(py::handle module) {
  require_module(module, "the model");
  return build(module, "");
}

std::shared_ptr<torch::nn::Module> Mirror::build(py::handle module,
                                                 const std::string &path) {
  auto found = done_.find(module.ptr());
  if (found != done_.end())
    return found->second;
  auto mirror = std::make_shared<torch::nn::Module>(
      py::str(py::type::handle_of(module).attr("__name__")));
  done_.emplace(module.ptr(), mirror);
  open_.insert(module.ptr());
  const Tables tables(module.ptr());
  for_table(tables.parameters.ptr(), [&](std::string_view key, PyObject *p) {
    const std::string name(key);
    const at::Tensor &t =
        unpack_tensor(p, ("parameter " + path + name).c_str());
    // register_parameter sets requires_grad: pass the tensor's own flag, so
    // nothing about the model changes.
    mirror->register_parameter(name, t, t.requires_grad());
  });
  for_table(tables.buffers.ptr(), [&](std::string_view key, PyObject *b) {
    const std::string name(key);
    mirror->register_buffer(
        name, unpack_tensor(b, ("buffer " + path + name).c_str()));
  });
  for_table(tables.modules.ptr(), [&](std::string_view key, PyObject *child) {
    // A module that contains its own ancestor: once is enough (a C++ tree
    // with a cycle would recurse forever).
    const std::string name(key);
    if (open_.count(child))
      return;
    require_module(child, "submodule " + path + name);
    mirror->register_module(name, build(child, path + name + "."));
  });
  open_.erase(module.ptr());
  return mirror;
}

} // namespace devcopy::python
