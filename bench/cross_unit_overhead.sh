#!/usr/bin/env bash
# What the cross-unit step of devcopy-repeated-module-move adds to
# `devcopy analyze`: the same run with facts (collected per unit, joined,
# written to the facts file) against `--no-facts` (each unit alone, as before),
# side by side.
#
#   bash bench/cross_unit_overhead.sh [BUILD_DIR]      (default: build)
#
# Two sets of units, each alternating the two commands ROUNDS times (default
# 3) and keeping each command's lowest CPU time (user + system of the run):
#   real: the examples and the real-header fixtures (each includes the real
#         <torch/torch.h>): what a project's CI pays. Target: ratio <= 1.05.
#   mock: COPIES (default 20) copies of tests/cli/multi (6 units each, mock
#         headers, parsed in milliseconds): the facts' own cost, magnified.
# SETS="mock real" (default) picks the sets.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
devcopy=$build/analyzer/devcopy
[[ -f $devcopy ]] || { echo "cross_unit_overhead: $devcopy not found; build target devcopy" >&2; exit 1; }
[[ -f $build/compile_commands.json ]] || { echo "cross_unit_overhead: no $build/compile_commands.json; configure with -DDEVCOPY_EXAMPLES=ON" >&2; exit 1; }

exec python3 - "$devcopy" "${ROUNDS:-3}" "${COPIES:-20}" "${SETS:-mock real}" "$build/compile_commands.json" tests/analyzer/fixtures/real/*.cpp <<'PY'
import json, os, re, shutil, sys, tempfile
sys.path.insert(0, "bench")
from benchlib import timed, units, write_db

devcopy, rounds, copies, sets = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split()
build_db, fixtures = sys.argv[5], sys.argv[6:]
tmp = tempfile.mkdtemp(prefix="devcopy_bench_")

def real_project():
    d = os.path.join(tmp, "real")
    entries = units(build_db, fixtures)
    write_db(d, entries)
    return d, len(entries)

def mock_project():
    d = os.path.join(tmp, "mock")
    mock = os.path.abspath("tests/analyzer/mock")
    entries = []
    for i in range(copies):
        c = os.path.join(d, f"copy{i}")
        shutil.copytree("tests/cli/multi", c)
        for s in sorted(os.listdir(os.path.join(c, "src"))):
            entries.append({"directory": c, "file": f"src/{s}",
                            "arguments": ["clang++", "-std=c++17", "-isystem", mock, "-Iinclude",
                                          "-c", f"src/{s}"]})
    write_db(d, entries)
    return d, len(entries)

def run(d, facts):
    cmd = [devcopy, "analyze", "-p", d, "--jobs", "1", "--no-progress", "--format", "json"]
    if not facts:
        cmd.append("--no-facts")
    _, cpu, p = timed(cmd)
    if p.returncode not in (0, 1):
        sys.exit(f"cross_unit_overhead: devcopy failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return cpu, len(json.loads(p.stdout)["findings"])

print(f"best of {rounds} rounds, CPU seconds, 1 job")
print(f"{'':6} {'units':>5} {'facts':>8} {'no-facts':>9} {'ratio':>6}  findings")
for name, make in (("mock", mock_project), ("real", real_project)):
    if name not in sets:
        continue
    d, units = make()
    best = {}
    for _ in range(rounds):
        for facts in (True, False):  # side by side: alternate within each round
            cpu, n = run(d, facts)
            if facts not in best or cpu < best[facts][0]:
                best[facts] = (cpu, n)
    (fc, fn), (nc, nn) = best[True], best[False]
    print(f"{name:6} {units:5} {fc:8.2f} {nc:9.2f} {fc / nc:6.3f}  {fn} vs {nn}"
          + ("  (target <= 1.05)" if name == "real" else ""))
shutil.rmtree(tmp)
PY
