// libFuzzer target: devcopy's command line. The input is split at NUL bytes
// into arguments after "devcopy". llvm::cl keeps its state between
// parses; parseOptions resets it, so every input starts afresh.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_check.h"
#include <vector>

#include "Options.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data,
                                      std::size_t size) {
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
  std::vector<const char *> argv;
  for (const std::string &a : args) {
    // A response file (@FILE) would read whatever file the input names.
    if (!a.empty() && a[0] == '@')
      return 0;
    argv.push_back(a.c_str());
  }
  devcopy::cli::Options opts;
  auto action = devcopy::cli::parseOptions(int(argv.size()), argv.data(), opts);
  if (!action)
    devcopy::fuzz::checkError(llvm::toString(action.takeError()));
  return 0;
}
