#!/usr/bin/env bash
# `pip install --no-build-isolation .` of the Python package, side by side in
# one run: the unity build setup.py uses (each target's sources compiled as
# one translation unit, the torch headers parsed once per target) against one
# translation unit per source (DEVCOPY_UNITY_BUILD=OFF). Each from a clean
# copy of the source tree, without ccache, into a scratch --target; prints
# each one's wall and CPU time (user + sys of every compiler) and the ratios.
# Target: at most 2 minutes of wall time on a 2-core machine.
#
#   bash bench/pip_install.sh [PYTHON]      (default: /usr/bin/python3)
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-/usr/bin/python3}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
git archive HEAD | tar -x -C "$scratch" --one-top-level=src
declare -A wall cpu
for unity in ON OFF; do
  rm -rf "$scratch/src/build" "$scratch/target"
  start=$(date +%s.%N)
  env -u CCACHE_DIR DEVCOPY_UNITY_BUILD=$unity /usr/bin/time -f "%U %S" -o "$scratch/cpu" \
    "$python" -m pip install -q --no-build-isolation --no-deps --no-index --target "$scratch/target" \
    "$scratch/src" > "$scratch/log" 2>&1 || { cat "$scratch/log" >&2; exit 1; }
  wall[$unity]=$(echo "$(date +%s.%N) - $start" | bc)
  cpu[$unity]=$(awk '{print $1 + $2}' "$scratch/cpu")
  printf 'unity %-3s  wall %6.1f s  cpu %6.1f s  (load %s)\n' $unity "${wall[$unity]}" "${cpu[$unity]}" \
    "$(cut -d' ' -f1 /proc/loadavg)"
done
printf 'ratio unity/per-file: wall %.2f, cpu %.2f\n' "$(echo "${wall[ON]} / ${wall[OFF]}" | bc -l)" \
  "$(echo "${cpu[ON]} / ${cpu[OFF]}" | bc -l)"
