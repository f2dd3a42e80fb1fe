#!/usr/bin/env python3
"""Every relative link of devcopy's pages resolves: the file (or folder) it
names exists, and a #fragment names a heading of the page it points at.

Usage: check_links.py ROOT [PAGE...]
  ROOT   a source tree, or an installed share/doc/devcopy
  PAGE   pages to check, relative to ROOT (default: every *.md under ROOT)

In a source tree the pages may link only what is installed beside them
(README.md, CHANGELOG.md, LICENSE, docs/, rules/, bench/README.md), so the
installed copies link nothing that is missing.
"""
import os
import re
import sys

INSTALLED = ("README.md", "CHANGELOG.md", "LICENSE", "docs/", "rules/", "bench/README.md")
LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose(path):
    """The page's lines outside fenced code blocks."""
    inside = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                inside = not inside
            elif not inside:
                yield number, line


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path):
    return {slug(line.lstrip("#")) for _, line in prose(path) if line.startswith("#")}


def problems(root, page, source_tree):
    path = os.path.join(root, page)
    for number, line in prose(path):
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, file:
                continue
            name, _, fragment = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), name)) if name else path
            where = f"{page}:{number}: {target}"
            rel = os.path.relpath(dest, root)
            if not os.path.exists(dest):
                yield f"{where}: {rel} does not exist"
            elif source_tree and not (rel + ("/" if os.path.isdir(dest) else "")).startswith(INSTALLED):
                yield f"{where}: {rel} is not installed with the pages"
            elif fragment and dest.endswith(".md") and fragment not in anchors(dest):
                yield f"{where}: no heading #{fragment} in {rel}"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root = os.path.abspath(sys.argv[1])
    pages = sys.argv[2:] or sorted(os.path.relpath(os.path.join(d, f), root)
                                   for d, _, files in os.walk(root) for f in files if f.endswith(".md"))
    source_tree = os.path.exists(os.path.join(root, "CMakeLists.txt"))
    found = [p for page in pages for p in problems(root, page, source_tree)]
    for p in found:
        print(p)
    print(f"{len(pages)} page(s), {len(found)} dead link(s)")
    sys.exit(1 if found or not pages else 0)


if __name__ == "__main__":
    main()
