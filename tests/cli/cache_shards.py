#!/usr/bin/env python3
"""The results cache and shards of `devcopy analyze`, end to end.

Works on the multi-file project of tests/cli/multi (cross-unit findings need
every unit's facts) plus the single-file fixtures of tests/cli/project, with
mock headers (parsing takes milliseconds):

  cache:  a warm run reuses every unit and reports byte for byte what the
          cold run did; a header, a flag, the configuration or the tool
          changed re-analyzes exactly the units it touches; a corrupt entry
          is one note, never a crash; an unwritable cache is a note.
  shards: `--shard K/N` for N = 1..4 split the units stably (reordering the
          database changes nothing), and `devcopy merge` of the 3 shards
          gives byte-identical JSON, SARIF, text, baseline and facts file to
          the unsharded run; bad merges are one-line errors.

Usage: cache_shards.py CASE --devcopy BIN --mock DIR
"""
import argparse
import glob
import json
import os
import random
import shutil
import stat
import sys
import tempfile

from clitest import Failure, ProjectDir, check, run_tool

HERE = os.path.dirname(os.path.abspath(__file__))
MULTI = ["block.cpp", "encoder.cpp", "net.cpp", "host.cpp", "main.cpp"]
SINGLE = ["train.cpp", "clean.cpp"]
UNITS = [f"src/{s}" for s in MULTI + SINGLE]
CROSS = "devcopy-repeated-module-move"


class Project(ProjectDir):
    """Both fixture projects in one directory; block.cpp also includes
    extra.h, found in include/ after a search of shadow/ (empty)."""

    def __init__(self, args):
        self.args = args
        self.dir = os.path.realpath(tempfile.mkdtemp(prefix="devcopy_cache_"))
        shutil.copytree(os.path.join(HERE, "multi"), self.dir, dirs_exist_ok=True)
        shutil.copytree(os.path.join(HERE, "project"), self.dir, dirs_exist_ok=True)
        os.makedirs(self.path("shadow"))
        self.write("include/extra.h", "// included by block.cpp only\n")
        with open(self.path("src/block.cpp")) as f:
            block = f.read()
        self.write("src/block.cpp", '#include "extra.h"\n' + block)
        self.flags = {u: [] for u in UNITS}
        self.order = list(UNITS)
        self.write_database()

    def write_database(self):
        db = [{"directory": self.dir, "file": u,
               "arguments": ["clang++", "-std=c++17", "-isystem", self.args.mock, "-Ishadow",
                             "-Iinclude", *self.flags[u], "-c", u]} for u in self.order]
        self.write("build/compile_commands.json", json.dumps(db, indent=1))

    def run(self, *argv, devcopy=None):
        return run_tool([devcopy or self.args.devcopy, *argv], self.dir)

    def analyze(self, *argv, devcopy=None, rc=(1,)):
        p = self.run("analyze", "-p", "build", "--no-progress", *argv, devcopy=devcopy)
        check(p.returncode in rc, f"analyze {argv} exited {p.returncode}:\n{p.stderr}")
        return p

    def entries(self, cache="build/.devcopy-cache"):
        """{unit: (entry path, mtime_ns)} of the cache's entries."""
        out = {}
        for e in glob.glob(os.path.join(self.path(cache), "v2", "*", "*.json")):
            with open(e) as f:
                f.readline()  # "devcopy-cache CHECKSUM"
                unit = os.path.relpath(json.load(f)["payload"]["file"], self.dir)
            out.setdefault(unit, []).append((e, os.stat(e).st_mtime_ns))
        return out


def reanalyzed(p, before, expect, *argv, devcopy=None):
    """Runs analyze; exactly the units `expect` are analyzed again (their
    entries written), and the report equals a --no-cache run's."""
    warm = p.analyze("--format", "json", *argv, devcopy=devcopy)
    after = p.entries()
    changed = {u for u, es in after.items() if sorted(es) != sorted(before.get(u, []))}
    check(changed == set(expect), f"re-analyzed {sorted(changed)}, expected {sorted(expect)}"
                                  f" ({argv}):\n{warm.stderr}")
    reused = len(UNITS) - len(expect)
    line = f"devcopy: cache: {reused} of {len(UNITS)} unit(s) unchanged"
    check((line in warm.stderr) == (reused > 0), f"cache line for {reused} reused:\n{warm.stderr}")
    cold = p.analyze("--format", "json", "--no-cache", *argv, devcopy=devcopy)
    check(warm.stdout == cold.stdout, f"cached report differs from a fresh one ({argv})")
    return after


def case_cache(args):
    p = Project(args)
    cold = {fmt: p.analyze("--format", fmt, "--no-cache").stdout for fmt in ("json", "sarif", "text")}
    check(not os.path.exists(p.path("build/.devcopy-cache")), "--no-cache wrote a cache")
    facts_cold = p.read("build/devcopy-facts.json")
    first = p.analyze("--format", "json")
    check("cache:" not in first.stderr, f"a cold run has nothing to reuse:\n{first.stderr}")
    entries = p.entries()
    check(sorted(entries) == sorted(UNITS) and all(len(e) == 1 for e in entries.values()),
          f"one entry per unit under build/.devcopy-cache: {entries}")
    check(first.stdout == cold["json"], "the cold run with a cache reports what --no-cache does")

    # Warm: nothing parsed, the same bytes in every format and facts file.
    for fmt in ("json", "sarif", "text"):
        warm = p.analyze("--format", fmt)
        check(f"{len(UNITS)} of {len(UNITS)} unit(s) unchanged" in warm.stderr, warm.stderr)
        check(warm.stdout == cold[fmt], f"warm {fmt} report differs from the cold one")
    check(p.read("build/devcopy-facts.json") == facts_cold, "warm facts file differs")
    report = json.loads(cold["json"])
    check(sum(f["rule"] == CROSS for f in report["findings"]) == 6,
          "the cross-unit findings come from cached facts too")
    check(p.entries() == entries, "a warm run rewrote entries")

    # A header: only the unit including it. Touching without a change: none.
    os.utime(p.path("include/extra.h"), None)
    entries = reanalyzed(p, entries, [])
    p.write("include/extra.h", "// included by block.cpp only, edited\n")
    entries = reanalyzed(p, entries, ["src/block.cpp"])
    # A header that would now shadow the one used (earlier in the include path).
    p.write("shadow/extra.h", "// found first now\n")
    entries = reanalyzed(p, entries, ["src/block.cpp"])
    # A header all multi-project units include.
    p.write("include/models.h", p.read("include/models.h") + "// edited\n")
    entries = reanalyzed(p, entries, [f"src/{s}" for s in MULTI])
    # The main file, and a compile flag of one unit.
    p.write("src/clean.cpp", p.read("src/clean.cpp") + "\n")
    entries = reanalyzed(p, entries, ["src/clean.cpp"])
    p.flags["src/net.cpp"] = ["-DDEVCOPY_TEST_FLAG=1"]
    p.write_database()
    entries = reanalyzed(p, entries, ["src/net.cpp"])
    # Reordering the database changes no unit.
    p.order.reverse()
    p.write_database()
    entries = reanalyzed(p, entries, [])
    # Configuration: a .clang-tidy comment changes no effective option; a
    # check option does, for the units below it; --checks for all.
    p.write("src/.clang-tidy", "# devcopy's defaults\n")
    entries = reanalyzed(p, entries, [])
    p.write("src/.clang-tidy", "CheckOptions:\n  devcopy-discarded-copy.MainFileOnly: 'auto'\n")
    entries = reanalyzed(p, entries, UNITS)
    entries = reanalyzed(p, entries, UNITS, "--checks=-*,devcopy-*,-devcopy-copy-in-loop")
    entries = reanalyzed(p, entries, [])  # back: the first set of entries is still there
    # The tool: another build of devcopy (a byte more) keys its own entries.
    other = p.path("devcopy-other")
    shutil.copy(args.devcopy, other)
    with open(other, "ab") as f:
        f.write(b"\0")
    os.chmod(other, stat.S_IRWXU)
    before = {u: list(es) for u, es in entries.items()}
    run = p.analyze("--format", "json", devcopy=other)
    check("unchanged" not in run.stderr, f"another devcopy reused this one's results:\n{run.stderr}")
    check({u: len(es) for u, es in p.entries().items()} == {u: len(es) + 1 for u, es in before.items()},
          "another devcopy must add one entry per unit")
    run = p.analyze("--format", "json")
    check(f"{len(UNITS)} of {len(UNITS)} unit(s) unchanged" in run.stderr,
          f"this devcopy's entries must survive:\n{run.stderr}")
    del before
    # Everything a finding carries survives the cache: the fix-its and
    # directories --export-fixes writes, the levels --warnings-as-errors sets.
    for extra in (("--export-fixes", "fixes.yaml"), ("--warnings-as-errors=*",)):
        runs = []
        for cache in (("--no-cache",), (), ()):  # fresh; stored (or reused); reused
            run = p.run("analyze", "-p", "build", "--format", "text", *cache, *extra)
            runs.append((run.returncode, run.stdout, p.read("fixes.yaml") if "fixes.yaml" in extra else ""))
        check("unchanged" in run.stderr and runs[0] == runs[1] == runs[2],
              f"warm {extra} differs from a fresh run:\n{runs[0]}\n---\n{runs[2]}")
    print("cache: warm == cold; header, shadowing header, flag, configuration and tool "
          "invalidate exactly their units")
    return p


def case_cache_corrupt(args):
    p = Project(args)
    cold = p.analyze("--format", "json").stdout
    entries = p.entries()
    bad = {"src/train.cpp": "{ not json", "src/net.cpp": "[" * 50000 + "]" * 50000,
           "src/main.cpp": '{"format": 1, "key": "other"}', "src/host.cpp": "",
           "src/clean.cpp": json.dumps({"format": 1, "key": os.path.basename(
               entries["src/clean.cpp"][0][0])[:-5], "deps": {}, "payload": {"file": 3}})}
    for unit, text in bad.items():
        with open(entries[unit][0][0], "w") as f:
            f.write(text)
    run = p.analyze("--format", "json")
    notes = [l for l in run.stderr.splitlines() if "corrupt cache entry" in l]
    check(len(notes) == len(bad), f"one note per corrupt entry:\n{run.stderr}")
    check(all(l.startswith("devcopy: note: ") and "analyzed again" in l for l in notes), notes)
    check(run.stdout == cold, "a corrupt entry changed the report")
    run = p.analyze("--format", "json")
    check("corrupt" not in run.stderr and f"{len(UNITS)} of {len(UNITS)}" in run.stderr,
          f"corrupt entries must be rewritten:\n{run.stderr}")
    # One byte flipped inside each entry's payload (a message, an offset, a
    # file name): caught by the checksum, analyzed again, the same report.
    entries = p.entries()
    for n, unit in enumerate(sorted(entries)):
        with open(entries[unit][0][0], "rb") as f:
            data = bytearray(f.read())
        at = data.index(b'"payload"')
        at += (len(data) - at) * (n + 1) // (len(entries) + 2)
        data[at] ^= 0x01
        with open(entries[unit][0][0], "wb") as f:
            f.write(bytes(data))
    run = p.analyze("--format", "json")
    notes = [line for line in run.stderr.splitlines() if "checksum does not match" in line]
    check(len(notes) == len(entries), f"one note per flipped entry:\n{run.stderr}")
    check(run.stdout == cold, "a flipped byte changed the report")

    # An unwritable cache: a note, the same report, the usual exit code.
    p.write("not-a-dir", "")
    run = p.analyze("--format", "json", "--cache-dir", "not-a-dir/cache")
    notes = [l for l in run.stderr.splitlines() if "cannot write the results cache" in l]
    check(len(notes) == 1 and "--cache-dir" in notes[0], f"one note:\n{run.stderr}")
    check(run.stdout == cold, "an unwritable cache changed the report")
    # --cache-dir elsewhere: used there.
    p.analyze("--cache-dir", "elsewhere")
    check(len(p.entries("elsewhere")) == len(UNITS), "--cache-dir")
    print("cache: corrupt and unwritable caches are notes; the report stays the same")
    return p


def shard_files(p, n, prefix="shard"):
    files = []
    for k in range(1, n + 1):
        out = p.path(f"{prefix}-{k}.json")
        run = p.run("analyze", "-p", "build", "--no-progress", "--shard", f"{k}/{n}",
                    "--output", out)
        check(run.returncode == 0, f"shard {k}/{n} exited {run.returncode}:\n{run.stderr}")
        files.append(out)
    return files


def shard_units(path, root):
    with open(path) as f:
        return sorted(os.path.relpath(u["file"], root) for u in json.load(f)["units"])


def case_shards(args):
    p = Project(args)
    full = {}
    for fmt in ("json", "sarif", "text"):
        full[fmt] = p.analyze("--format", fmt, "--no-cache").stdout
    facts = p.read("build/devcopy-facts.json")
    p.analyze("--no-cache", "--write-baseline", "full-baseline.json", rc=(0,))
    # A baseline holding part of today's findings.
    with open(p.path("full-baseline.json")) as f:
        doc = json.load(f)
    doc["entries"] = doc["entries"][::2]
    p.write("half-baseline.json", json.dumps(doc))
    with_baseline = p.analyze("--format", "sarif", "--no-cache", "--baseline",
                              "half-baseline.json").stdout

    for n in (1, 2, 3, 4):
        files = shard_files(p, n)
        units = [u for f in files for u in shard_units(f, p.dir)]
        check(sorted(units) == sorted(UNITS), f"{n} shards must hold each unit once: {units}")
    files = shard_files(p, 3)
    split = [shard_units(f, p.dir) for f in files]
    check(sum(bool(s) for s in split) >= 2, f"3 shards, one holding everything: {split}")
    random.Random(12).shuffle(p.order)
    p.write_database()
    check([shard_units(f, p.dir) for f in shard_files(p, 3, "reordered")] == split,
          "reordering the database moved units between shards")

    os.remove(p.path("build/devcopy-facts.json"))
    shuffled = [files[2], files[0], files[1]]
    for fmt in ("json", "sarif", "text"):
        run = p.run("merge", "-p", "build", "--format", fmt, *shuffled)
        check(run.returncode == 1, f"merge exited {run.returncode}:\n{run.stderr}")
        check(run.stdout == full[fmt], f"merged {fmt} differs from the unsharded run's")
    check(p.read("build/devcopy-facts.json") == facts, "merged facts file differs")
    check(sum(f["rule"] == CROSS for f in json.loads(full["json"])["findings"]) == 6,
          "cross-unit findings in the unsharded run")
    run = p.run("merge", "-p", "build", "--write-baseline", "merged-baseline.json", *files)
    check(run.returncode == 0 and p.read("merged-baseline.json") == p.read("full-baseline.json"),
          f"merged baseline differs:\n{run.stderr}")
    run = p.run("merge", "-p", "build", "--format", "sarif", "--baseline", "half-baseline.json",
                *files)
    check(run.stdout == with_baseline, "merge --baseline differs from analyze --baseline")

    # Some PATHs only: the other units' facts come from the last facts file,
    # in the merge as in the unsharded run.
    paths = ["src/main.cpp", "src/net.cpp", "src/train.cpp"]
    part = p.analyze("--format", "json", "--no-cache", *paths).stdout
    part_facts = p.read("build/devcopy-facts.json")
    p.write("build/devcopy-facts.json", facts)
    part_files = []
    for k in (1, 2, 3):
        out = p.path(f"part-{k}.json")
        run = p.run("analyze", "-p", "build", "--no-progress", "--shard", f"{k}/3", "--output", out,
                    *paths)
        check(run.returncode == 0, f"shard {k}/3 of PATHs:\n{run.stderr}")
        part_files.append(out)
    run = p.run("merge", "-p", "build", "--format", "json", *part_files)
    check(run.stdout == part and p.read("build/devcopy-facts.json") == part_facts,
          f"merged shards of PATHs differ from the unsharded run on them:\n{run.stderr}")
    check(sum(f["rule"] == CROSS for f in json.loads(part)["findings"]) == 6,
          "cross-unit findings on PATHs need the previous facts")

    def merge_error(*argv, needle):
        run = p.run("merge", "-p", "build", *argv)
        lines = [l for l in run.stderr.splitlines() if l.startswith("devcopy: error:")]
        check(run.returncode == 2 and len(lines) == 1 and needle in lines[0],
              f"merge {argv}: want one error with {needle!r}, got {run.returncode}:\n{run.stderr}")

    merge_error(files[0], files[2], needle="shard 2/3 missing")
    merge_error(*files, files[1], needle="again")
    four = shard_files(p, 4, "four")
    merge_error(files[0], four[1], needle="one of 4 shards")
    merge_error(*files, p.path("half-baseline.json"), needle="not a shard file")
    merge_error(part_files[0], files[1], files[2], needle="run every shard with the same PATHs")
    p.write("broken.json", "[" * 50000)
    merge_error(*files, p.path("broken.json"), needle="nested more than")
    merge_error(needle="no shard files")
    for spec in ("0/3", "4/3", "x", "1/0", "2"):
        run = p.run("analyze", "-p", "build", "--shard", spec)
        check(run.returncode == 2 and "--shard wants K/N" in run.stderr, f"--shard {spec}:\n{run.stderr}")
    run = p.run("analyze", "-p", "build", "--shard", "1/2", "--format", "sarif")
    check(run.returncode == 2 and "give it to the merge" in run.stderr, run.stderr)
    print("shards: 1-4 ways partition the units stably; merge of 3 == unsharded (json, sarif, "
          "text, baseline, facts)")
    return p


CASES = {"cache": case_cache, "cache_corrupt": case_cache_corrupt, "shards": case_shards}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--devcopy", required=True)
    ap.add_argument("--mock", required=True)
    args = ap.parse_args()
    args.devcopy = os.path.abspath(args.devcopy)
    args.mock = os.path.abspath(args.mock)
    try:
        p = CASES[args.case](args)
    except Failure as e:
        print(f"FAIL {args.case}: {e}")
        return 1
    shutil.rmtree(p.dir)
    print(f"ok {args.case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
