#!/usr/bin/env bash
# `devcopy analyze --jobs 2` against `run-clang-tidy-19 -j 2` with the devcopy
# plugin, on the same translation units: the examples and the real-header
# fixtures (each includes the real <torch/torch.h>).
#
#   bash bench/cli_vs_run_clang_tidy.sh [BUILD_DIR]      (default: build)
#
# Both read one compile database written to a temporary directory, run the
# same checks (-*,devcopy-*) and must report the same number of warnings. The
# two commands alternate ROUNDS times (default 2); each keeps its fastest wall
# time (what a CI job waits for) and its CPU time of that round. Prints the
# ratio devcopy / run-clang-tidy; the target is <= 1.0.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
devcopy=$build/analyzer/devcopy
plugin=$build/analyzer/libdevcopy-tidy-plugin.so
for f in "$devcopy" "$plugin"; do
  [[ -f $f ]] || { echo "cli_vs_run_clang_tidy: $f not found; build targets devcopy and devcopy-tidy-plugin" >&2; exit 1; }
done

[[ -f $build/compile_commands.json ]] || { echo "cli_vs_run_clang_tidy: no $build/compile_commands.json; configure with -DDEVCOPY_EXAMPLES=ON" >&2; exit 1; }

exec python3 - "$devcopy" "$plugin" "${ROUNDS:-2}" "$build/compile_commands.json" tests/analyzer/fixtures/real/*.cpp <<'PY'
import os, re, shutil, sys, tempfile
sys.path.insert(0, "bench")
from benchlib import timed, units, write_db

devcopy, plugin, rounds, build_db, fixtures = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]
entries = units(build_db, fixtures)
files = [e["file"] for e in entries]
db = tempfile.mkdtemp(prefix="devcopy_bench_")
write_db(db, entries)

checks = "-*,devcopy-*"
commands = {
    # --no-cache: a cache hit from an earlier run would time nothing.
    "devcopy": [devcopy, "analyze", "-p", db, "--jobs", "2", "--no-progress", "--no-cache",
                f"--checks={checks}"],
    "run-clang-tidy": ["run-clang-tidy-19", "-j", "2", "-p", db, "-quiet", "-load", plugin,
                       f"-checks={checks}"],
}

def run(name):
    wall, cpu, p = timed(commands[name])
    if p.returncode not in (0, 1) or re.search(r"\berror:", p.stdout + p.stderr):
        sys.exit(f"cli_vs_run_clang_tidy: {name} failed ({p.returncode}):\n{(p.stdout + p.stderr)[-3000:]}")
    warnings = len(re.findall(r"^\S+:\d+:\d+: warning: .*\[devcopy-", p.stdout, re.M))
    return wall, cpu, warnings

best = {}
for _ in range(rounds):
    for name in commands:  # side by side: alternate within each round
        wall, cpu, warnings = run(name)
        if name not in best or wall < best[name][0]:
            best[name] = (wall, cpu, warnings)

shutil.rmtree(db)
(dw, dc, dn), (rw, rc, rn) = best["devcopy"], best["run-clang-tidy"]
if dn != rn:
    sys.exit(f"cli_vs_run_clang_tidy: devcopy found {dn} warnings, run-clang-tidy {rn}")
print(f"{len(files)} translation units, {dn} warnings each, best of {rounds} rounds, 2 jobs")
print(f"{'':16} {'wall s':>8} {'cpu s':>8}")
print(f"{'devcopy':16} {dw:8.1f} {dc:8.1f}")
print(f"{'run-clang-tidy':16} {rw:8.1f} {rc:8.1f}")
print(f"devcopy / run-clang-tidy: wall {dw / rw:.3f} (target <= 1.0), cpu {dc / rc:.3f}")
PY
