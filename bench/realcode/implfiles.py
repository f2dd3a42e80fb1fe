"""Template implementation files (.tpp, .ipp, .txx, .inl), analysed through
the header that includes them.

Such a file defines the members of a class template declared in a header
that #includes it (usually at its end). Parsed on its own it has no class to
attach them to, so nothing in it is analysed; and through the header as
main file it is an included file, which the analyzer, keeping to the main
file's code, does not look at either. So run.py writes a copy of the header
next to it with the implementation file's text in place of its #include,
analyses that copy as main file, and maps the findings on the spliced lines
back to the implementation file's own lines.
"""
import os
import re

IMPL_EXT = (".tpp", ".ipp", ".txx", ".inl")
INCLUDING_EXT = (".h", ".hh", ".hpp", ".hxx", ".cuh")
INCLUDE_LINE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
# Part of run.py's cache key: findings made another way are not reused.
SPLICE_VERSION = 1


def _includes(header, name, impl):
    """True when #include <name> in header names impl (a repository path):
    next to the header, or through an include directory (every header
    folder is one, so a matching tail is enough)."""
    name = os.path.normpath(name)
    near = os.path.normpath(os.path.join(os.path.dirname(header), name))
    return near == impl or impl == name or impl.endswith("/" + name)


def _include_lines(repo_dir, header, impl):
    try:
        with open(os.path.join(repo_dir, header), errors="replace") as f:
            lines = f.read().split("\n")
    except OSError:
        return [], []
    hits = [n for n, line in enumerate(lines)
            if (m := INCLUDE_LINE.match(line))
            and _includes(header, m.group(1), impl)]
    return lines, hits


def including_header(repo_dir, files, impl):
    """The repository header that #includes impl, or None: one of the same
    name (Trainer.hpp for Trainer.tpp) first, then one in the same folder,
    then any, by path."""
    if not impl.endswith(IMPL_EXT):
        return None
    stem = os.path.splitext(os.path.basename(impl))[0]
    found = []
    for f in files:
        if f.endswith(INCLUDING_EXT) and _include_lines(repo_dir, f, impl)[1]:
            same = os.path.splitext(os.path.basename(f))[0] == stem
            near = os.path.dirname(f) == os.path.dirname(impl)
            found.append((not same, not near, f))
    return min(found)[2] if found else None


def splice(repo_dir, header, impl):
    """Writes the header with impl's text in place of its first #include of
    impl, next to the header (its quoted includes resolve as before). An
    include of the header itself inside impl is blanked: the copy is another
    file, so the header's guard would not stop it. Returns the copy's path
    (relative to repo_dir), the copy's line number of impl's line 1 and
    impl's number of lines."""
    lines, hits = _include_lines(repo_dir, header, impl)
    if not hits:
        raise ValueError(f"{header} does not include {impl}")
    with open(os.path.join(repo_dir, impl), errors="replace") as f:
        body = f.read().split("\n")
    if body and body[-1] == "":
        body.pop()
    for n, line in enumerate(body):
        m = INCLUDE_LINE.match(line)
        if m and _includes(impl, m.group(1), header):
            body[n] = ""
    at = hits[0]
    out = lines[:at] + body + lines[at + 1:]
    base, ext = os.path.splitext(os.path.basename(header))
    copy = os.path.join(os.path.dirname(header),
                        f"{base}.devcopy-with-{os.path.basename(impl)}{ext}")
    with open(os.path.join(repo_dir, copy), "w") as f:
        f.write("\n".join(out))
    return copy, at + 1, len(body)


def map_back(found, first, count):
    """Findings (line, rule, message) of the copy, kept on impl's lines only
    and renumbered to them."""
    return sorted({(line - first + 1, rule, msg) for line, rule, msg in found
                   if first <= line < first + count})
