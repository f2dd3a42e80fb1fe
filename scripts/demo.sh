#!/usr/bin/env bash
# README command (1): set up, build, and run devcopy on the bundled examples.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target devcopy-tidy devcopy_examples
echo
echo "== devcopy static analysis of examples/ =="
# Findings are the point of the demo: a non-zero count is not a failure here.
build/analyzer/devcopy-tidy --checks='-*,devcopy-*' -p build examples/*.cpp 2>/dev/null || true

echo
echo "== devcopy runtime probe: examples/probe_duplicates.cpp =="
# DEVCOPY_PROBE=warn: check() prints rather than throws, whatever the caller's environment.
DEVCOPY_PROBE=warn build/examples/probe_duplicates
