#!/usr/bin/env bash
# Diagnoses how devcopy._C loads into the interpreter's torch on a CUDA
# machine: which libstdc++/libgomp the process maps, what torch was built
# with, and whether the extension survives the calls that crashed (numbers
# written to a std::ostream, a ModuleScope), built three ways:
#   A: /opt/gcc/bin/g++ (as gpu-test.sh), B: the system g++,
#   C: /opt/gcc/bin/g++ with -static-libstdc++ -Wl,--exclude-libs,ALL.
#   bash scripts/python-abi-diag.sh [variants]   (default "A B C")
set -u
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
export PATH="$(dirname "$(command -v "$py")"):$PATH"
echo "== interpreter and torch"
"$py" - <<'PY'
import sys, torch
print(sys.version.replace("\n", " "), sys.executable)
print("torch", torch.__version__, "cxx11 abi", torch.compiled_with_cxx11_abi(),
      "pybind11 abi", getattr(torch._C, "_PYBIND11_BUILD_ABI", None),
      getattr(torch._C, "_PYBIND11_COMPILER_TYPE", None), getattr(torch._C, "_PYBIND11_STDLIB", None))
print(torch.__config__.show())
maps = {l.split()[-1] for l in open("/proc/self/maps") if "/" in l}
print("mapped:", sorted(m for m in maps if any(k in m for k in ("libstdc++", "libgcc_s", "libgomp", "libc.so"))))
PY
for c in /usr/bin/g++ /opt/gcc/bin/g++; do
  [ -x "$c" ] || { echo "$c: absent"; continue; }
  echo "$c: $($c --version | head -1); libstdc++ $($c -print-file-name=libstdc++.so.6) -> $(readlink -f "$($c -print-file-name=libstdc++.so.6)")"
done
tl=$("$py" -c 'import os, torch; print(os.path.dirname(torch.__file__))')/lib
ls "$tl" | tr '\n' ' '; echo
for so in "$tl"/libtorch_cpu.so "$tl"/libtorch_python.so "$tl"/libc10.so; do
  echo "$(basename $so): std:: defined+exported $(nm -D --defined-only "$so" 2>/dev/null | grep -c ' [TWV] _ZNS[tdoi]'), ostream insert: $(nm -D --defined-only "$so" 2>/dev/null | grep -c '_ZNSo9_M_insert'), locale: $(nm -D --defined-only "$so" 2>/dev/null | grep -c '_ZNSt6locale')"
  readelf -d "$so" | grep -E 'NEEDED.*(stdc|gomp|gcc)|RUNPATH|RPATH'
done
for so in /usr/lib/x86_64-linux-gnu/libstdc++.so.6 /opt/gcc/lib64/libstdc++.so.6; do
  [ -e $so ] && echo "$(readlink -f $so): newest $(strings $so | grep -E '^GLIBCXX_3\.4\.[0-9]+$' | sort -V | tail -1)"
done
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
prefix=$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)')
for v in ${1:-A B C}; do
  case $v in
    A) cxx=/opt/gcc/bin/g++; extra="" ;;
    B) cxx=/usr/bin/g++; extra="" ;;
    C) cxx=/opt/gcc/bin/g++; extra="-static-libstdc++ -static-libgcc -Wl,--exclude-libs,ALL" ;;
  esac
  [ -x $cxx ] || { echo "== $v: $cxx absent"; continue; }
  b=build-diag-$v
  echo "== variant $v: $cxx $extra"
  cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release -DDEVCOPY_ANALYZER=OFF -DDEVCOPY_CLANGD=OFF \
    -DDEVCOPY_EXAMPLES=OFF -DDEVCOPY_TESTS=OFF -DCMAKE_PREFIX_PATH="$prefix" -DTorch_DIR="$prefix/Torch" \
    -DDEVCOPY_PYTHON_EXECUTABLE="$(command -v "$py")" -DCMAKE_CXX_COMPILER=$cxx \
    -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_HOST_COMPILER=$cxx -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_MODULE_LINKER_FLAGS="$extra" >$b.log 2>&1 || { tail -20 $b.log; continue; }
  grep "devcopy:" $b.log
  cmake --build $b -j"$(nproc)" --target devcopy_python >>$b.log 2>&1 || { grep -B2 -A10 -m3 'error' $b.log; continue; }
  so=$(ls $b/python/devcopy/_C*.so)
  grep -o -- '-D_GLIBCXX_USE_CXX11_ABI=[01]' $b/build.ninja | sort | uniq -c
  readelf -d $so | grep -E 'NEEDED|RUNPATH'
  echo "undefined GLIBCXX versions: $(nm -D --undefined-only $so | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -3 | tr '\n' ' ')"
  echo "exported std:: $(nm -D --defined-only $so | grep -c ' _ZNS')"
  PYTHONPATH=$b/python timeout 120 "$py" -X faulthandler python/seeds/smoke.py; echo "variant $v: exit $?"
done
