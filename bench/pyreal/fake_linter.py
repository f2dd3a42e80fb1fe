#!/usr/bin/env python3
"""A stand-in for ``python3 -m devcopy lint`` used by test_run.py.

It answers ``--format json --root ROOT PATHS...`` with the findings listed in
the JSON file named by FAKE_LINT_PLAN ({"path": [[line, rule, note lines...],
...]}), after
checking that every path it is given exists under ROOT and that the whole
package was checked out (FAKE_LINT_EXPECT names a file that must exist too).
Paths listed under "errors" in the plan are reported as unreadable, with exit
code 2, as the real linter does.
FAKE_LINT_RC makes it exit with that code; FAKE_LINT_GARBAGE makes it print
something that is not JSON.
"""
import json
import os
import sys


def main(argv):
    if argv[:2] != ["--format", "json"] or argv[2] != "--root":
        sys.exit(f"fake linter: unexpected arguments {argv}")
    root, paths = argv[3], argv[4:]
    for p in paths + [os.environ.get("FAKE_LINT_EXPECT", "")]:
        if p and not os.path.isfile(os.path.join(root, p)):
            sys.exit(f"fake linter: {p} is not under {root}")
    if os.environ.get("FAKE_LINT_RC"):
        print("fake linter: failing on purpose", file=sys.stderr)
        sys.exit(int(os.environ["FAKE_LINT_RC"]))
    if os.environ.get("FAKE_LINT_GARBAGE"):
        print("warning: this is not json")
        return 1
    with open(os.environ["FAKE_LINT_PLAN"]) as f:
        plan = json.load(f)
    findings = [{"file": path, "line": hit[0], "column": 1, "rule": hit[1], "message": "fake",
                 "notes": [{"file": path, "line": n, "column": 1, "message": "note"} for n in hit[2:]]}
                for path, hits in plan.items() if path != "errors" for hit in hits]
    errors = [{"file": path, "message": "cannot parse"} for path in plan.get("errors", [])]
    print(json.dumps({"version": 1, "tool": "devcopy", "findings": findings,
                      "errors": errors, "summary": {"findings": len(findings)}}))
    return 2 if errors else 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
