#!/usr/bin/env bash
# Installs what devcopy needs on a fresh Debian 12 machine (run as root), per use:
#
#   scripts/setup.sh [USE...]
#     analyzer  build devcopy, devcopy-tidy, devcopy-clangd and the plugin: LLVM and Clang 19
#     probe     build the LibTorch runtime probe and its examples: LibTorch, GoogleTest
#     python    build the Python package: Debian's python3-torch, pybind11
#     package   build the Debian packages and the Python sdist (the three above, dpkg-dev)
#     test      run every test (scripts/test.sh): the above and the test-only tools
#               (Chromium, Neovim, clangd-19, Node and the SARIF validator, sanitizers,
#               python3-yaml, flake8, pytest)
#   With no USE: what scripts/demo.sh needs (analyzer probe).
#
# Idempotent: packages already present are skipped, so a second run costs seconds.
set -euo pipefail

uses=("$@")
((${#uses[@]})) || uses=(analyzer probe)

build_tools=(cmake ninja-build g++ python3)
analyzer=(llvm-19-dev libclang-19-dev clang-19 clang-tidy-19 llvm-19-tools
          libgrpc++-dev libabsl-dev)  # devcopy-clangd links clangd's archives, which need gRPC and Abseil
probe=(libtorch-dev libgtest-dev)
python=(python3-dev python3-torch pybind11-dev
        python3-setuptools python3-wheel python3-pip)  # pip install --no-build-isolation .
package=(dpkg-dev file)  # cpack -G DEB (dpkg-shlibdeps)
test_only=(
  git
  clang-format-19      # scripts/check-format.sh (the ctest "format")
  libclang-rt-19-dev   # ASan, UBSan and libFuzzer for the sanitizer build
  libgloo-dev          # the probe's multi-process tests build a c10d ProcessGroupGloo
  neovim clangd-19     # devcopy-clangd's LSP test and drop-in comparison
  libicu72             # Microsoft's SARIF validator (a self-contained .NET binary) needs ICU
  python3-yaml         # the CI recipe and action tests read the workflows and action.yml
  python3-flake8 python3-pytest
  chromium             # python/tests/test_html.py renders the HTML report headless
)

packages=()
validator=0
for use in "${uses[@]}"; do
  case $use in
    analyzer) packages+=("${build_tools[@]}" "${analyzer[@]}") ;;
    probe) packages+=("${build_tools[@]}" "${probe[@]}") ;;
    python) packages+=("${build_tools[@]}" "${probe[@]}" "${python[@]}") ;;
    package) packages+=("${build_tools[@]}" "${analyzer[@]}" "${probe[@]}" "${python[@]}" "${package[@]}") ;;
    test) packages+=("${build_tools[@]}" "${analyzer[@]}" "${probe[@]}" "${python[@]}" "${package[@]}"
                     "${test_only[@]}")
          validator=1 ;;
    *) echo "devcopy setup: unknown use '$use' (analyzer, probe, python, package or test)" >&2; exit 2 ;;
  esac
done

missing=()
for p in $(printf '%s\n' "${packages[@]}" | sort -u); do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "$@"
}
if ((${#missing[@]})); then
  echo "devcopy setup (${uses[*]}): installing ${missing[*]}"
  apt_install "${missing[@]}"
else
  echo "devcopy setup (${uses[*]}): all packages present"
fi
((validator)) || exit 0

# Microsoft's SARIF validator for the tests: npm ships it as a self-contained
# linux-x64 binary. Installed into the checkout (.cache/ is ignored by git),
# pinned, skipped when already there.
sarif_dir="$(cd "$(dirname "$0")/.." && pwd)/.cache/sarif-multitool"
sarif_version=5.7.0
if ! grep -qs "\"version\": \"$sarif_version\"" \
    "$sarif_dir/node_modules/@microsoft/sarif-multitool/package.json"; then
  if ! command -v npm >/dev/null; then
    echo "devcopy setup: installing nodejs npm"
    apt_install nodejs npm
  fi
  echo "devcopy setup: installing @microsoft/sarif-multitool@$sarif_version"
  npm install --prefix "$sarif_dir" --no-audit --no-fund "@microsoft/sarif-multitool@$sarif_version"
fi
# The package's postinstall only does this, and newer npm skips install scripts.
chmod u+x "$sarif_dir"/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool
