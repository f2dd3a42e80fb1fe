#!/usr/bin/env bash
# Cost of all devcopy checks against a parse-only clang-tidy run, on files that
# include the real <torch/torch.h> (the examples and the real-header fixtures).
#
#   bash bench/analyzer_overhead.sh [BUILD_DIR]      (default: build)
#
# For each file the two runs alternate, REPS times (default 3), and each
# configuration keeps its fastest CPU time (user + sys of the child: less
# sensitive than wall time to other work on a shared machine). Prints a table
# and the ratio devcopy / parse-only over all files; the target is <= 1.10.
#
# Parse-only: clang-tidy-19 19.1 answers `--allow-no-checks --checks=-*` with
# "No checks enabled." and exits without parsing (0.03 s). So the baseline
# enables one Objective-C-only check, which clang-tidy drops for C++ files
# before registering any matcher: the file is parsed, and nothing else runs
# (same CPU time as `clang++-19 -fsyntax-only`).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
plugin=$build/analyzer/libdevcopy-tidy-plugin.so
tidy=${CLANG_TIDY:-clang-tidy-19}
[[ -f $plugin ]] || { echo "analyzer_overhead: $plugin not found; build target devcopy-tidy-plugin first" >&2; exit 1; }

exec python3 - "$tidy" "$plugin" "${REPS:-3}" examples/*.cpp tests/analyzer/fixtures/real/*.cpp <<'PY'
import os, sys
sys.path.insert(0, "bench")
from benchlib import timed

tidy, plugin, reps, files = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
build = os.path.dirname(os.path.dirname(plugin))
args = ["--", "-std=c++17", "-D_GLIBCXX_USE_CXX11_ABI=1",
        "-isystem", "/usr/include/torch/csrc/api/include",
        "-I", "runtime_probe/include", "-I", os.path.join(build, "rules", "include")]
configs = {
    "parse-only": [tidy, "--checks=-*,objc-forbidden-subclassing"],
    "devcopy-*": [tidy, f"--load={plugin}", "--checks=-*,devcopy-*"],
}

def cpu_seconds(cmd):
    _, cpu, p = timed(cmd)
    # A file that does not compile would be timed for a partial parse.
    if p.returncode not in (0, 1) or ": error:" in p.stdout or "Error while" in p.stderr:
        sys.exit(f"analyzer_overhead: {' '.join(cmd)} failed:\n{(p.stdout + p.stderr)[-2000:]}")
    return cpu

best = {name: {} for name in configs}
for f in files:
    for _ in range(reps):
        for name, cmd in configs.items():  # side by side: alternate per repetition
            t = cpu_seconds(cmd + [f] + args)
            best[name][f] = min(best[name].get(f, t), t)

print(f"{'file':48} {'parse-only s':>12} {'devcopy-* s':>12} {'ratio':>6}")
for f in files:
    a, b = best["parse-only"][f], best["devcopy-*"][f]
    print(f"{f:48} {a:12.2f} {b:12.2f} {b / a:6.3f}")
total_a = sum(best["parse-only"].values())
total_b = sum(best["devcopy-*"].values())
print(f"{'total':48} {total_a:12.2f} {total_b:12.2f} {total_b / total_a:6.3f}")
print(f"analyzer overhead: devcopy-* / parse-only = {total_b / total_a:.3f} "
      f"(target <= 1.10; CPU seconds, best of {reps}, {len(files)} files)")
PY
