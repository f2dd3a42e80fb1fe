#!/usr/bin/env python3
"""Every registered devcopy-* check has a rules/<id>.md page of kind static,
and every static page names a registered check, for each front end given.

  check_catalog.py RULES_DIR -- FRONT_END_CMD... [-- FRONT_END_CMD...]
"""
import os
import re
import subprocess
import sys


def static_pages(rules_dir):
    ids = set()
    for f in os.listdir(rules_dir):
        if not f.endswith(".md") or f == "README.md":
            continue
        text = open(os.path.join(rules_dir, f), encoding="utf-8").read()
        m = re.match(r"---\n(.*?)\n---\n", text, re.S)
        meta = dict(
            (k.strip(), v.split("#", 1)[0].strip())
            for k, _, v in (l.partition(":") for l in m.group(1).splitlines() if ":" in l)
        ) if m else {}
        cpp = "cpp" in meta.get("languages", "cpp python").split()
        if meta.get("kind") == "static" and cpp:  # a Python-only rule has no C++ check
            ids.add(meta.get("id"))
            if f != meta.get("id", "") + ".md":
                print(f"FAIL: {f} declares id {meta.get('id')!r}; the file must be named after it")
                sys.exit(1)
    return ids


def registered(cmd):
    p = subprocess.run(cmd + ["--list-checks", "--checks=-*,devcopy-*"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if p.returncode:
        print(p.stdout)
        sys.exit(f"FAIL: {' '.join(cmd)} --list-checks exited {p.returncode}")
    return {l.strip() for l in p.stdout.splitlines() if l.strip().startswith("devcopy-")}


def main():
    rules_dir, rest = sys.argv[1], sys.argv[2:]
    cmds, cur = [], None
    for a in rest:
        if a == "--":
            cur = []
            cmds.append(cur)
        else:
            cur.append(a)
    pages = static_pages(rules_dir)
    ok = True
    for cmd in cmds:
        checks = registered(cmd)
        name = os.path.basename(cmd[0])
        for c in sorted(checks - pages):
            print(f"FAIL: {name}: check {c} has no rules/{c}.md page (kind: static)")
            ok = False
        for c in sorted(pages - checks):
            print(f"FAIL: {name}: rules/{c}.md describes a check that is not registered")
            ok = False
        if not checks:
            print(f"FAIL: {name}: no devcopy-* check registered")
            ok = False
        print(f"{name}: {len(checks)} devcopy checks, {len(pages)} static rule pages")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
