"""Writing user files: a temporary file in the same folder, then a rename, so
that a crash or a full disk never leaves a half-written file; the mode kept."""
import io
import os
import tempfile
import tokenize

from ._kinds import source_lines


def write_atomically(path, text, encoding="utf-8"):
    folder = os.path.dirname(os.path.abspath(path))
    try:
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        mode = None
    fd, tmp = tempfile.mkstemp(prefix=".devcopy-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="") as f:
            f.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def apply_fixes(findings, sources):
    """Applies each finding's edits, file by file; edits that overlap another
    are skipped. Returns how many findings were fixed."""
    by_file = {}
    for f in findings:
        if f.fixes:
            by_file.setdefault(f.file, []).append(f)
    fixed = 0
    for path, group in by_file.items():
        with open(path, "rb") as fh:
            data = fh.read()
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)  # newlines kept as they are
        lines = source_lines(text, keepends=True)
        taken = {}  # line -> [(start, end)]
        applied = []
        for f in group:
            spans = [(ln, s, e) for ln, s, e, _ in f.fixes]
            if any(_overlaps(taken.get(ln, []), s, e) for ln, s, e in spans):
                continue
            for ln, s, e in spans:
                taken.setdefault(ln, []).append((s, e))
            applied.extend(f.fixes)
            fixed += 1
        for ln, s, e, new in sorted(applied, key=lambda x: (x[0], x[1]), reverse=True):
            line = lines[ln - 1]
            lines[ln - 1] = line[:s] + new + line[e:]
        sources.lines(path)  # the report shows the lines as they were when found
        write_atomically(path, "".join(lines), encoding)
    return fixed


def _overlaps(spans, s, e):
    return any(s < b and a < e or (s == e and a <= s <= b) for a, b in spans)
