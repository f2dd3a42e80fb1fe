#!/usr/bin/env bash
# Analysis time against the size of a loop body, for every devcopy check
# (copy-in-loop was once quadratic in the body's size).
#
#   bash bench/loop_scaling.sh [BUILD_DIR]     (default: build)
#   SIZES="250 500 1000 2000 4000 8000" REPS=1 bash bench/loop_scaling.sh
#   SIZES= SYNC_SIZES="1000 2000" CHECKS="host-sync-in-loop" bash bench/loop_scaling.sh
#     (an empty SIZES or SYNC_SIZES skips that sweep; CHECKS picks checks)
#
# For each size N it generates one function whose loop body holds N
# statements over a dozen tensors (arithmetic, in-place updates, calls,
# branches), 5 copies of loop-invariant tensors and 5 host reads, against the
# mock LibTorch headers (tests/analyzer/mock). Each check runs alone through
# devcopy-tidy, side by side with a parse-only run of the same file; the CPU
# time above the parse, divided by N, is printed in microseconds per
# statement. Linear analysis keeps that figure flat as N grows.
#
# A second sweep (SYNC_SIZES, default 1000 2000 4000 8000 16000) times loops
# made of nothing but host reads and copies, N of one shape each:
# `s += t.item<float>();` and `s += t.to(d).sum().item<float>();` (one value
# read N times), and `s += tK.item<float>();` over 64 tensors. Each check runs
# alone, side by side with `clang++-19 -fsyntax-only` on the same file; per N
# it prints the parse time, each check's CPU seconds and their ratio to the
# parse (the check's run parses too): linear analysis keeps the ratio flat.
# A run past SYNC_LIMIT seconds (default 300) is stopped and shown as ">".
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
tidy=$build/analyzer/devcopy-tidy
[[ -x $tidy ]] || { echo "loop_scaling: $tidy not found; build target devcopy-tidy first" >&2; exit 1; }

exec python3 - "$tidy" "${REPS:-1}" "${SYNC_SIZES-1000 2000 4000 8000 16000}" "${SYNC_LIMIT:-300}" \
  "${CHECKS:-}" ${SIZES-250 500 1000 2000 4000 8000} <<'PY'
import os, sys, tempfile
sys.path.insert(0, "bench")
from benchlib import timed

tidy, reps = sys.argv[1], int(sys.argv[2])
sync_sizes = [int(s) for s in sys.argv[3].split()]
sync_limit = float(sys.argv[4])
sizes = [int(s) for s in sys.argv[6:]]
checks = sys.argv[5].split() or [
    "discarded-copy", "redundant-chain", "repeated-module-move", "copy-in-loop",
    "create-then-move", "host-sync-in-loop"]
args = ["--", "-std=c++17", "-isystem", os.path.abspath("tests/analyzer/mock")]

def source(n):
    tensors = [f"t{k}" for k in range(12)]
    body = []
    for s in range(n):
        a, b = tensors[s % 12], tensors[(s * 7 + 3) % 12]
        kind = s % 6
        if kind == 0:
            body.append(f"    {a} = {a} + {b} * w;")
        elif kind == 1:
            body.append(f"    {a}.add_({b});")
        elif kind == 2:
            body.append(f"    consume({a}.relu() + mask0);")
        elif kind == 3:
            body.append(f"    if (i % 10 == {s % 10}) consume({b}.matmul({a}));")
        elif kind == 4:
            body.append(f"    auto v{s} = {a}.sum() * {b};")
        else:
            body.append(f"    update({a});")
        if s % (n // 5) == n // 10:
            k = s * 5 // n
            body.append(f"    consume(mask{k}.to(device));")
            body.append(f"    total += {a}.sum().item<double>();")
    decls = "\n".join(f"  torch::Tensor {t} = torch::zeros({{8}});" for t in tensors)
    masks = ", ".join(f"torch::Tensor mask{k}" for k in range(5))
    return f"""#include <torch/torch.h>
void consume(const torch::Tensor &t);
void update(torch::Tensor &t);
double train({masks}, torch::Tensor w, int steps) {{
  torch::Device device(torch::kCUDA);
{decls}
  double total = 0;
  for (int i = 0; i < steps; ++i) {{
{chr(10).join(body)}
  }}
  return total;
}}
"""

def cpu_seconds(cmd):
    _, cpu, p = timed(cmd)
    if p.returncode not in (0, 1) or ": error:" in p.stdout:
        sys.exit(f"loop_scaling: {' '.join(cmd)} failed:\n{(p.stdout + p.stderr)[-2000:]}")
    return cpu

configs = {"parse-only": "-*,objc-forbidden-subclassing"}
configs.update({c: f"-*,devcopy-{c}" for c in checks})
tmp = tempfile.mkdtemp(prefix="devcopy-scaling-")


def sweep(title, sizes, make):
    """Prints, per size, the parse time and each check's CPU time above it
    per statement."""
    print(title)
    print(f"{'statements':>10} {'parse s':>8} " + " ".join(f"{c:>20}" for c in checks))
    print(f"{'':>10} {'':>8} " + " ".join(f"{'us/stmt above parse':>20}" for c in checks))
    for n in sizes:
        path = os.path.join(tmp, f"loop_{n}.cpp")
        with open(path, "w") as f:
            f.write(make(n))
        best = {}
        for _ in range(reps):
            for name, globs in configs.items():  # side by side: alternate per repetition
                t = cpu_seconds([tidy, f"--checks={globs}", "--quiet", path] + args)
                best[name] = min(best.get(name, t), t)
        parse = best["parse-only"]
        cells = [f"{max(0.0, best[c] - parse) / n * 1e6:20.1f}" for c in checks]
        print(f"{n:>10} {parse:8.2f} " + " ".join(cells), flush=True)
        os.unlink(path)


def syncs(statement):
    """A loop of n host reads, statement(k) each."""
    def make(n):
        body = "\n".join(f"    {statement(k)}" for k in range(n))
        decls = "\n".join(f"  torch::Tensor t{k} = torch::zeros({{8}}, torch::kCUDA);"
                          for k in range(64))
        return f"""#include <torch/torch.h>
float read(torch::Tensor t, int steps) {{
  torch::Device d(torch::kCUDA);
{decls}
  float s = 0;
  for (int i = 0; i < steps; ++i) {{
{body}
  }}
  return s;
}}
"""
    return make


def limited_cpu_seconds(cmd):
    """CPU seconds of cmd, or None when it ran past sync_limit."""
    _, cpu, p = timed(["timeout", str(sync_limit)] + cmd)
    if p.returncode == 124:
        return None
    if p.returncode not in (0, 1) or ": error:" in p.stdout:
        sys.exit(f"loop_scaling: {' '.join(cmd)} failed:\n{(p.stdout + p.stderr)[-2000:]}")
    return cpu


def sync_sweep(title, sizes, make):
    """Prints, per size, the parse time (clang++-19 -fsyntax-only) and each
    check's CPU seconds with their ratio to it."""
    print(title)
    print(f"{'statements':>10} {'parse s':>8} " + " ".join(f"{c:>22}" for c in checks))
    print(f"{'':>10} {'':>8} " + " ".join(f"{'s (x parse)':>22}" for c in checks))
    given_up = set()  # a check past the limit at one size is not run at larger ones
    for n in sizes:
        path = os.path.join(tmp, f"syncs_{n}.cpp")
        with open(path, "w") as f:
            f.write(make(n))
        parse_cmd = ["clang++-19", "-fsyntax-only"] + args[1:] + [path]
        best = {}
        for _ in range(reps):
            for name in ["parse"] + checks:  # side by side: alternate per repetition
                if name in given_up:
                    continue
                cmd = parse_cmd if name == "parse" else \
                    [tidy, f"--checks=-*,devcopy-{name}", "--quiet", path] + args
                t = limited_cpu_seconds(cmd)
                if t is None:
                    given_up.add(name)
                    best.pop(name, None)
                else:
                    best[name] = min(best.get(name, t), t)
        parse = best["parse"]
        cells = [f"{'>' + str(int(sync_limit)):>13} s ({'-':>5})" if c not in best else
                 f"{best[c]:13.2f} s ({best[c] / parse:5.1f})" for c in checks]
        print(f"{n:>10} {parse:8.2f} " + " ".join(cells), flush=True)
        os.unlink(path)


if sizes:
    sweep("mixed loop body", sizes, source)
if sync_sizes:
    sync_sweep("\nmany syncs: s += t.item<float>();", sync_sizes,
               syncs(lambda k: "s += t.item<float>();"))
    sync_sweep("\nmany syncs: s += t.to(d).sum().item<float>();", sync_sizes,
               syncs(lambda k: "s += t.to(d).sum().item<float>();"))
    sync_sweep("\nmany syncs: s += tK.item<float>(); over 64 tensors", sync_sizes,
               syncs(lambda k: f"s += t{k % 64}.item<float>();"))
os.rmdir(tmp)
PY
