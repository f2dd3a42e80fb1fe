#!/usr/bin/env bash
# README command (2): set up a fresh machine, build everything, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
jobs=$(nproc)
# ccache, when the machine has it (never installed here), keeps compiled
# objects between runs and builds.
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDEVCOPY_TESTS=ON "${launcher[@]}"
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

# Sanitizers and fuzzing (docs/development.md): a second, small build with
# clang, ASan and UBSan, of the command's unit tests, the probe's CPU tests and
# the libFuzzer targets (a few seconds of fuzzing per parser).
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
  -DCMAKE_CXX_COMPILER=clang++-19 -DDEVCOPY_SANITIZE=ON -DDEVCOPY_CLANGD=OFF -DDEVCOPY_EXAMPLES=OFF
cmake --build build-sanitize -j"$jobs" --target cli_unit_test cli_files_test probe_inspect_test \
  probe_report_test fuzz_baseline fuzz_compile_db fuzz_config fuzz_options fuzz_shard fuzz_cache \
  fuzz_facts fuzz_response_file
ctest --test-dir build-sanitize --output-on-failure -j"$jobs" \
  -R '^(cli_unit|cli_files|probe[.](inspect|report)|fuzz[.].*)$'
