#!/usr/bin/env python3
"""Recall and precision of the devcopy checks on real LibTorch code.

Reads manifest.tsv (repository, commit, path, line, label, note), checks each
labelled file out of the fetched mirrors at its commit, runs the analyzer on it
with every devcopy-* check, and compares the findings with the labels.

  python3 bench/realcode/run.py [--mirrors /work/.mirror] [--tidy build/analyzer/devcopy-tidy] [-j 2]

See README.md next to this file for how the mirrors are fetched and how the
labels were decided.
"""
import argparse
import glob
import collections
import concurrent.futures
import csv
import hashlib
import json
import os
import shlex
import re
import shutil
import subprocess
import sys
import tempfile
import sysconfig
import time

from implfiles import SPLICE_VERSION, including_header, map_back, splice
from stubs import STUB_VERSION, stub_text

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RULES = ["devcopy-host-sync-in-loop", "devcopy-create-then-move",
         "devcopy-redundant-chain", "devcopy-repeated-module-move",
         "devcopy-copy-in-loop", "devcopy-discarded-copy",
         "devcopy-discarded-result"]
# It is open whether discarded non-mutating ops get their own rule or
# widen devcopy-discarded-copy: either id matches a label of the other.
SAME = {"devcopy-discarded-copy": {"devcopy-discarded-result"},
        "devcopy-discarded-result": {"devcopy-discarded-copy"}}
# Findings of a multi-line statement may land on another of its lines.
TOLERANCE = 2
HEADER_EXT = (".h", ".hh", ".hpp", ".hxx", ".cuh", ".inl", ".tpp", ".ipp", ".txx")
SOURCE_EXT = (".cpp", ".cc", ".cxx", ".cu") + HEADER_EXT
TORCH_INCLUDES = ["/usr/include/torch/csrc/api/include"]
# Third-party libraries the projects build against, used where installed
# (Debian: libopencv-dev puts OpenCV 4 under opencv4/); stand-ins otherwise.
THIRD_PARTY_INCLUDES = [d for d in ["/usr/include/opencv4"] if os.path.isdir(d)]
# <torch/extension.h> includes <Python.h>: without it the whole file stops at
# a fatal error. Debian's python3-dev headers, where installed.
TORCH_INCLUDES += sorted(os.path.dirname(p) for p in glob.glob("/usr/include/python3*/Python.h"))[-1:]
WARNING = re.compile(r"^(.*?):(\d+):(\d+): warning: (.*) \[(devcopy-[a-z-]+)\]$")
ERROR = re.compile(r"^(.*?):(\d+):(\d+): error: ")
# A vendored copy of LibTorch's own headers must not shadow the installed ones.
VENDORED = re.compile(r"(^|/)(ATen|c10|caffe2|pybind11|torch/csrc)/")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def die(msg):
    sys.exit(f"realcode: {msg}")


def read_manifest(path):
    rows = []
    with open(path, newline="") as f:
        for n, r in enumerate(csv.DictReader(f, delimiter="\t"), 2):
            if not r.get("repository") or not r.get("line", "").isdigit():
                die(f"{path}:{n}: malformed row")
            label = r["label"]
            if label != "ok" and label not in RULES:
                die(f"{path}:{n}: unknown label '{label}'")
            rows.append(r)
    return rows


def system_dirs():
    p = subprocess.run(["clang++-19", "-x", "c++", "-E", "-v", "/dev/null",
                        "-o", "/dev/null"], capture_output=True, text=True)
    dirs, on = [], False
    for line in p.stderr.splitlines():
        if line.startswith("#include <...>"):
            on = True
        elif line.startswith("End of search"):
            on = False
        elif on:
            dirs.append(os.path.normpath(line.strip()))
    return TORCH_INCLUDES + THIRD_PARTY_INCLUDES + dirs


def checkout(git_dir, commit, dest):
    """Extracts the commit's tree into dest (only source files: no assets)."""
    ls = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z",
                         "--name-only", commit], capture_output=True)
    if ls.returncode:
        die(f"{git_dir}: commit {commit} not found (fetch the repository again)")
    files = [f for f in ls.stdout.decode().split("\0") if f.endswith(SOURCE_EXT)]
    os.makedirs(dest, exist_ok=True)
    for i in range(0, len(files), 500):
        arch = subprocess.run(["git", f"--git-dir={git_dir}", "archive", commit,
                               "--"] + files[i:i + 500], capture_output=True)
        if arch.returncode:
            die(f"{git_dir}: git archive failed: {arch.stderr.decode()[:300]}")
        subprocess.run(["tar", "-x", "-C", dest], input=arch.stdout, check=True)
    return files


def prepare(repo_dir, files, sysdirs, stub_dir):
    """Include dirs for the project's own headers, and empty stubs for the
    third-party headers that are not installed here (OpenCV, Qt, ...), so that
    parsing goes on; code using those libraries then has errors but the
    LibTorch code around it keeps its types."""
    inc = set()
    for f in files:
        if f.endswith(HEADER_EXT) and not VENDORED.search(f):
            d = os.path.dirname(f)
            while True:
                inc.add(d)
                if not d:
                    break
                d = os.path.dirname(d)
    incdirs = sorted(os.path.join(repo_dir, d) if d else repo_dir for d in inc)
    have = set(files)
    project = set()  # header names reachable from a project include dir
    for f in have:
        for d in inc:
            pre = d + "/" if d else ""
            if f.startswith(pre):
                project.add(f[len(pre):])
    stubs = 0
    for f in files:
        try:
            text = open(os.path.join(repo_dir, f), errors="replace").read()
        except OSError:
            continue
        for kind, name in INCLUDE.findall(text):
            name = os.path.normpath(name)
            if name.startswith("..") or os.path.isabs(name):
                rel = os.path.normpath(os.path.join(os.path.dirname(f), name))
                if rel in have or os.path.isabs(name):
                    continue
            if name in project:
                continue
            if kind == '"' and os.path.normpath(
                    os.path.join(os.path.dirname(f), name)) in have:
                continue
            if any(os.path.exists(os.path.join(d, name)) for d in sysdirs):
                continue
            stub = os.path.join(stub_dir, name)
            if not os.path.exists(stub):
                os.makedirs(os.path.dirname(stub), exist_ok=True)
                with open(stub, "w") as s:
                    s.write(stub_text(name) or "// empty stub written by bench/realcode/run.py\n")
                stubs += 1
    return incdirs, stubs


def base_flags(std):
    flags = [f"-std={std}", "-D_GLIBCXX_USE_CXX11_ABI=1", "-Wno-everything"]
    for t in TORCH_INCLUDES + THIRD_PARTY_INCLUDES:
        flags += ["-isystem", t]
    # <torch/extension.h> includes Python.h.
    py = sysconfig.get_paths().get("include")
    if py and os.path.exists(os.path.join(py, "Python.h")):
        flags += ["-idirafter", py]
    return flags


def build_pch(work, std):
    """<torch/torch.h> and <torch/script.h> parsed once into a precompiled
    header that every run includes first: the same findings (checked on the
    corpus) at about half the CPU time."""
    header = os.path.join(work, f"torch_all.{std}.h")
    with open(header, "w") as f:
        f.write("#include <torch/torch.h>\n#include <torch/script.h>\n")
    p = subprocess.run(["clang++-19", "-x", "c++-header"] + base_flags(std) +
                       [header, "-o", header + ".pch"], capture_output=True, text=True)
    if p.returncode:
        die(f"could not precompile the LibTorch headers (use --no-pch):\n{p.stderr[-1000:]}")
    return header


def analyse(tidy, repo_dir, path, incdirs, stub_dir, std, pch, via=None):
    """Findings (line, rule, message) on path. A template implementation
    file is analysed spliced into via, the header that includes it
    (implfiles.py says why), and only its own lines are counted."""
    if via:
        copy, at, count = splice(repo_dir, via, path)
        src = os.path.join(repo_dir, copy)
    else:
        src = os.path.join(repo_dir, path)
    args = [tidy, "--checks=-*,devcopy-*", "--quiet", src, "--"] + base_flags(std) + [
        "-ferror-limit=0"]
    if src.endswith(HEADER_EXT + (".cu",)):
        args[5:5] = ["-x", "c++"]
    if pch:
        args += ["-include", pch]
    # Standard headers the projects' own toolchains included transitively.
    for h in ("optional", "filesystem"):
        args += ["-include", h]
    # The file's own folder first, as every project's build puts it (a
    # sibling lesson's header of the same name must not shadow it).
    args += ["-I", os.path.dirname(src)]
    for d in incdirs:
        args += ["-I", d]
    args += ["-idirafter", stub_dir]
    if os.environ.get("DEVCOPY_REALCODE_ECHO"):  # to rerun one file by hand
        print(shlex.join(args), file=sys.stderr)
    t0 = time.time()
    p = subprocess.run(args, capture_output=True, text=True)
    found, errors, first = [], 0, []
    for line in p.stdout.splitlines():
        m = WARNING.match(line)
        if m and os.path.realpath(m.group(1)) == os.path.realpath(src):
            found.append((int(m.group(2)), m.group(5), m.group(4)))
        elif ERROR.match(line):
            errors += 1
            if len(first) < 3:
                first.append(line.replace(repo_dir + "/", "")[:160])
    if p.returncode not in (0, 1) and not found and not errors:
        return path, None, f"{tidy} exited {p.returncode}: {p.stderr[-300:]}", 0, []
    if via:
        found = map_back(found, at, count)
    return path, sorted(set(found)), errors, time.time() - t0, first


def matches(rule, label):
    return rule == label or label in SAME.get(rule, ())


def score(rows, findings):
    """Per rule: found, missed, reported on fine lines (or under another
    rule's line), and reported lines nobody has labelled yet."""
    stats = collections.defaultdict(collections.Counter)
    unlabelled = []
    by_file = collections.defaultdict(list)
    for r in rows:
        by_file[(r["repository"], r["path"])].append(r)
    for key, labels in by_file.items():
        got = findings.get(key, [])
        matched = set()  # (line, rule) of positive labels that were reported
        used = set()     # findings accounted for
        for i, (line, rule, _) in enumerate(got):
            for l in labels:
                if int(l["line"]) == line and matches(rule, l["label"]):
                    matched.add((int(l["line"]), l["label"]))
                    used.add(i)
        for i, (line, rule, _) in enumerate(got):
            if i in used:
                continue
            near = [l for l in labels if matches(rule, l["label"]) and
                    abs(int(l["line"]) - line) <= TOLERANCE and
                    (int(l["line"]), l["label"]) not in matched]
            if near:
                matched.add((int(near[0]["line"]), near[0]["label"]))
                used.add(i)
        fp_lines = set()
        for i, (line, rule, msg) in enumerate(got):
            if i in used:
                continue
            on = [l for l in labels if int(l["line"]) == line]
            if on:
                if (line, rule) not in fp_lines:
                    fp_lines.add((line, rule))
                    stats[rule]["fp"] += 1
            else:
                unlabelled.append((key[0], key[1], line, rule, msg))
        for l in labels:
            if l["label"] == "ok":
                continue
            k = "found" if (int(l["line"]), l["label"]) in matched else "missed"
            stats[l["label"]][k] += 1
    return stats, unlabelled


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mirrors", default="/work/.mirror",
                    help="folder of fetched mirrors, owner+name/repo (default %(default)s)")
    ap.add_argument("--tidy", default=os.path.join(ROOT, "build/analyzer/devcopy-tidy"),
                    help="devcopy-tidy (or clang-tidy built with the module)")
    ap.add_argument("--manifest", default=os.path.join(HERE, "manifest.tsv"))
    ap.add_argument("-j", type=int, default=2, help="parallel analyzer runs")
    # LibTorch 1.13's headers do not parse as C++20 with clang 19 and
    # libstdc++ 12 (constexpr std::vector of an incomplete c10::IValue).
    ap.add_argument("--std", default="c++17")
    ap.add_argument("--repo", action="append", help="only this repository (owner/name)")
    ap.add_argument("--no-pch", action="store_true",
                    help="parse <torch/torch.h> in every run instead of precompiling it once")
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "devcopy-realcode-cache"),
                    help="findings per (analyzer binary, file, commit) are kept here so that a rerun "
                         "analyses only what changed; --cache '' turns it off (default %(default)s)")
    ap.add_argument("--keep", help="check out into this folder and keep it")
    ap.add_argument("--errors", action="store_true",
                    help="list the files with parse errors and their first errors")
    ap.add_argument("--show", action="store_true",
                    help="list every finding, missed label and false finding")
    a = ap.parse_args()

    if not os.access(a.tidy, os.X_OK):
        die(f"analyzer '{a.tidy}' not found or not executable "
            "(cmake --build build --target devcopy-tidy, or pass --tidy)")
    rows = read_manifest(a.manifest)
    if a.repo:
        rows = [r for r in rows if r["repository"] in a.repo]
    repos = sorted({(r["repository"], r["commit"]) for r in rows})
    missing = [r for r, _ in repos if not os.path.isdir(
        os.path.join(a.mirrors, r.replace("/", "+"), "repo"))]
    if not os.path.isdir(a.mirrors) or missing:
        die(f"mirrors missing under {a.mirrors}: {', '.join(missing) or 'the folder itself'}; "
            "fetch them first (see bench/realcode/README.md)")

    work = a.keep or tempfile.mkdtemp(prefix="devcopy-realcode-")
    sysdirs = system_dirs()
    jobs, nstubs = [], 0
    for repo, commit in repos:
        git_dir = os.path.join(a.mirrors, repo.replace("/", "+"), "repo")
        dest = os.path.join(work, repo.replace("/", "+") + "-" + commit[:12])
        stub_dir = dest + ".stubs"
        files = checkout(git_dir, commit, dest)
        incdirs, n = prepare(dest, files, sysdirs, stub_dir)
        nstubs += n
        std = a.std
        for path in sorted({r["path"] for r in rows if r["repository"] == repo}):
            if path not in files:
                die(f"{repo}@{commit[:12]}: {path} is not in that commit")
            jobs.append((repo, dest, path, incdirs, stub_dir, std,
                         including_header(dest, files, path)))

    t0 = time.time()
    findings, errs, firsts = {}, {}, {}
    st = os.stat(a.tidy)
    tidy_key = f"{os.path.realpath(a.tidy)}:{st.st_size}:{st.st_mtime_ns}"
    commits = dict(repos)

    def cache_file(repo, path, std):
        key = (f"{tidy_key}:{std}:{STUB_VERSION}:{SPLICE_VERSION}:{THIRD_PARTY_INCLUDES}:"
               f"{repo}:{commits[repo]}:{path}")
        return os.path.join(a.cache, hashlib.sha1(key.encode()).hexdigest() + ".json")

    todo = []
    for job in jobs:
        c = cache_file(job[0], job[2], job[5]) if a.cache else None
        if c and os.path.exists(c):
            with open(c) as f:
                got, err, *rest = json.load(f)
            findings[(job[0], job[2])] = [tuple(g) for g in got]
            errs[(job[0], job[2])] = err
            firsts[(job[0], job[2])] = rest[0] if rest else []
        else:
            todo.append(job)
    pchs = {} if a.no_pch else {std: build_pch(work, std) for std in {j[5] for j in todo}}
    with concurrent.futures.ThreadPoolExecutor(max(1, a.j)) as ex:
        futs = {ex.submit(analyse, a.tidy, d, p, inc, s, std, pchs.get(std), via): (repo, p, std)
                for repo, d, p, inc, s, std, via in todo}
        for n, f in enumerate(concurrent.futures.as_completed(futs), 1):
            repo, path, std = futs[f]
            _, got, err, secs, first = f.result()
            if got is None:
                die(f"{repo}/{path}: {err}")
            findings[(repo, path)] = got
            errs[(repo, path)] = err
            firsts[(repo, path)] = first
            print(f"[{n}/{len(todo)}] {repo} {path} ({secs:.0f} s)", file=sys.stderr)
            if a.cache:
                os.makedirs(a.cache, exist_ok=True)
                with open(cache_file(repo, path, std), "w") as c:
                    json.dump([got, err, first], c)
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)

    stats, unlabelled = score(rows, findings)
    npos = sum(1 for r in rows if r["label"] != "ok")
    print(f"analyzer: {a.tidy}")
    print(f"{len(repos)} repositories, {len(jobs)} files, {len(rows)} labelled lines "
          f"({npos} findings, {len(rows) - npos} ok); {nstubs} stub headers; "
          f"{len(todo)} files analysed in {time.time() - t0:.0f} s with -j{a.j}, "
          f"{len(jobs) - len(todo)} from the cache")
    bad = {k: v for k, v in errs.items() if v}
    if bad:
        print(f"files with parse errors (missing third-party headers stubbed): "
              f"{len(bad)} of {len(jobs)}")
        if a.errors:
            for (repo, path), n in sorted(bad.items()):
                print(f"  {repo} {path}: {n} errors")
                for line in firsts.get((repo, path), []):
                    print(f"      {line}")
    print()
    print(f"{'rule':30} {'found':>6} {'missed':>7} {'fine-lines':>11} {'recall':>7} {'precision':>10}")
    tot = collections.Counter()
    for rule in RULES + sorted(set(stats) - set(RULES)):
        s = stats[rule]
        tot.update(s)
        n, p = s["found"] + s["missed"], s["found"] + s["fp"]
        rec = f"{s['found'] / n:.2f}" if n else "-"
        prec = f"{s['found'] / p:.2f}" if p else "-"
        print(f"{rule:30} {s['found']:6} {s['missed']:7} {s['fp']:11} {rec:>7} {prec:>10}")
    n, p = tot["found"] + tot["missed"], tot["found"] + tot["fp"]
    print(f"{'all':30} {tot['found']:6} {tot['missed']:7} {tot['fp']:11} "
          f"{tot['found'] / n if n else 0:7.2f} {tot['found'] / p if p else 0:10.2f}")
    print(f"\nrecall {tot['found'] / n if n else 0:.2f}, precision "
          f"{tot['found'] / p if p else 0:.2f} (reported lines not in the manifest: {len(unlabelled)})")
    if unlabelled:
        print("\nreported, not labelled yet:")
        for repo, path, line, rule, msg in sorted(unlabelled):
            print(f"  {repo} {path}:{line} [{rule}] {msg[:100]}")
    if a.show:
        print("\nper label:")
        for r in rows:
            key = (r["repository"], r["path"])
            got = [(l, ru) for l, ru, _ in findings.get(key, [])
                   if abs(l - int(r["line"])) <= (0 if r["label"] == "ok" else TOLERANCE)]
            hit = any(matches(ru, r["label"]) for _, ru in got)
            tag = ("FOUND " if hit else "MISSED") if r["label"] != "ok" else (
                "FALSE " if got else "ok    ")
            print(f"  {tag} {r['repository']} {r['path']}:{r['line']} {r['label']}"
                  f" {' '.join(ru for _, ru in got)}")


if __name__ == "__main__":
    main()
