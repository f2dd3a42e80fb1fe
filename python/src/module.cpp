// devcopy._C: the runtime probe's public C++ API (runtime_probe/include/
// devcopy/*.h) for Python. Python modules reach inspect() through a
// Mirror or flatten(), and CopyObserver::watch() through flatten() (mirror.h);
// everything else is the probe's own code. The package (python/devcopy) adds
// the Pythonic surface.
#include <devcopy/copy_observer.h>
#include <devcopy/distributed.h>
#include <devcopy/mode.h>
#include <devcopy/probe.h>
#include <devcopy/rules_catalog.h>

#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <atomic>
#include <chrono>
#include <sstream>

#include "location.h"
#include "mirror.h"
#include "timeline.h"

namespace py = pybind11;

namespace devcopy::python {
namespace {

std::string text(const Report &r) {
  std::ostringstream os;
  os << r;
  return os.str();
}

// The options of InspectOptions, by their C++ names; anything else is a typo
// the user should hear about.
void set_options(InspectOptions &o, const py::dict &options) {
  for (auto [key, value] : options) {
    const std::string k = py::str(key);
    if (k == "gradients")
      o.gradients = value.cast<bool>();
    else if (k == "allocator")
      o.allocator = value.cast<bool>();
    else if (k == "unreachable_threshold")
      o.unreachable_threshold = value.cast<std::int64_t>();
    else if (k == "cached_threshold")
      o.cached_threshold = value.cast<std::int64_t>();
    else if (k == "cached_ratio")
      o.cached_ratio = value.cast<double>();
    else if (k == "block_details")
      o.block_details = value.cast<int>();
    else
      throw py::type_error(
          "devcopy.inspect: unknown option '" + k +
          "' (options: gradients, allocator, unreachable_threshold, "
          "cached_threshold, cached_ratio, block_details)");
  }
}

using Named = std::vector<std::pair<std::string, py::handle>>;

// Roots: (name, tensor) and (name, module) pairs, (name, tensor) pairs held
// on purpose but never compared, and a Python optimizer's state.
struct Roots {
  Named tensors, modules, held, state;
};

InspectOptions make_options(const Roots &roots, const py::dict &options) {
  InspectOptions o;
  set_options(o, options);
  for (const auto &[name, m] : roots.modules)
    flatten(m, name + ".", o.gradients, o.tensors, o.held);
  for (const auto &[name, t] : roots.tensors)
    o.root(name, unpack_tensor(t, ("root " + name).c_str()));
  for (const auto &[name, t] : roots.held)
    o.hold(name, unpack_tensor(t, ("root " + name).c_str()));
  for (const auto &[name, t] : roots.state)
    o.hold_state(name, unpack_tensor(t, ("root " + name).c_str()));
  return o;
}

Report inspect_py(py::handle model, const Roots &roots,
                  const py::dict &options) {
  InspectOptions o = make_options(roots, options);
  // The model as named tensors of an empty module: the same storages,
  // names, roles and order as the C++ walk of a module tree, without
  // building one (a C++ module per Python module costs more than the
  // inspection).
  flatten(model, "", o.gradients, o.tensors, o.held);
  static const torch::nn::Module empty;
  py::gil_scoped_release no_gil; // inspect() touches no Python object
  return inspect(empty, o);
}

#ifdef DEVCOPY_HAS_DISTRIBUTED
// The model is flattened with its tensors' roles kept apart: parameters,
// buffers and gradients are told apart across ranks.
Report inspect_distributed_py(py::handle model, const Roots &roots,
                              const py::dict &options, py::handle group,
                              double timeout_seconds) {
  DistributedOptions o(make_options(roots, options));
  o.with_timeout(std::chrono::milliseconds(
      static_cast<std::int64_t>(timeout_seconds * 1000)));
  auto pg = group.cast<c10::intrusive_ptr<c10d::ProcessGroup>>();
  flatten(model, o.inspect.gradients, o.inspect.module_tensors);
  static const torch::nn::Module empty;
  py::gil_scoped_release no_gil;
  try {
    return inspect_distributed(empty, *pg, o);
  } catch (const DistributedError &e) {
    py::gil_scoped_acquire gil;
    throw py::value_error(e.what());
  }
}
#endif

// Rebuilds `r` with extra detail lines on some findings (the Python side's
// "held by" chains), so text and JSON carry them as any other detail.
Report
with_details(const Report &r,
             const std::map<std::size_t, std::vector<std::string>> &extra) {
  Report out;
  for (std::size_t i = 0; i < r.findings().size(); ++i) {
    Finding f = r.findings()[i];
    auto it = extra.find(i);
    if (it != extra.end())
      f.details.insert(f.details.end(), it->second.begin(), it->second.end());
    out.add(std::move(f));
  }
  for (const SharedStorage &s : r.shared())
    out.add(s);
  for (const DeviceMemory &d : r.devices())
    out.add(d);
  for (const CopyRoute &c : r.copies())
    out.add(c);
  for (const Skipped &s : r.skipped())
    out.add(s);
  out.set_host_syncs(r.host_syncs());
  return out;
}

// A model that an observer names when a finding first needs a name (a
// discarded copy, a move), never at entry: most observations of a test make
// no such finding. Walked then, on that thread, under the GIL. Holds the
// model, as the Python observation does, and counts its walks (tests read
// them).
class LazyModel {
public:
  LazyModel(py::handle model, std::string prefix)
      : model_(model.inc_ref().ptr()),
        prefix_(prefix.empty() ? "" : prefix + ".") {}
  LazyModel(const LazyModel &) = delete;
  LazyModel &operator=(const LazyModel &) = delete;
  ~LazyModel() {
    if (!Py_IsInitialized())
      return; // the interpreter is gone, and the model with it
    // The last owner may be a copying thread without the GIL.
    const PyGILState_STATE gil = PyGILState_Ensure();
    Py_DECREF(model_);
    PyGILState_Release(gil);
  }

  std::vector<std::pair<std::string, at::Tensor>> names() {
    std::vector<std::pair<std::string, at::Tensor>> named, unused;
    if (!Py_IsInitialized())
      return named;
    const PyGILState_STATE gil = PyGILState_Ensure();
    // A copy may run while an exception propagates: keep it.
    PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
    PyErr_Fetch(&type, &value, &trace);
    std::string error;
    try {
      flatten(model_, prefix_, /*gradients=*/false, named, unused);
    } catch (const std::exception &e) {
      error = e.what();
      named.clear();
    }
    walks_.fetch_add(1, std::memory_order_relaxed);
    PyErr_Clear();
    PyErr_Restore(type, value, trace);
    PyGILState_Release(gil);
    if (!error.empty())
      throw std::runtime_error(error);
    return named;
  }
  int walks() const { return walks_.load(std::memory_order_relaxed); }

private:
  PyObject *model_; // a strong reference
  std::string prefix_;
  std::atomic<int> walks_{0};
};

// A CopyObserver whose lifetime Python controls (close() or the context
// manager), since Python's garbage collector does not say when.
class Observer {
public:
  Observer() : observer_(std::make_unique<CopyObserver>()) {}
  Report report() const {
    if (!observer_)
      return last_;
    py::gil_scoped_release no_gil;
    return observer_->report();
  }
  // Named as the C++ walk names them (flatten), without building a module
  // tree, when first needed (LazyModel).
  void watch(py::handle model, const std::string &prefix) {
    if (!observer_)
      throw py::value_error("devcopy: this observer is closed");
    auto lazy = std::make_shared<LazyModel>(model, prefix);
    models_.push_back(lazy);
    // The observer's lock may be held by a copying thread that waits for
    // the GIL (the location hook): never take it while holding the GIL.
    py::gil_scoped_release no_gil;
    observer_->watch_lazily([lazy] { return lazy->names(); });
  }
  int name_walks() const {
    int n = 0;
    for (const auto &m : models_)
      n += m->walks();
    return n;
  }
  Report close() {
    if (observer_) {
      py::gil_scoped_release no_gil;
      last_ = observer_->report();
      observer_.reset();
    }
    return last_;
  }
  bool active() const { return observer_ != nullptr; }

private:
  // Declared first, so they outlive observer_ and are released with the GIL.
  std::vector<std::shared_ptr<LazyModel>> models_;
  std::unique_ptr<CopyObserver> observer_;
  Report last_;
};

// ModuleScope for a `with` block: one per entry, on the entering thread.
class Scope {
public:
  explicit Scope(std::string name) : name_(std::move(name)) {}
  void enter() { scope_ = std::make_unique<ModuleScope>(name_); }
  void exit() { scope_.reset(); }

private:
  std::string name_;
  std::unique_ptr<ModuleScope> scope_;
};

} // namespace
} // namespace devcopy::python

PYBIND11_MODULE(_C, m) {
  using namespace devcopy;
  using namespace devcopy::python;
  m.doc() = "devcopy's runtime probe (C++), bound for Python; use the devcopy "
            "package";

  py::class_<Finding> finding(m, "Finding");
  finding.def(py::init<>())
      .def_readwrite("kind", &Finding::kind)
      .def_readwrite("message", &Finding::message)
      .def_readwrite("bytes", &Finding::bytes)
      .def_readwrite("devices", &Finding::devices)
      .def_readwrite("tensors", &Finding::tensors)
      .def_readwrite("op", &Finding::op)
      .def_readwrite("module", &Finding::module)
      .def_readwrite("details", &Finding::details)
      .def("__str__", [](const Finding &f) {
        std::ostringstream os;
        os << f;
        return os.str();
      });
  bind_location_fields(finding);
  m.def("install_location_provider", &install_location_provider,
        py::arg("skip"));
  m.def("install_scope_provider", &install_scope_provider, py::arg("lookup"));
  py::class_<SharedStorage>(m, "SharedStorage")
      .def(py::init<>())
      .def_readwrite("device", &SharedStorage::device)
      .def_readwrite("bytes", &SharedStorage::bytes)
      .def_readwrite("tensors", &SharedStorage::tensors);
  py::class_<DeviceMemory>(m, "DeviceMemory")
      .def(py::init<>())
      .def_readwrite("device", &DeviceMemory::device)
      .def_readwrite("reachable_bytes", &DeviceMemory::reachable_bytes)
      .def_readwrite("allocated_bytes", &DeviceMemory::allocated_bytes)
      .def_readwrite("reserved_bytes", &DeviceMemory::reserved_bytes)
      .def_readwrite("reserved_unused_bytes",
                     &DeviceMemory::reserved_unused_bytes)
      .def_readwrite("largest_free_block", &DeviceMemory::largest_free_block);
  py::class_<CopyRoute>(m, "CopyRoute")
      .def(py::init<>())
      .def_readwrite("src_device", &CopyRoute::src_device)
      .def_readwrite("dst_device", &CopyRoute::dst_device)
      .def_readwrite("dtype", &CopyRoute::dtype)
      .def_readwrite("count", &CopyRoute::count)
      .def_readwrite("bytes", &CopyRoute::bytes);
  py::class_<Skipped>(m, "Skipped")
      .def(py::init<>())
      .def_readwrite("tensor", &Skipped::tensor)
      .def_readwrite("reason", &Skipped::reason);

  bind_timeline(m);
  py::class_<Report>(m, "Report")
      .def(py::init<>())
      .def_property_readonly("timelines", &Report::timelines)
      .def_property_readonly("findings",
                             [](const Report &r) { return r.findings(); })
      .def_property_readonly("shared", &Report::shared)
      .def_property_readonly("devices", &Report::devices)
      .def_property_readonly("copies", &Report::copies)
      .def_property_readonly("skipped", &Report::skipped)
      .def_property_readonly("host_syncs", &Report::host_syncs)
      .def_property_readonly("wasted_bytes", &Report::wasted_bytes)
      .def("to_json", &Report::to_json)
      .def("only", [](const Report &r,
                      const std::string &kind) { return only(r, kind); })
      .def("merged",
           [](const Report &r, const Report &other) {
             Report out = r;
             out.merge(other);
             return out;
           })
      .def("with_details", &with_details)
      .def("add", [](Report &r, const Finding &x) { r.add(x); })
      .def("add", [](Report &r, const SharedStorage &x) { r.add(x); })
      .def("add", [](Report &r, const DeviceMemory &x) { r.add(x); })
      .def("add", [](Report &r, const CopyRoute &x) { r.add(x); })
      .def("add", [](Report &r, const Skipped &x) { r.add(x); })
      .def("add", [](Report &r, const DeviceTimeline &x) { r.add(x); })
      .def("set_host_syncs", &Report::set_host_syncs)
      .def("__str__", &text);

  // roots: the four lists of devcopy._roots.Roots.
  m.def("inspect", [](py::handle model, Named tensors, Named modules,
                      Named held, Named state, const py::dict &options) {
    return inspect_py(model, {tensors, modules, held, state}, options);
  });
#ifdef DEVCOPY_HAS_DISTRIBUTED
  m.def("inspect_distributed",
        [](py::handle model, Named tensors, Named modules, Named held,
           Named state, const py::dict &options, py::handle group,
           double timeout) {
          return inspect_distributed_py(model, {tensors, modules, held, state},
                                        options, group, timeout);
        });
#endif
  // bench/python_inspect.py: the C++ call on the same model, timed in C++
  // (the mirror built once, outside the clock), seconds per call.
  m.def("_time_cpp_inspect", [](py::handle model, int rounds) {
    Mirror mirror;
    std::shared_ptr<torch::nn::Module> root = mirror.build(model);
    std::vector<double> seconds;
    py::gil_scoped_release no_gil;
    for (int i = 0; i < rounds; ++i) {
      const auto start = std::chrono::steady_clock::now();
      Report r = inspect(*root);
      seconds.push_back(std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - start)
                            .count());
    }
    return seconds;
  });
  // Tests: the C++ walk of a mirrored module tree, the reference that
  // inspect()'s flattened route must match exactly.
  m.def("_cpp_inspect", [](py::handle model) {
    Mirror mirror;
    std::shared_ptr<torch::nn::Module> root = mirror.build(model);
    py::gil_scoped_release no_gil;
    return inspect(*root);
  });
  m.def("available_memory", [](const std::string &device) {
    return available_memory(c10::Device(device));
  });
  m.def("format_bytes", &format_bytes);
  // The runtime rule ids and summaries (rules/*.md), for the pytest marker.
  m.def("runtime_rules", [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const rules::Rule &r : rules::kAll)
      if (r.kind == "runtime")
        out.emplace_back(std::string(r.id), std::string(r.summary));
    return out;
  });
  // The mode DEVCOPY_PROBE names, read by the probe's own code (one place).
  m.def("mode_from_env", [](const std::string &fallback) {
    return std::string(to_string(mode_from_env(parse_mode(fallback))));
  });
  m.def("parse_mode", [](const std::string &s) {
    return std::string(to_string(parse_mode(s)));
  });
  m.def("mark_read", [](py::handle t) {
    mark_read(unpack_tensor(t, "mark_read's argument"));
  });

  py::class_<Observer>(m, "Observer")
      .def(py::init<>())
      .def("report", &Observer::report)
      .def("watch", &Observer::watch, py::arg("model"), py::arg("prefix") = "")
      .def("close", &Observer::close)
      .def_property_readonly("name_walks", &Observer::name_walks)
      .def_property_readonly("active", &Observer::active);
  py::class_<Scope>(m, "Scope")
      .def(py::init<std::string>())
      .def("enter", &Scope::enter)
      .def("exit", &Scope::exit);
}
