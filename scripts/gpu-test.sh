#!/usr/bin/env bash
# Builds the runtime probe against the CUDA LibTorch of the local Python
# (torch 2.x + CUDA, e.g. the H200 machine) and runs every probe test, the
# CUDA ones included (ctest label "cuda"), then the GPU benchmarks.
# Among them: inspect_distributed() with two ranks on the one GPU
# (probe.distributed_cuda; needs Gloo's headers in the LibTorch found), the
# CPU multi-process tests and benchmark, and the one-process multi-GPU tests
# (probe.multi_gpu_cuda: they skip, saying so, with fewer than two GPUs).
# Then the Python package against the same torch: its pytest suite (ctest
# python.pytest), python/seeds/smoke.py and run_seeds.py (the three seeds in
# Python, asserted; DEVCOPY_SEED_OUT=dir keeps their pages), and
# bench/python_inspect.py, bench/python_timeline.py, bench/python_observe.py and
# bench/python_distributed.py.
#
#   bash scripts/gpu-test.sh [build-dir]        (default build-gpu)
#
# Environment: PYTHON (the interpreter with torch, default python3), CXX
# (default /opt/gcc/bin/g++ when present), CUDA_ARCH (default native),
# ONLY (a regex: run only the tests, benchmarks and Python scripts -- "seeds",
# "nccl_ranks" -- whose names match it).
# Exit status: non-zero when the build or any test failed.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
py=${PYTHON:-python3}
export PATH="$(dirname "$(command -v "$py")"):$PATH"  # cmake and ninja of the torch venv

torch_prefix=$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)') || {
  echo "gpu-test: $py cannot import torch" >&2; exit 2; }
cxx=${CXX:-$( [ -x /opt/gcc/bin/g++ ] && echo /opt/gcc/bin/g++ || echo g++ )}
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
[ -n "$nvcc" ] || { echo "gpu-test: nvcc not found (put the CUDA toolkit on PATH)" >&2; exit 2; }
export PATH="$(dirname "$nvcc"):$PATH"
echo "gpu-test: torch $("$py" -c 'import torch; print(torch.__version__, torch.cuda.is_available())'), $("$nvcc" --version | tail -1), $("$cxx" --version | head -1)"

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DDEVCOPY_ANALYZER=OFF -DDEVCOPY_CLANGD=OFF -DDEVCOPY_EXAMPLES=OFF \
  -DCMAKE_PREFIX_PATH="$torch_prefix" -DTorch_DIR="$torch_prefix/Torch" \
  -DDEVCOPY_PYTHON_EXECUTABLE="$(command -v "$py")" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_HOST_COMPILER="$cxx" \
  -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-native}" >"$build.configure.log" 2>&1 || {
  tail -40 "$build.configure.log"; echo "gpu-test: configure failed" >&2; exit 1; }
grep -E "devcopy:" "$build.configure.log"
echo "gpu-test: $(nvidia-smi -L 2>/dev/null | wc -l) GPU(s) visible"

status=0
# -k 0: one broken target must not hide the results of the others.
cmake --build "$build" -j"$(nproc)" -- -k 0 || status=1
cmake --build "$build" -j"$(nproc)" --target devcopy_bench -- -k 0 || status=1

# CPU tests in parallel; CUDA tests one at a time (they measure the device).
only=${ONLY:-.}
ctest --test-dir "$build" -L probe -LE cuda -R "$only" --output-on-failure -j"$(nproc)" || status=1
ctest --test-dir "$build" -L cuda -R "$only" --output-on-failure || status=1

echo "== the seeds in Python (python/seeds/run_seeds.py) =="
if ! [[ seeds =~ $only ]]; then
  echo "gpu-test: skipped (ONLY=$only)"
elif [ -d "$build/python/devcopy" ]; then
  # smoke.py first: the calls that once crashed the extension, each named.
  PYTHONPATH="$PWD/$build/python" "$py" -X faulthandler python/seeds/smoke.py || status=1
  PYTHONPATH="$PWD/$build/python" "$py" -X faulthandler python/seeds/run_seeds.py || status=1
else
  echo "gpu-test: the Python package was not built (see devcopy: lines above)"; status=1
fi

echo "== two GPUs, two NCCL ranks (python/gpu/nccl_ranks.py; skips on one GPU) =="
if [[ nccl_ranks =~ $only ]] && [ -d "$build/python/devcopy" ]; then
  PYTHONPATH="$PWD/$build/python" "$py" python/gpu/nccl_ranks.py || status=1
fi

echo "== benchmarks =="
for b in "$build"/bench/*; do
  [ -f "$b" ] && [ -x "$b" ] || continue
  [[ "$(basename "$b")" =~ $only ]] || continue
  "$b" || status=1
done
if [ -d "$build/python/devcopy" ] && [[ python_inspect =~ $only ]]; then
  PYTHONPATH="$PWD/$build/python" "$py" bench/python_inspect.py || status=1
fi
if [ -d "$build/python/devcopy" ] && [[ python_timeline =~ $only ]]; then
  PYTHONPATH="$PWD/$build/python" "$py" bench/python_timeline.py || status=1
fi
if [ -d "$build/python/devcopy" ] && [[ python_observe =~ $only ]]; then
  PYTHONPATH="$PWD/$build/python" "$py" bench/python_observe.py || status=1
fi
if [ -d "$build/python/devcopy" ] && [[ python_distributed =~ $only ]]; then
  PYTHONPATH="$PWD/$build/python" "$py" bench/python_distributed.py || status=1
fi
echo "gpu-test: $([ $status = 0 ] && echo PASSED || echo FAILED)"
exit $status
