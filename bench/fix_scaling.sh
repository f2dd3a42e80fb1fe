#!/usr/bin/env bash
# --fix time against the number of fixes in one file.
#
#   bash bench/fix_scaling.sh [BUILD_DIR]            (default: build)
#   SIZES="4000 8000 16000" OLD=/path/to/devcopy bash bench/fix_scaling.sh
#
# For each size N it writes one file of N discarded copies (`t.to(kCPU,
# true);`, each with a fix-it) against the mock LibTorch headers, then runs
# `devcopy analyze --fix` on it side by side with `devcopy analyze` (the same
# analysis, no fix). The CPU time above the analysis, divided by N, is
# printed in microseconds per fix: flat when applying fixes is linear. With
# OLD, another devcopy (an earlier build) is measured the same way beside it,
# and the ratio of the two --fix runs' CPU time is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
devcopy=$build/analyzer/devcopy
[[ -x $devcopy ]] || { echo "fix_scaling: $devcopy not found; build target devcopy first" >&2; exit 1; }

exec python3 - "$devcopy" "${OLD:-}" ${SIZES:-4000 8000 16000} <<'PY'
import json, os, shutil, sys, tempfile
sys.path.insert(0, "bench")
from benchlib import timed

devcopy, old, sizes = sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3:]]
mock = os.path.abspath("tests/analyzer/mock")


def project(n):
    d = tempfile.mkdtemp(prefix="devcopy_fix_scaling_")
    body = "\n".join(f"  t{i % 8}.to(torch::kCPU, true);" for i in range(n))
    params = ", ".join(f"torch::Tensor t{k}" for k in range(8))
    with open(os.path.join(d, "many.cpp"), "w") as f:
        f.write(f"#include <torch/torch.h>\nvoid offload({params}) {{\n{body}\n}}\n")
    with open(os.path.join(d, "compile_commands.json"), "w") as f:
        json.dump([{"directory": d, "file": "many.cpp",
                    "arguments": ["clang++", "-std=c++17", "-isystem", mock, "-c", "many.cpp"]}], f)
    return d


def per_fix(tool, n):
    """Microseconds per fix above the analysis, and the fixed file's count."""
    d = project(n)
    base = ["analyze", "--no-progress", "--no-cache", "--no-facts", "-p", d, "--quiet"]
    _, analysis, p = timed([tool, *base])
    assert p.returncode == 1, p.stderr
    _, fixing, p = timed([tool, *base, "--fix"])
    with open(os.path.join(d, "many.cpp")) as f:
        fixed = f.read().count("= t")
    shutil.rmtree(d)
    assert fixed == n, f"{tool}: {fixed} of {n} fixed: {p.stderr[-500:]}"
    return (fixing - analysis) * 1e6 / n, analysis, fixing


tools = [("devcopy", devcopy)] + ([("old", old)] if old else [])
print(f"{'fixes':>6} " + " ".join(f"{name + ' us/fix':>16} {'analysis s':>10} {'--fix s':>8}"
                                    for name, _ in tools) + ("   old/new --fix" if old else ""))
for n in sizes:
    row = [per_fix(tool, n) for _, tool in tools]
    line = f"{n:>6} " + " ".join(f"{us:>16.1f} {a:>10.2f} {f:>8.2f}" for us, a, f in row)
    if old:
        line += f"   {row[1][2] / row[0][2]:>14.1f}x"
    print(line, flush=True)
PY
