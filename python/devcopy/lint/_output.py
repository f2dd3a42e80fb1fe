"""Findings as the C++ devcopy command writes them: clang-style text with the
source line and a caret, JSON (Output.cpp's shape) and SARIF 2.1.0
(Sarif.cpp's rule metadata, helpUri and partialFingerprints)."""
import json
import os

from ._catalog import RULES
from ._kinds import source_lines

FINGERPRINT_KEY = "devcopyLineHash/v1"
TAB_STOP = 8


class Finding:
    """One finding, positions 1-based (columns in UTF-8 bytes, as clang's)."""

    __slots__ = ("file", "line", "column", "end_line", "end_column", "rule", "level", "message",
                 "notes", "fixes", "fingerprint", "baseline_state")

    def __init__(self, file, raw):
        rule, line, col, end_line, end_col, message, notes, fixes = raw
        self.file, self.line, self.column = file, line, col + 1
        self.end_line, self.end_column = end_line, end_col + 1
        self.rule, self.message = rule, message
        self.level = RULES[rule]["level"]
        self.notes = [(f, ln, c + 1, m) for f, ln, c, m in notes]
        self.fixes = fixes  # (line, start, end, text), characters within the line
        self.fingerprint, self.baseline_state = "", ""


def relative(path, root):
    path = os.path.abspath(path)
    root = os.path.abspath(root)
    if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
        return os.path.relpath(path, root)
    return path


def stable_hash(text):
    """FNV-1a 64, as analyzer/cli/Fingerprint.cpp: baselines are shared."""
    h = 14695981039346656037
    for c in text.encode("utf-8"):
        h ^= c
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def assign_fingerprints(findings, sources, root):
    findings.sort(key=lambda f: (f.file, f.line, f.column, f.rule, f.message))
    seen = {}
    for f in findings:
        line = "".join(sources.line(f.file, f.line).split())
        h = stable_hash(f.rule + "\0" + relative(f.file, root) + "\0" + line)
        f.fingerprint = f"{h}:{seen.get(h, 0)}"
        seen[h] = seen.get(h, 0) + 1


class Sources:
    """Source lines by file, read once."""

    def __init__(self):
        self.cache = {}

    def lines(self, path):
        if path not in self.cache:
            from ._engine import read_source
            try:
                self.cache[path] = source_lines(read_source(path))
            except (OSError, UnicodeDecodeError, SyntaxError):
                self.cache[path] = []
        return self.cache[path]

    def line(self, path, n):
        lines = self.lines(path)
        return lines[n - 1] if 0 < n <= len(lines) else ""


def _display_col(line_bytes, byte_col):
    col = 0
    for b in line_bytes[:byte_col]:
        if b == 9:
            col += TAB_STOP - col % TAB_STOP
        elif b & 0xC0 != 0x80:
            col += 1
    return col


def _snippet(out, text, col, end_line, line, end_col):
    if len(text) > 4096:
        return
    raw = text.encode("utf-8")
    shown = text.expandtabs(TAB_STOP)
    start = _display_col(raw, col - 1)
    stop = _display_col(raw, end_col - 1) if end_line == line else len(shown)
    caret = [" "] * max(len(shown), start + 1)
    for i in range(start, min(stop, len(caret))):
        caret[i] = "~"
    caret[start] = "^"
    out.append(shown)
    out.append("".join(caret).rstrip())


def write_text(findings, sources, cwd):
    out = []
    for f in findings:
        out.append(f"{relative(f.file, cwd)}:{f.line}:{f.column}: "
                   f"{'error' if f.level == 'error' else 'warning'}: {f.message} [{f.rule}]")
        _snippet(out, sources.line(f.file, f.line), f.column, f.end_line, f.line, f.end_column)
        for file, line, col, message in f.notes:
            out.append(f"{relative(file, cwd)}:{line}:{col}: note: {message}")
            _snippet(out, sources.line(file, line), col, line, line, col + 1)
    return "\n".join(out) + ("\n" if out else "")


def fix_edits(f, sources):
    """A finding's fixes as (line, byte column, byte offset, byte length, text)."""
    lines = sources.lines(f.file)
    out = []
    for line, start, end, text in f.fixes:
        before = sum(len(s.encode("utf-8")) + 1 for s in lines[:line - 1])
        s = lines[line - 1]
        b0, b1 = len(s[:start].encode("utf-8")), len(s[:end].encode("utf-8"))
        out.append((line, b0 + 1, before + b0, b1 - b0, text))
    return out


def write_json(findings, errors, files, baselined, root, sources):
    doc = {"version": 1, "tool": "devcopy", "findings": [], "errors": [], "summary": {}}
    for f in findings:
        doc["findings"].append({
            "file": relative(f.file, root), "line": f.line, "column": f.column,
            "end": {"line": f.end_line, "column": f.end_column},
            "rule": f.rule, "level": f.level, "message": f.message, "fingerprint": f.fingerprint,
            "notes": [{"file": relative(nf, root), "line": nl, "column": nc, "message": nm}
                      for nf, nl, nc, nm in f.notes],
            "fixes": [{"file": relative(f.file, root), "line": ln, "column": col, "offset": off,
                       "length": length, "replacement": text}
                      for ln, col, off, length, text in fix_edits(f, sources)]})
    doc["errors"] = [{"file": relative(file, root), "message": m} for file, m in errors]
    doc["summary"] = {"translation_units": files, "findings": len(findings),
                      "baselined": baselined, "errors": len(errors)}
    return json.dumps(doc, indent=2) + "\n"


def _rule_name(rule_id):
    return "".join(p.capitalize() for p in rule_id.removeprefix("devcopy-").split("-"))


def _markdown_section(page, heading):
    marker = "## " + heading + "\n"
    at = 0 if page.startswith(marker) else page.find("\n" + marker)
    if at < 0:
        return ""
    begin = page.find("\n", at + (1 if page[at] == "\n" else 0)) + 1
    end = page.find("\n## ", begin)
    return page[begin:end if end >= 0 else None].strip("\n ")


def _uri(path):
    from urllib.parse import quote
    return quote(path, safe="-._~/")


def _artifact(file, root):
    rel = relative(file, root)
    if rel != os.path.abspath(file):
        return {"uri": _uri(rel), "uriBaseId": "%SRCROOT%"}
    return {"uri": "file://" + _uri(os.path.abspath(file))}


def _utf16(text, byte_col):
    prefix = text.encode("utf-8")[:byte_col - 1].decode("utf-8", "replace")
    return len(prefix.encode("utf-16-le")) // 2 + 1


def _region(sources, file, line, col, end_line=None, end_col=None):
    r = {"startLine": line}
    if col == 0:
        return r
    text = sources.line(file, line)
    r["startColumn"] = _utf16(text, col)
    if end_line and (end_line > line or (end_line == line and end_col >= col)):
        r["endLine"] = end_line
        r["endColumn"] = _utf16(sources.line(file, end_line), end_col)
    return r


def write_sarif(findings, errors, root, sources, rule_docs, version):
    order = [rid for rid, r in sorted(RULES.items()) if r["kind"] == "static" and "python" in r["languages"]]
    docs = (rule_docs or "file://" + _uri(os.path.join(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), "rules"))).rstrip("/")
    rules = []
    for rid in order:
        r = RULES[rid]
        full = _markdown_section(r["help"], "What it flags") or r["summary"]
        rules.append({"id": rid, "name": _rule_name(rid),
                      "shortDescription": {"text": r["summary"]}, "fullDescription": {"text": full},
                      "help": {"text": r["help"], "markdown": r["help"]},
                      "helpUri": f"{docs}/{_uri(rid)}.md",
                      "defaultConfiguration": {"level": r["level"]},
                      "properties": {"tags": ["performance", "pytorch"]}})
    results = []
    for f in findings:
        res = {"ruleId": f.rule, "level": f.level, "message": {"text": f.message},
               "locations": [{"physicalLocation": {
                   "artifactLocation": _artifact(f.file, root),
                   "region": _region(sources, f.file, f.line, f.column, f.end_line, f.end_column)}}],
               "partialFingerprints": {FINGERPRINT_KEY: f.fingerprint},
               "ruleIndex": order.index(f.rule)}
        if f.baseline_state:
            res["baselineState"] = f.baseline_state
        if f.notes:
            res["relatedLocations"] = [
                {"id": i, "message": {"text": m}, "physicalLocation": {
                    "artifactLocation": _artifact(nf, root), "region": _region(sources, nf, nl, nc)}}
                for i, (nf, nl, nc, m) in enumerate(f.notes, 1)]
        edits = fix_edits(f, sources) if f.column else []
        if edits:
            replacements = [{"deletedRegion": _region(sources, f.file, ln, col, ln, col + length),
                             "insertedContent": {"text": text}} for ln, col, _, length, text in edits]
            res["fixes"] = [{"description": {"text": "apply devcopy's suggested change"},
                             "artifactChanges": [{"artifactLocation": _artifact(f.file, root),
                                                  "replacements": replacements}]}]
        results.append(res)
    notifications = []
    for file, m in errors:
        n = {"level": "error", "message": {"text": m}}
        if file:
            n["locations"] = [{"physicalLocation": {"artifactLocation": _artifact(file, root)}}]
        notifications.append(n)
    root_uri = "file://" + _uri(os.path.abspath(root).rstrip("/") + "/")
    doc = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
           "runs": [{"tool": {"driver": {"name": "devcopy", "version": version, "semanticVersion": version,
                                         "informationUri": docs.rsplit("/", 1)[0] + "/README.md",
                                         "rules": rules}},
                     "originalUriBaseIds": {"%SRCROOT%": {"uri": root_uri}},
                     "columnKind": "utf16CodeUnits",
                     "invocations": [{"executionSuccessful": not errors,
                                      "toolExecutionNotifications": notifications}],
                     "results": results}]}
    return json.dumps(doc, indent=2) + "\n"
