#!/usr/bin/env bash
# Installs what devcopy needs on a fresh Debian 12 machine (run as root).
# Idempotent: packages already present are skipped, so a second run costs seconds.
set -euo pipefail

packages=(
  cmake ninja-build g++ git
  llvm-19-dev libclang-19-dev clang-19 clang-tidy-19 llvm-19-tools
  libtorch-dev libgtest-dev
  libgrpc++-dev libabsl-dev neovim clangd-19  # devcopy-clangd: link, LSP test, latency bench
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
