#!/usr/bin/env bash
# Installs what devcopy needs on a fresh Debian 12 machine (run as root).
# Idempotent: packages already present are skipped, so a second run costs seconds.
set -euo pipefail

packages=(
  cmake ninja-build g++ git
  clang-format-19  # scripts/check-format.sh (the ctest "format")
  llvm-19-dev libclang-19-dev clang-19 clang-tidy-19 llvm-19-tools
  libclang-rt-19-dev  # ASan, UBSan and libFuzzer for scripts/test.sh's sanitizer build
  libtorch-dev libgtest-dev
  libgloo-dev  # Gloo headers: the probe's multi-process tests build a c10d ProcessGroupGloo
  libgrpc++-dev libabsl-dev neovim clangd-19  # devcopy-clangd: link, LSP test, latency bench
  libicu72  # Microsoft's SARIF validator (a self-contained .NET binary) needs ICU
  dpkg-dev file  # cpack -G DEB (dpkg-shlibdeps) in the package test
  python3-yaml  # tests/cli/ci_recipe.py reads the CI workflow and the pre-commit hook
  python3-dev python3-torch pybind11-dev python3-pytest  # the Python package (python/)
  python3-setuptools python3-wheel python3-pip           # pip install --no-build-isolation .
  chromium  # python/tests/test_html.py renders the HTML report headless
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "devcopy setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "devcopy setup: all packages present"
fi

# Microsoft's SARIF validator for the devcopy command's tests: npm ships it as
# a self-contained linux-x64 binary. Installed into the checkout (.cache/ is
# ignored by git), pinned, skipped when already there.
sarif_dir="$(cd "$(dirname "$0")/.." && pwd)/.cache/sarif-multitool"
sarif_version=5.7.0
if ! grep -qs "\"version\": \"$sarif_version\"" \
    "$sarif_dir/node_modules/@microsoft/sarif-multitool/package.json"; then
  if ! command -v npm >/dev/null; then
    echo "devcopy setup: installing nodejs npm"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends nodejs npm
  fi
  echo "devcopy setup: installing @microsoft/sarif-multitool@$sarif_version"
  npm install --prefix "$sarif_dir" --no-audit --no-fund "@microsoft/sarif-multitool@$sarif_version"
fi
# The package's postinstall only does this, and newer npm skips install scripts.
chmod u+x "$sarif_dir"/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool
