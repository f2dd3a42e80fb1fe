"""`python3 -m devcopy lint` against Debian's flake8 (default plugins:
pyflakes, pycodestyle, mccabe) on the same Python files, side by side in one
run, rounds interleaved, both with the same number of processes. Prints the
median wall and CPU times, the ratio devcopy/flake8 (the target: at most
1.0) and devcopy's lines per second per core (CPU seconds; the target: at
least 50,000).

    python3 bench/python_lint.py [--rounds N] [--jobs N] [PATH...]

PATH defaults to the Python sources of Debian's torch
(/usr/lib/python3/dist-packages/torch). Run from the repository root.
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import timed  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def python_files(paths):
    """The *.py files under `paths`, sorted: the same list for both tools."""
    out = []
    for p in paths:
        if os.path.isfile(p):
            out.append(p)
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            out.extend(os.path.join(root, f) for f in sorted(files) if f.endswith(".py"))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("paths", nargs="*", default=["/usr/lib/python3/dist-packages/torch"])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = p.parse_args()
    files = python_files(args.paths)
    lines = 0
    for f in files:
        with open(f, "rb") as fh:
            lines += fh.read().count(b"\n")
    env_path = os.path.join(REPO, "python")
    os.environ["PYTHONPATH"] = env_path + os.pathsep + os.environ.get("PYTHONPATH", "")
    py = sys.executable
    ours = [py, "-m", "devcopy", "lint", "-q", "-j", str(args.jobs), "--format", "json", *files]
    theirs = [py, "-m", "flake8", "--jobs", str(args.jobs), "--exit-zero", *files]
    rows = {"devcopy": [], "flake8": []}
    for _ in range(args.rounds):
        for name, cmd in (("devcopy", ours), ("flake8", theirs)):
            wall, cpu, proc = timed(cmd)
            if proc.returncode not in (0, 1):
                sys.exit(f"python_lint: {name} failed ({proc.returncode}): {proc.stderr.strip()[-300:]}")
            rows[name].append((wall, cpu))
    med = {n: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for n, r in rows.items()}
    print(f"{len(files)} files, {lines} lines, {args.jobs} process(es), {args.rounds} round(s), median")
    for name, (wall, cpu) in med.items():
        print(f"  {name:8} wall {wall:7.2f} s   cpu {cpu:7.2f} s")
    ratio_wall = med["devcopy"][0] / med["flake8"][0]
    ratio_cpu = med["devcopy"][1] / med["flake8"][1]
    print(f"ratio devcopy/flake8: wall {ratio_wall:.3f}, cpu {ratio_cpu:.3f} (target <= 1.0)")
    print(f"devcopy: {lines / med['devcopy'][1]:,.0f} lines per second per core (target >= 50,000)")


if __name__ == "__main__":
    main()
