#!/usr/bin/env python3
"""Recall and precision of ``python3 -m devcopy lint`` on real PyTorch code.

Reads the labelled sets (tune.tsv, blind.tsv, blind2.tsv, blind3.tsv,
blind4.tsv, ..., blind9.tsv: repository, commit, path, line, label, note), checks every Python
file of each labelled repository out of the fetched mirrors at its commit,
lints the labelled files with the JSON output and compares the findings with
the labels, per set and per rule.

  python3 bench/pyreal/run.py [--set tune|blind|blind2|blind3|blind4|...|blind9|all] [--mirrors /work/.mirror]
                              [--devcopy-python python] [--show] [--repo OWNER/NAME]

See README.md next to this file for how the mirrors are fetched and how the
labels were decided.
"""
import argparse
import collections
import csv
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SETS = ("tune", "blind", "blind2", "blind3", "blind4", "blind5", "blind6", "blind7", "blind8", "blind9", "blind10", "blind11", "blind12", "blind13")
RULES = ["devcopy-discarded-copy", "devcopy-repeated-module-move",
         "devcopy-create-then-move", "devcopy-copy-in-loop",
         "devcopy-host-sync-in-loop", "devcopy-redundant-chain",
         "devcopy-checkpoint-to-device"]
# As in bench/realcode: a dropped non-mutating op may be reported under its
# own id; either id matches a label of the other.
SAME = {"devcopy-discarded-copy": {"devcopy-discarded-result"},
        "devcopy-discarded-result": {"devcopy-discarded-copy"}}
# Findings of a multi-line statement may land on another of its lines.
TOLERANCE = 2
# Rules whose notes name the other end of the same finding: create-then-move
# through a local is reported at the factory with a note at each move, and a
# label on either end is that finding (blind.tsv labels the move, blind2.tsv
# the factory).
BOTH_ENDS = {"devcopy-create-then-move"}
FIELDS = ["repository", "commit", "path", "line", "label", "note"]


class Failure(Exception):
    """A problem that stops the run, reported as one line."""


def read_set(path):
    """Rows of one labelled set, checked for shape and known labels.

    Args:
        path: a TSV file with the columns of ``FIELDS``.
    """
    try:
        f = open(path, newline="")
    except OSError as e:
        raise Failure(f"cannot read {path}: {e.strerror}")
    rows, seen = [], set()
    with f:
        reader = csv.DictReader(f, delimiter="\t")
        if reader.fieldnames != FIELDS:
            raise Failure(f"{path}: the header must be {' '.join(FIELDS)}")
        for n, r in enumerate(reader, 2):
            if None in r or not all(r.get(k) for k in FIELDS[:5]) or not r["line"].isdigit():
                raise Failure(f"{path}:{n}: malformed row")
            if r["label"] != "ok" and r["label"] not in RULES:
                raise Failure(f"{path}:{n}: unknown label '{r['label']}'")
            key = (r["repository"], r["commit"], r["path"], int(r["line"]))
            if key in seen:
                raise Failure(f"{path}:{n}: line labelled twice")
            seen.add(key)
            rows.append(dict(r, line=int(r["line"])))
    return rows


def mirror(mirrors, repo):
    """The git directory of a repository's mirror: ``<owner>+<name>/repo``,
    a bare clone, or its ``.git`` when the mirror was fetched with a work
    tree layout (``repo/.git``)."""
    d = os.path.join(mirrors, repo.replace("/", "+"), "repo")
    return os.path.join(d, ".git") if os.path.isdir(os.path.join(d, ".git")) else d


def checkout(git_dir, commit, dest):
    """Extracts every ``.py`` file of the commit into dest, keeping the
    repository's layout so that imports between its modules resolve.

    Returns:
        The set of paths extracted.
    """
    ls = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z",
                         "--name-only", commit], capture_output=True)
    if ls.returncode:
        raise Failure(f"{git_dir}: commit {commit} not found (fetch the repository again)")
    files = [f for f in ls.stdout.decode().split("\0") if f.endswith(".py")]
    os.makedirs(dest, exist_ok=True)
    for i in range(0, len(files), 500):
        arch = subprocess.run(["git", f"--git-dir={git_dir}", "archive", commit, "--"]
                              + files[i:i + 500], capture_output=True)
        if arch.returncode:
            raise Failure(f"{git_dir}: git archive failed: "
                          f"{arch.stderr.decode(errors='replace').strip()[:200]}")
        tar = subprocess.run(["tar", "-x", "-C", dest], input=arch.stdout, capture_output=True)
        if tar.returncode:
            raise Failure(f"cannot extract {git_dir}@{commit[:12]} into {dest}: "
                          f"{tar.stderr.decode(errors='replace').strip()[:200]}")
    return set(files)


def lint(linter, env, root, paths):
    """Runs the linter on paths under root and returns its JSON document.

    Args:
        linter: the command before the lint arguments, as a list.
        env: the environment to run it in.
        root: the checkout, passed as ``--root``.
        paths: files relative to root.
    """
    cmd = linter + ["--format", "json", "--root", root] + sorted(paths)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=root)
    except OSError as e:
        raise Failure(f"cannot run the linter '{shlex.join(linter)}': {e.strerror}")
    last = (p.stderr.strip() or p.stdout.strip() or "no output").splitlines()[-1]
    try:
        doc = json.loads(p.stdout)
        if not isinstance(doc["findings"], list) or not isinstance(doc.get("errors", []), list):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        doc = None
    # Exit 2 with its document and the errors listed: some files could not be
    # read (a file another Python accepted); the others were still linted.
    if p.returncode not in (0, 1) and not (p.returncode == 2 and doc and doc.get("errors")):
        raise Failure(f"the linter exited {p.returncode} on {root}: {last[:300]}")
    if doc is None:
        raise Failure(f"the linter's output on {root} is not its JSON document "
                      f"(starts {p.stdout[:80]!r})")
    return doc


def relative(root, name):
    """A finding's file as a path relative to the checkout."""
    if os.path.isabs(name):
        name = os.path.relpath(name, root)
    return os.path.normpath(name)


def matches(rule, label):
    return rule == label or label in SAME.get(rule, ())


def score(rows, findings):
    """Per rule: labels found and missed, findings on lines labelled ``ok``
    or with another rule ("wrong"), and reported lines nobody labelled.

    Args:
        rows: labels, each with repository, commit, path, line, label.
        findings: (repository, commit, path) -> [(line, rule, message)] or
            [(line, rule, message, other_ends)]: other_ends are the lines of
            the finding's notes in the same file, for the rules of BOTH_ENDS.

    Returns:
        (stats, unlabelled): stats maps a rule to a Counter of found,
        missed and wrong; unlabelled lists (repository, commit, path, line,
        rule, message).
    """
    stats = collections.defaultdict(collections.Counter)
    unlabelled = []
    by_file = collections.defaultdict(list)
    for r in rows:
        by_file[(r["repository"], r["commit"], r["path"])].append(r)
    for key, labels in by_file.items():
        got = [f[:3] for f in findings.get(key, [])]
        ends = [f[3] if len(f) > 3 else () for f in findings.get(key, [])]
        matched, used = set(), set()
        # Exact lines first, so that a finding near two labels takes its own;
        # then the other ends of a finding, then the neighbours.
        for i, (line, rule, _) in enumerate(got):
            for lab in labels:
                if lab["line"] == line and matches(rule, lab["label"]):
                    matched.add((lab["line"], lab["label"]))
                    used.add(i)
        for i, (line, rule, _) in enumerate(got):
            for lab in labels:
                if i not in used and lab["line"] in ends[i] and matches(rule, lab["label"]) \
                        and (lab["line"], lab["label"]) not in matched:
                    matched.add((lab["line"], lab["label"]))
                    used.add(i)
        for i, (line, rule, _) in enumerate(got):
            if i in used:
                continue
            near = sorted((abs(lab["line"] - line), lab["line"], lab["label"]) for lab in labels
                          if matches(rule, lab["label"]) and abs(lab["line"] - line) <= TOLERANCE
                          and (lab["line"], lab["label"]) not in matched)
            if near:
                matched.add(near[0][1:])
                used.add(i)
        wrong = set()
        for i, (line, rule, msg) in enumerate(got):
            if i in used:
                continue
            if any(lab["line"] == line for lab in labels):
                if (line, rule) not in wrong:
                    wrong.add((line, rule))
                    stats[rule]["wrong"] += 1
            else:
                unlabelled.append(key + (line, rule, msg))
        for lab in labels:
            if lab["label"] != "ok":
                found = (lab["line"], lab["label"]) in matched
                stats[lab["label"]]["found" if found else "missed"] += 1
    # Findings in files of these commits that carry no label at all.
    commits = {key[:2] for key in by_file}
    for key, got in findings.items():
        if key not in by_file and key[:2] in commits:
            unlabelled += [key + tuple(f[:3]) for f in got]
    return stats, unlabelled


def table(title, stats):
    """The per-rule table of one set, as text."""
    out = [title, f"  {'rule':32} {'found':>6} {'missed':>7} {'wrong':>6} {'recall':>7} {'precision':>10}"]
    total = collections.Counter()
    for rule in RULES + sorted(set(stats) - set(RULES)):
        s = stats.get(rule, collections.Counter())
        total.update(s)
        out.append("  " + row(rule, s))
    out.append("  " + row("all", total))
    return "\n".join(out)


def row(name, s):
    n, p = s["found"] + s["missed"], s["found"] + s["wrong"]
    rec = f"{s['found'] / n:.2f}" if n else "-"
    prec = f"{s['found'] / p:.2f}" if p else "-"
    return f"{name:32} {s['found']:6} {s['missed']:7} {s['wrong']:6} {rec:>7} {prec:>10}"


def show(rows, findings):
    """One line per label: what was reported on or near it."""
    out = []
    for r in rows:
        key = (r["repository"], r["commit"], r["path"])
        near = 0 if r["label"] == "ok" else TOLERANCE
        got = [f[1] for f in findings.get(key, []) if abs(f[0] - r["line"]) <= near
               or r["label"] != "ok" and r["line"] in (f[3] if len(f) > 3 else ())]
        if r["label"] == "ok":
            tag = "WRONG " if got else "ok    "
        else:
            tag = "FOUND " if any(matches(ru, r["label"]) for ru in got) else "MISSED"
        out.append(f"  {tag} {r['repository']} {r['path']}:{r['line']} {r['label']} {' '.join(got)}")
    return "\n".join(out)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", choices=SETS + ("all",), default="all",
                    help="which labelled set to measure (default %(default)s)")
    ap.add_argument("--mirrors", default="/work/.mirror",
                    help="folder of fetched mirrors, <owner>+<name>/repo (default %(default)s)")
    ap.add_argument("--devcopy-python", default=os.path.join(ROOT, "python"),
                    help="folder holding the devcopy package, put first on PYTHONPATH "
                         "(default: this checkout's python/)")
    ap.add_argument("--linter", help="command to run instead of 'python3 -m devcopy lint' "
                                     "(the lint arguments are appended)")
    for name in SETS:
        ap.add_argument(f"--{name}-file", default=os.path.join(HERE, f"{name}.tsv"),
                        help=f"labels of the {name} set (default: {name}.tsv next to this script)")
    ap.add_argument("--repo", action="append", help="only this repository (owner/name); repeatable")
    ap.add_argument("--keep", help="check out into this folder and keep it")
    ap.add_argument("--show", action="store_true", help="list every label with what was reported on it")
    return ap.parse_args(argv)


def run(a):
    """Measures the chosen sets; returns the report as text."""
    names = SETS if a.set == "all" else (a.set,)
    sets = {n: read_set(getattr(a, f"{n}_file")) for n in names}
    if a.repo:
        sets = {n: [r for r in rows if r["repository"] in a.repo] for n, rows in sets.items()}
    rows = [r for n in names for r in sets[n]]
    if not rows:
        raise Failure("no labelled lines to measure (check --set and --repo)")
    commits = sorted({(r["repository"], r["commit"]) for r in rows})
    missing = sorted({repo for repo, _ in commits if not os.path.isdir(mirror(a.mirrors, repo))})
    if missing:
        raise Failure(f"mirrors missing under {a.mirrors}: {', '.join(missing)}; "
                      "fetch them first (see bench/pyreal/README.md)")
    if a.linter:
        # It runs in each checkout: files it names are taken from here.
        linter = [os.path.abspath(t) if os.path.exists(t) else t for t in shlex.split(a.linter)]
    else:
        linter = [sys.executable, "-m", "devcopy", "lint"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.abspath(a.devcopy_python)] + [p for p in [env.get("PYTHONPATH")] if p])
    work = a.keep or tempfile.mkdtemp(prefix="devcopy-pyreal-")
    findings, errors, nfiles = {}, [], 0
    try:
        for repo, commit in commits:
            dest = os.path.join(os.path.abspath(work), repo.replace("/", "+") + "-" + commit[:12])
            have = checkout(mirror(a.mirrors, repo), commit, dest)
            paths = {r["path"] for r in rows if (r["repository"], r["commit"]) == (repo, commit)}
            absent = sorted(paths - have)
            if absent:
                raise Failure(f"{repo}@{commit[:12]}: {absent[0]} is not in that commit")
            nfiles += len(paths)
            doc = lint(linter, env, dest, paths)
            for f in doc["findings"]:
                try:
                    path = relative(dest, f["file"])
                    ends = tuple(int(n["line"]) for n in f.get("notes") or ()
                                 if f["rule"] in BOTH_ENDS and relative(dest, n["file"]) == path)
                    findings.setdefault((repo, commit, path), []).append(
                        (int(f["line"]), f["rule"], f.get("message", ""), ends))
                except (KeyError, TypeError, ValueError):
                    raise Failure(f"the linter reported a finding without file, line and rule: {f!r:.200}")
            errors += [(repo, e) for e in doc.get("errors") or []]
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)

    npos = sum(r["label"] != "ok" for r in rows)
    out = [f"linter: {shlex.join(linter)} (PYTHONPATH starts {os.path.abspath(a.devcopy_python)})",
           f"{len({r for r, _ in commits})} repositories, {nfiles} files, {len(rows)} labelled lines "
           f"({npos} findings, {len(rows) - npos} ok)"]
    if errors:
        out.append(f"linter errors: {len(errors)}")
        out += [f"  {repo}: {json.dumps(e)[:200]}" for repo, e in errors]
    for n in names:
        out += ["", table(f"{n} set ({len(sets[n])} labels)", score(sets[n], findings)[0])]
    # Unlabelled lines against every label measured, so that a line labelled
    # in one set is not listed as unlabelled by the other.
    stats, unlabelled = score(rows, findings)
    if len(names) > 1:
        out += ["", table(f"all sets ({len(rows)} labels)", stats)]
    out.append(f"\nreported lines not labelled yet: {len(unlabelled)}")
    for repo, _, path, line, rule, msg in sorted(unlabelled):
        out.append(f"  {repo} {path}:{line} [{rule}] {msg[:100]}")
    if a.show:
        out += ["", "per label:", show(rows, findings)]
    return "\n".join(out)


def main(argv=None):
    try:
        print(run(parse_args(argv)))
    except Failure as e:
        sys.exit(f"pyreal: {e}")


if __name__ == "__main__":
    main()
