// The copy observer's location hook for Python: the file and line of the
// innermost Python frame outside torch and devcopy, on the copying thread.
// Compiled only when the probe has the hook (DEVCOPY_HAS_LOCATION_PROVIDER).
#include "location.h"

#if DEVCOPY_HAS_LOCATION_PROVIDER
#include <devcopy/copy_observer.h>
#include <frameobject.h>

#include <cstdlib>
#include <vector>

namespace py = pybind11;

namespace devcopy::python {
namespace {

std::vector<std::string>
    g_skip; // path prefixes of torch's and devcopy's packages

bool skipped(const char *file) {
  if (file == nullptr || file[0] == '<')
    return true; // "<frozen ...>", "<string>"
  for (const std::string &prefix : g_skip)
    if (std::strncmp(file, prefix.c_str(), prefix.size()) == 0)
      return true;
  return false;
}

// Called by the observer on the copying thread, without the GIL (torch's
// bindings release it around dispatch). A thread Python never ran on (an
// autograd engine thread) has no thread state: nothing to say, and no state
// is created for it.
SourceLocation python_location() {
  if (!Py_IsInitialized() || PyGILState_GetThisThreadState() == nullptr)
    return {};
  PyGILState_STATE gil = PyGILState_Ensure();
  SourceLocation where;
  PyFrameObject *f =
      PyThreadState_GetFrame(PyThreadState_Get()); // new reference
  while (f != nullptr) {
    PyCodeObject *code = PyFrame_GetCode(f); // new reference
    const char *file = PyUnicode_AsUTF8(code->co_filename);
    if (!skipped(file)) {
      where.file = file;
      where.line = PyFrame_GetLineNumber(f);
      if (const char *name = PyUnicode_AsUTF8(code->co_name))
        where.function = name;
      Py_DECREF(code);
      Py_DECREF(f);
      break;
    }
    PyFrameObject *back = PyFrame_GetBack(f); // new reference
    Py_DECREF(code);
    Py_DECREF(f);
    f = back;
  }
  if (PyErr_Occurred())
    PyErr_Clear();
  PyGILState_Release(gil);
  return where;
}

// The copying (or freeing) thread's Python frames, innermost first: at a
// copy up to the user's frame and its caller (which may drop what the user's
// function returned), at a free the innermost `max`. A frame is
// named by its frame object and code object, both alive while it runs.
// Torch releases the GIL around dispatch and while it frees a tensor, so
// both ends take it, as python_location does; only the thread that made
// the copy is asked at its free.
int python_statement(StatementFrame *out, int max, bool at_copy) {
  if (!Py_IsInitialized() || PyGILState_GetThisThreadState() == nullptr)
    return -1;
  PyGILState_STATE gil = PyGILState_Ensure();
  // A free may run while an exception propagates: keep it.
  PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
  PyErr_Fetch(&type, &value, &trace);
  int n = 0;
  int after_user = -1; // frames still wanted once the user's is found
  PyFrameObject *f =
      PyThreadState_GetFrame(PyThreadState_Get()); // new reference
  while (f != nullptr && n < max && after_user != 0) {
    PyCodeObject *code = PyFrame_GetCode(f); // new reference
    out[n].frame = reinterpret_cast<std::uintptr_t>(f) ^
                   (reinterpret_cast<std::uintptr_t>(code) << 1);
    out[n].line = PyFrame_GetLineNumber(f);
    ++n;
    if (after_user > 0)
      --after_user;
    else if (at_copy && after_user < 0 &&
             !skipped(PyUnicode_AsUTF8(code->co_filename)))
      after_user = 1;
    Py_DECREF(code);
    PyFrameObject *back = PyFrame_GetBack(f); // new reference
    Py_DECREF(f);
    f = back;
  }
  Py_XDECREF(f);
  PyErr_Clear();
  PyErr_Restore(type, value, trace);
  PyGILState_Release(gil);
  return n;
}

// Python's answer to "which watched module is running": a callable taking
// no argument that returns a name or None (_forward.copy_module). Leaked on
// purpose: it must outlive the interpreter's teardown order.
PyObject *g_scope = nullptr;

// Asked only for copies that may become findings, on the copying thread, like
// python_location; the callable reads the frames itself.
std::string python_scope() {
  if (g_scope == nullptr || !Py_IsInitialized() ||
      PyGILState_GetThisThreadState() == nullptr)
    return {};
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
  PyErr_Fetch(&type, &value, &trace);
  std::string name;
  if (PyObject *r = PyObject_CallNoArgs(g_scope)) { // new reference
    if (PyUnicode_Check(r))
      if (const char *s = PyUnicode_AsUTF8(r))
        name = s;
    Py_DECREF(r);
  }
  PyErr_Clear(); // a lookup that fails names no module; the copy goes on
  PyErr_Restore(type, value, trace);
  PyGILState_Release(gil);
  return name;
}

} // namespace

bool install_location_provider(const std::vector<std::string> &skip) {
  g_skip = skip;
  set_location_provider(&python_location);
  set_statement_provider(&python_statement);
  return true;
}

bool install_scope_provider(py::object lookup) {
  Py_XDECREF(g_scope);
  g_scope = lookup.release().ptr();
  set_scope_provider(&python_scope);
  return true;
}

void bind_location_fields(py::class_<Finding> &finding) {
  finding
      .def_property(
          "location",
          [](const Finding &f) {
            if (f.location.file.empty())
              return std::string();
            return f.location.file + ":" + std::to_string(f.location.line);
          },
          [](Finding &f, const std::string &text) {
            // "file:line", as the JSON's file and line give it back.
            const auto colon = text.rfind(':');
            f.location.file =
                colon == std::string::npos ? text : text.substr(0, colon);
            f.location.line = colon == std::string::npos
                                  ? 0
                                  : std::atoi(text.c_str() + colon + 1);
          })
      .def_property(
          "function", [](const Finding &f) { return f.location.function; },
          [](Finding &f, const std::string &s) { f.location.function = s; })
      .def_readwrite("count", &Finding::count);
}

} // namespace devcopy::python

#else

namespace devcopy::python {
bool install_location_provider(const std::vector<std::string> &) {
  return false;
}
bool install_scope_provider(pybind11::object) { return false; }
void bind_location_fields(pybind11::class_<Finding> &) {}
} // namespace devcopy::python

#endif
