#!/usr/bin/env bash
# Builds and runs bench/observer_step.cpp: the CopyObserver's cost on a
# training step (GPU when LibTorch sees one, else CPU), beside the profiler's.
# Usage: bench/observer_step.sh [BUILD_DIR] [-- observer_step args]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
[[ ${1:-} == -- ]] && shift
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDEVCOPY_ANALYZER=OFF \
    -DDEVCOPY_CLANGD=OFF -DDEVCOPY_EXAMPLES=OFF >/dev/null
fi
cmake --build "$build" --target observer_step
"$build/bench/observer_step" "$@"
