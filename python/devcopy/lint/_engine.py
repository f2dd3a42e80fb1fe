"""Finds the Python files, lints each one (in parallel processes), joins what
files say about each other, and applies `# noqa` / `# NOLINT` suppressions."""
import ast
import concurrent.futures
import fnmatch
import io
import os
import re
import sys
import tokenize
import warnings

from ._catalog import RULES
from ._facts import FileFacts, Join, class_facts
from ._kinds import source_lines
from ._walk import Walk
from .rules import ALL

SKIP_DIRS = frozenset((".git", ".hg", ".svn", "__pycache__", ".tox", ".nox", ".venv", "venv",
                       "node_modules", ".mypy_cache", ".pytest_cache", "site-packages", ".eggs"))
# flake8 codes of the rules (the flake8 plugin reports these; `# noqa: DCP101` works too).
FLAKE8_CODES = {
    "devcopy-discarded-copy": "DCP101",
    "devcopy-repeated-module-move": "DCP102",
    "devcopy-create-then-move": "DCP103",
    "devcopy-copy-in-loop": "DCP104",
    "devcopy-host-sync-in-loop": "DCP105",
    "devcopy-redundant-chain": "DCP106",
    "devcopy-checkpoint-to-device": "DCP107",
}
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[\w\-*]+(?:[,\s]+[\w\-*]+)*))?", re.I)
# Text a file must hold for any rule to have something to say.
_TRIGGERS = re.compile(r"\.(?:to|cuda|cpu|item|tolist|numpy|clone|load_state_dict|copy_)\(|torch|print\(")


class LintError(Exception):
    """A problem with the input that stops the run (exit code 2)."""


def discover(paths):
    """The .py files under the given files and folders, sorted, each once."""
    out, seen = [], set()
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
                for f in sorted(files):
                    if f.endswith((".py", ".pyi")):
                        full = os.path.join(root, f)
                        if full not in seen:
                            seen.add(full)
                            out.append(full)
        elif os.path.isfile(p):
            if p not in seen:
                seen.add(p)
                out.append(p)
        else:
            raise LintError(f"no such file or folder: {p}")
    return out


def read_source(path):
    """The file's text, decoded as Python decodes it (PEP 263 cookies)."""
    with open(path, "rb") as f:
        data = f.read()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


def suppressions(source, noqa=True):
    """{line: None (all rules) or a set of rule ids / flake8 codes / globs}.
    A bare `# noqa` silences every rule on its line, as flake8 does."""
    out = {}
    if "noqa" not in source and "NOLINT" not in source and "NOQA" not in source:
        return out
    for i, line in enumerate(source_lines(source), 1):
        if "#" not in line:
            continue
        comment = line[line.index("#"):]
        m = _NOQA.search(comment) if noqa else None
        if m:
            codes = m.group("codes")
            _merge(out, i, None if not codes else set(re.split(r"[,\s]+", codes.strip())))
        for m in re.finditer(r"#\s*NOLINT(NEXTLINE)?(?:\(([^)]*)\))?", comment):
            ids = m.group(2)
            _merge(out, i + 1 if m.group(1) else i,
                   None if ids is None else {s.strip() for s in ids.split(",") if s.strip()})
    return out


def _merge(out, line, codes):
    if line in out and (out[line] is None or codes is None):
        out[line] = None
    else:
        out[line] = (out.get(line) or set()) | codes if codes is not None else None


def suppressed(rule, line, table):
    if line not in table:
        return False
    codes = table[line]
    if codes is None:
        return True
    flake = FLAKE8_CODES.get(rule, "")
    for c in codes:
        if fnmatch.fnmatchcase(rule, c) or c.upper() == flake or (c.upper() == "DCP" and flake):
            return True
    return False


def lint_source(path, source, rules=ALL, tree=None):
    """Lints one file's text (or its tree, parsed already): (findings, class
    facts, events); raises SyntaxError."""
    # The walk recurses once per nested expression (`a + b + ...` of a few
    # thousand terms is valid Python); Python 3.11 keeps such frames off the C stack.
    limit = 20000 if sys.version_info >= (3, 11) else 5000
    if sys.getrecursionlimit() < limit:
        sys.setrecursionlimit(limit)
    if tree is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences are not ours to report
            tree = ast.parse(source, filename=path)
    if not _TRIGGERS.search(source):
        return [], {}, []  # parsed for its syntax errors; nothing for a rule here
    facts = FileFacts(source, path)
    walk = Walk(path, source, tree, rules, facts)
    walk.run()
    return walk.findings, class_facts(walk), walk.events


def lint_file(path):
    """One worker's job: a dict the parent joins (picklable)."""
    try:
        source = read_source(path)
    except (OSError, UnicodeDecodeError, SyntaxError) as e:
        return {"path": path, "error": f"cannot read: {getattr(e, 'strerror', None) or e}"}
    try:
        findings, classes, events = lint_source(path, source)
    except SyntaxError as e:
        return {"path": path, "error": f"cannot parse: {e.msg} (line {e.lineno})"}
    except RecursionError:
        return {"path": path, "error": "cannot parse: expressions nested too deeply"}
    except Exception as e:  # a bug of the linter: name the file, keep the run going
        return {"path": path, "error": f"internal error of devcopy lint ({type(e).__name__}: {e}); "
                                       "please report it with this file"}
    return {"path": path, "findings": findings, "classes": classes, "events": events,
            "suppress": suppressions(source), "lines": source.count("\n") + 1}


def run(paths, jobs=None):
    """Lints the files under `paths`. Returns (findings, errors, files, lines):
    findings as (file, rule tuple) pairs, errors as (file, message)."""
    files = discover(paths)
    jobs = jobs or os.cpu_count() or 1
    if jobs > 1 and len(files) > 8:
        with concurrent.futures.ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(lint_file, files, chunksize=max(1, len(files) // (jobs * 8))))
    else:
        results = [lint_file(f) for f in files]
    join, findings, errors, tables, lines = Join(), [], [], {}, 0
    for r in results:
        if "error" in r:
            errors.append((r["path"], r["error"]))
            continue
        lines += r["lines"]
        tables[os.path.abspath(r["path"])] = r["suppress"]
        findings.extend((r["path"], f) for f in r["findings"])
        join.add(r["classes"], r["events"])
    findings.extend(join.findings())
    kept = [(file, f) for file, f in findings
            if f[0] in RULES and not suppressed(f[0], f[1], tables.get(os.path.abspath(file), {}))]
    return kept, errors, len(files), lines
