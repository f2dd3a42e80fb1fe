// What every devcopy tool says about itself: `--help` lists the devcopy
// checks (one line each, from the rule catalog generated from rules/*.md)
// and `--version` gives devcopy's version beside LLVM's. Header-only, so
// devcopy, devcopy-tidy and devcopy-clangd share it without another library.
#pragma once

#include <algorithm>
#include <string>

#include "devcopy/rules_catalog.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#ifndef DEVCOPY_VERSION
#define DEVCOPY_VERSION "0.0.0"
#endif

namespace devcopy {

/// The devcopy checks, one line each, for the end of `--help`.
inline const std::string &checksHelp() {
  static const std::string Text = [] {
    std::size_t Width = 0;
    for (const rules::Rule &R : rules::kAll)
      if (R.kind == "static")
        Width = std::max(Width, R.id.size());
    std::string S =
        "\ndevcopy checks (select with --checks or .clang-tidy's Checks):\n";
    for (const rules::Rule &R : rules::kAll) {
      if (R.kind != "static")
        continue;
      S += "  " + std::string(R.id) +
           std::string(Width - R.id.size() + 2, ' ') + std::string(R.summary) +
           "\n";
    }
    return S;
  }();
  return Text;
}

inline void printDevcopyVersion(llvm::raw_ostream &OS) {
  OS << "devcopy version " << DEVCOPY_VERSION << "\n";
}

/// For tools whose main() belongs to LLVM (clang-tidy's, clangd's): adds the
/// check list to their --help and devcopy's version after LLVM's.
inline void addToolBanner() {
  static llvm::cl::extrahelp Checks(checksHelp());
  llvm::cl::AddExtraVersionPrinter(printDevcopyVersion);
}

} // namespace devcopy
