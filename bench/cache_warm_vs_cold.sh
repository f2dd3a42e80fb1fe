#!/usr/bin/env bash
# The results cache of `devcopy analyze`, side by side on the examples (their
# compile commands from the build), in one run:
#
#   cold: `devcopy analyze --jobs 2` with an empty cache (it parses every unit
#         and records the cache entries) against `run-clang-tidy-19 -j 2` with
#         the devcopy plugin, same units and checks: target <= 1.0;
#   warm: the same command again, nothing changed: target >= 10x faster than
#         cold, with a byte-identical report (checked);
#   and what recording the cache costs a cold run: against --no-cache.
#
#   bash bench/cache_warm_vs_cold.sh [BUILD_DIR]      (default: build)
#
# The four commands alternate ROUNDS times (default 2); each keeps its
# fastest wall time (what a CI job waits for) and that round's CPU time.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
devcopy=$build/analyzer/devcopy
plugin=$build/analyzer/libdevcopy-tidy-plugin.so
for f in "$devcopy" "$plugin"; do
  [[ -f $f ]] || { echo "cache_warm_vs_cold: $f not found; build targets devcopy and devcopy-tidy-plugin" >&2; exit 1; }
done
[[ -f $build/compile_commands.json ]] || { echo "cache_warm_vs_cold: no $build/compile_commands.json; configure with -DDEVCOPY_EXAMPLES=ON" >&2; exit 1; }

exec python3 - "$devcopy" "$plugin" "${ROUNDS:-2}" "$build/compile_commands.json" <<'PY'
import json, os, re, shutil, sys, tempfile
sys.path.insert(0, "bench")
from benchlib import timed, units, write_db

devcopy, plugin, rounds, build_db = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
entries = units(build_db)
if not entries:
    sys.exit(f"cache_warm_vs_cold: no examples in {build_db}; configure with -DDEVCOPY_EXAMPLES=ON")
tmp = tempfile.mkdtemp(prefix="devcopy_bench_cache_")
write_db(tmp, entries)
cache = os.path.join(tmp, "cache")

checks = "-*,devcopy-*"
analyze = [devcopy, "analyze", "-p", tmp, "--jobs", "2", "--no-progress", f"--checks={checks}",
           "--cache-dir", cache, "--format", "json"]
commands = {
    "devcopy cold": analyze,
    "devcopy warm": analyze,
    "devcopy no-cache": analyze + ["--no-cache"],
    "run-clang-tidy": ["run-clang-tidy-19", "-j", "2", "-p", tmp, "-quiet", "-load", plugin,
                       f"-checks={checks}"],
}


def run(name):
    if name == "devcopy cold":
        shutil.rmtree(cache, ignore_errors=True)
    wall, cpu, p = timed(commands[name])
    if p.returncode not in (0, 1) or re.search(r"\berror:", p.stdout + p.stderr):
        sys.exit(f"cache_warm_vs_cold: {name} failed ({p.returncode}):\n{(p.stdout + p.stderr)[-3000:]}")
    if name == "run-clang-tidy":
        warnings = len(re.findall(r"^\S+:\d+:\d+: warning: .*\[devcopy-", p.stdout, re.M))
    else:
        warnings = len(json.loads(p.stdout)["findings"])
    reused = "unit(s) unchanged" in p.stderr  # (--no-cache: never)
    if reused != (name == "devcopy warm"):
        sys.exit(f"cache_warm_vs_cold: {name} {'reused' if reused else 'did not reuse'} the cache:\n{p.stderr}")
    return wall, cpu, warnings, p.stdout


best, reports = {}, {}
for _ in range(rounds):
    for name in commands:  # side by side: alternate within each round
        wall, cpu, warnings, out = run(name)
        reports.setdefault(name, set()).add(out)
        if name not in best or wall < best[name][0]:
            best[name] = (wall, cpu, warnings)
shutil.rmtree(tmp)

(cw, cc, cn), (ww, wc, wn), (nw, nc, nn), (rw, rc, rn) = (best[n] for n in commands)
if len(reports["devcopy warm"] | reports["devcopy cold"] | reports["devcopy no-cache"]) != 1:
    sys.exit("cache_warm_vs_cold: the warm report differs from the cold one")
if cn != rn:
    sys.exit(f"cache_warm_vs_cold: devcopy found {cn} warnings, run-clang-tidy {rn}")
print(f"{len(entries)} translation units (examples/), {cn} warnings each, best of {rounds} rounds, 2 jobs")
print(f"{'':16} {'wall s':>8} {'cpu s':>8}")
for name, (w, c, _) in best.items():
    print(f"{name:16} {w:8.2f} {c:8.2f}")
print(f"cold devcopy / run-clang-tidy: wall {cw / rw:.3f} (target <= 1.0), cpu {cc / rc:.3f}")
print(f"cold / warm devcopy:           wall {cw / ww:.1f}x (target >= 10x), cpu {cc / max(wc, 1e-3):.1f}x; "
      "reports identical")
print(f"cold with cache / --no-cache:  wall {cw / nw:.3f}, cpu {cc / nc:.3f} (what recording costs)")
PY
