// libbacktrace behind copy_observer_stack.h. A frame belongs to a library
// when its object file is one (libtorch*, libc10*, the C++ and CUDA
// runtimes, Python) or, for code inlined into the user's binary, when its
// source lies in LibTorch's, the standard library's or devcopy's headers.
#include "copy_observer_stack.h"

#include <cxxabi.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#if DEVCOPY_HAS_BACKTRACE
#include <backtrace.h>
#endif

namespace devcopy::observer {

std::uint64_t Stack::hash() const {
  std::uint64_t h = 0;
  for (int i = 0; i < size; ++i)
    h = (h ^ pc[i]) * 0x100000001B3ull + 0x9E3779B97F4A7C15ull;
  return size ? h | 1 : 0;
}

#if DEVCOPY_HAS_BACKTRACE
namespace {

void ignore_error(void *, const char *, int) {}

backtrace_state *state() {
  static backtrace_state *s =
      backtrace_create_state(nullptr, /*threaded=*/1, ignore_error, nullptr);
  return s;
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != s.npos;
}

bool library_object(const char *path) {
  if (!path)
    return false;
  const char *slash = std::strrchr(path, '/');
  const std::string_view base = slash ? slash + 1 : path;
  for (std::string_view lib :
       {"libtorch", "libc10", "libcaffe2", "libshm", "libgomp", "libiomp",
        "libstdc++", "libc.so", "libc-", "libgcc_s", "ld-linux", "libcuda",
        "libnvrtc", "libpython", "python"})
    if (base.substr(0, lib.size()) == lib)
      return true;
  return false;
}

bool library_source(std::string_view file) {
  for (std::string_view dir :
       {"/ATen/", "/c10/", "/torch/csrc/", "/torch/include/", "/caffe2/",
        "/include/devcopy/", "/runtime_probe/src/", "/c++/", "/bits/",
        "/gtest/internal/"})
    if (contains(file, dir))
      return true;
  return false;
}

bool library_function(std::string_view fn) {
  for (std::string_view ns :
       {"devcopy::", "std::", "at::", "c10::", "torch::", "__"})
    if (fn.substr(0, ns.size()) == ns)
      return true;
  return false;
}

std::string demangle(const char *name) {
  if (!name)
    return {};
  int status = 0;
  std::unique_ptr<char, void (*)(void *)> out(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

// One PC's frames, innermost inlined call first: the first that is user code
// ends the search.
struct Search {
  SourceLocation found;
  bool done = false;
};

int on_frame(void *data, std::uintptr_t, const char *file, int line,
             const char *function) {
  auto &s = *static_cast<Search *>(data);
  if (!file)
    return 0; // no line table here: syminfo decides below
  const std::string name = demangle(function);
  if (library_source(file) || library_function(name))
    return 0;
  s.found = SourceLocation{name, file, line};
  s.done = true;
  return 1;
}

void on_symbol(void *data, std::uintptr_t, const char *symbol, std::uintptr_t,
               std::uintptr_t) {
  *static_cast<std::string *>(data) = demangle(symbol);
}

} // namespace

bool stacks_supported() { return state() != nullptr; }

void capture(Stack &stack) {
  stack.size = 0;
  if (!state())
    return;
  backtrace_simple(
      state(), /*skip=*/1,
      [](void *data, std::uintptr_t pc) {
        auto &s = *static_cast<Stack *>(data);
        s.pc[s.size++] = pc;
        return s.size == Stack::kMax ? 1 : 0;
      },
      ignore_error, &stack);
}

SourceLocation user_frame(const Stack &stack) {
  if (!state())
    return {};
  static const bool debug = std::getenv("DEVCOPY_STACK_DEBUG") != nullptr;
  for (int i = 0; i < stack.size && debug; ++i) {
    Dl_info info{};
    dladdr(reinterpret_cast<void *>(stack.pc[i]), &info);
    std::fprintf(stderr, "devcopy: frame %d %s\n", i,
                 info.dli_fname ? info.dli_fname : "?");
    backtrace_pcinfo(
        state(), stack.pc[i],
        [](void *, std::uintptr_t, const char *file, int line, const char *fn) {
          std::fprintf(stderr, "    %s:%d %s\n", file ? file : "?", line,
                       demangle(fn).c_str());
          return 0;
        },
        ignore_error, nullptr);
  }
  for (int i = 0; i < stack.size; ++i) {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(stack.pc[i]), &info) &&
        library_object(info.dli_fname))
      continue;
    Search search;
    backtrace_pcinfo(state(), stack.pc[i], on_frame, ignore_error, &search);
    if (search.done)
      return search.found;
    // No debug info for this frame: its symbol, if it is no library's.
    std::string symbol;
    backtrace_syminfo(state(), stack.pc[i], on_symbol, ignore_error, &symbol);
    if (!symbol.empty() && !library_function(symbol))
      return SourceLocation{symbol, "", 0};
  }
  return {};
}

namespace {
// The line of the function a pc's frame belongs to (the outermost of the
// functions inlined there): 0 without line information.
int own_line(std::uintptr_t pc) {
  int line = 0;
  backtrace_pcinfo(
      state(), pc,
      [](void *data, std::uintptr_t, const char *file, int l, const char *) {
        if (file)
          *static_cast<int *>(data) = l;
        return 0;
      },
      ignore_error, &line);
  return line;
}
} // namespace

bool same_line(std::uintptr_t a, std::uintptr_t b) {
  if (!state() || a == b)
    return true;
  const int la = own_line(a), lb = own_line(b);
  static const bool debug = std::getenv("DEVCOPY_STACK_DEBUG") != nullptr;
  if (debug && la != lb)
    std::fprintf(stderr, "devcopy: made on line %d, freed on line %d\n", la,
                 lb);
  return la == 0 || lb == 0 || la == lb;
}

#else

bool stacks_supported() { return false; }
bool same_line(std::uintptr_t, std::uintptr_t) { return true; }
void capture(Stack &stack) { stack.size = 0; }
SourceLocation user_frame(const Stack &) { return {}; }

#endif

// Aligned on the copy's outermost captured frame (its stack may be cut at
// kMax), then walked inwards while the return addresses agree.
bool shared_frame(const Stack &made, const Stack &now, std::uintptr_t &then,
                  std::uintptr_t &at) {
  const int n = made.size;
  if (n == 0 || now.size == 0)
    return false;
  int i = now.size - 1;
  while (i >= 0 && now.pc[i] != made.pc[n - 1])
    --i;
  if (i < 0)
    return false;
  int c = 1;
  while (c < n && i - c >= 0 && now.pc[i - c] == made.pc[n - 1 - c])
    ++c;
  if (c == n || i - c < 0)
    return false;
  then = made.pc[n - 1 - c];
  at = now.pc[i - c];
  return true;
}

} // namespace devcopy::observer
