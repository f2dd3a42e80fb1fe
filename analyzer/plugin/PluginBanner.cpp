// `clang-tidy-19 --load=libdevcopy-tidy-plugin.so --help` lists the devcopy
// checks and `--version` adds devcopy's version, as devcopy-tidy does. The
// plugin is loaded while clang-tidy parses its options (--load), so options
// after --load see the banner. llvm::cl comes from clang-tidy-19's libLLVM.
#include "common/ToolBanner.h"

namespace {
const bool Registered = (devcopy::addToolBanner(), true);
} // namespace
