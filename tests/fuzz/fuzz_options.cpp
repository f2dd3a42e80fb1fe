// libFuzzer target: devcopy's command line. The input is split at NUL bytes
// into arguments after "devcopy".
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_check.h"
#include <vector>

#include "Options.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args = {"devcopy"};
  std::string current;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(current);
      current.clear();
    } else {
      current += char(data[i]);
    }
  }
  args.push_back(current);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  devcopy::cli::Options opts;
  std::string error;
  auto action = devcopy::cli::parseOptions(int(argv.size()), argv.data(), opts, error);
  if (action == devcopy::cli::Action::Error) devcopy::fuzz::checkError(error);
  return 0;
}
