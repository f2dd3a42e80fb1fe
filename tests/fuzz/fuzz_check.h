// What every fuzz target asserts besides "no crash": a rejected input gets
// one non-empty line of error, as devcopy prints it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace devcopy::fuzz {

inline void checkError(const std::string &error) {
  if (!error.empty() && error.find('\n') == std::string::npos)
    return;
  std::fprintf(stderr, "error is not one line: [%s]\n", error.c_str());
  std::abort();
}

} // namespace devcopy::fuzz
