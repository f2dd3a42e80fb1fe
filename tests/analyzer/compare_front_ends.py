#!/usr/bin/env python3
"""Asserts the plugin and devcopy-tidy gave identical findings on every fixture.

The fixture tests save each front end's diagnostics as OUT_DIR/<fixture>.<front-end>.txt;
this compares the pairs for the fixture names given.

  compare_front_ends.py OUT_DIR NAME...
"""
import difflib
import os
import sys


def main():
    out_dir, names = sys.argv[1], sys.argv[2:]
    if not names:
        sys.exit("FAIL: no fixtures registered")
    bad = 0
    for name in names:
        paths = [os.path.join(out_dir, f"{name}.{fe}.txt") for fe in ("plugin", "tidy")]
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            print(f"FAIL: {name}: no output from {', '.join(missing)} (did its fixture test run?)")
            bad += 1
            continue
        a, b = (open(p, encoding="utf-8").read().splitlines() for p in paths)
        if a != b:
            bad += 1
            print(f"FAIL: {name}: the front ends disagree")
            print("\n".join(difflib.unified_diff(a, b, "plugin", "devcopy-tidy", lineterm="")))
        else:
            print(f"ok: {name}: {sum(' warning: ' in l for l in a)} identical warning(s)")
    if bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
