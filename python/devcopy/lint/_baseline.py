"""Baselines in the C++ command's format (analyzer/cli/Baseline.cpp): findings
known at some point are matched by fingerprint and reported no more."""
import json

from ._files import write_atomically
from ._output import relative

VERSION = 1


class BaselineError(Exception):
    pass


def read(path):
    """The baseline's entries; BaselineError with a one-line reason."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise BaselineError(f"cannot read baseline '{path}' ({e.strerror}); write one with "
                            f"--write-baseline {path}") from None
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise BaselineError(f"baseline '{path}' is not valid JSON ({e}); regenerate it with "
                            "--write-baseline") from None
    entries = doc.get("entries") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or doc.get("version") != VERSION or not isinstance(entries, list):
        raise BaselineError(f"baseline '{path}' is not a devcopy baseline (version 1 with "
                            "\"entries\"); regenerate it with --write-baseline")
    for e in entries:
        if not isinstance(e, dict) or not isinstance(e.get("fingerprint"), str):
            raise BaselineError(f"baseline '{path}' has an entry without \"fingerprint\"; "
                                "regenerate it with --write-baseline")
    return entries


def write(path, findings, root):
    entries = [{"rule": f.rule, "file": relative(f.file, root), "line": f.line,
                "message": f.message, "fingerprint": f.fingerprint} for f in findings]
    doc = {"version": VERSION, "tool": "devcopy", "entries": entries}
    write_atomically(path, json.dumps(doc, indent=2) + "\n")


def classify(findings, entries):
    """(new, known, absent entries): fingerprints matched one to one."""
    left = {}
    for e in entries:
        left.setdefault(e["fingerprint"], []).append(e)
    new, known = [], []
    for f in findings:
        match = left.get(f.fingerprint)
        if match:
            match.pop()
            f.baseline_state = "unchanged"
            known.append(f)
        else:
            f.baseline_state = "new"
            new.append(f)
    absent = [e for rest in left.values() for e in rest]
    return new, known, absent
