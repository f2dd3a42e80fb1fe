#!/usr/bin/env python3
"""Runs one clang-tidy front end on an annotated fixture and checks the result.

In the spirit of LLVM's check_clang_tidy.py (which Debian does not package):

  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: result of 'to()' is discarded{{.*}} [devcopy-discarded-copy]
  // CHECK-FIXES: x = x.to(torch::kCPU);

  // CHECK-NOTES: :[[@LINE-1]]:3: warning: ...
  // CHECK-NOTES: :[[@LINE-5]]:3: note: loop starts here

Every diagnostic must be expected (FileCheck --implicit-check-not), every
expectation met, and the file after --fix must match the CHECK-FIXES lines.
As in check_clang_tidy.py, CHECK-MESSAGES checks warnings and errors (notes
may be listed but are not required), CHECK-NOTES checks warnings, errors and
notes alike (every note must be expected), and a fixture uses one or the
other. A fixture with neither must produce no diagnostic at all, and one with
no CHECK-FIXES must be left unchanged by --fix.

  check_fixture.py --tool clang-tidy-19 [--load plugin.so] --checks devcopy-x
                   [--tool-arg OPT]... --filecheck FileCheck [--save OUT]
                   FIXTURE -- COMPILER ARGS

With --expect-error REGEX the run must instead fail the way clang fails on bad
input: a non-zero exit, REGEX in the output, and no crash (no signal, no stack
dump).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

CHECK_LINE = re.compile(r"//\s*CHECK-(MESSAGES|FIXES|NOTES)(-NOT)?:[^\r\n]*")
DIAG = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): (?P<kind>warning|error|note): ")
CRASH = ("Stack dump", "PLEASE submit a bug report", "LLVM ERROR", "Segmentation fault")


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def run_tool(args, fixed_path, extra, fix):
    cmd = [args.tool]
    if args.load:
        cmd.append(f"--load={args.load}")
    cmd += [f"--checks=-*,{args.checks}", "--header-filter=", "--quiet"] + args.tool_arg
    if fix:
        cmd.append("--fix")
    cmd += [fixed_path, "--"] + extra
    print("$ " + " ".join(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def diagnostics(stdout, path, name):
    """The diagnostic lines (with path made relative to the fixture's name)."""
    out = []
    for line in stdout.splitlines():
        m = DIAG.match(line)
        if not m:
            continue
        if "FIX-IT applied" in line or "FIX-IT" in line and m.group("kind") == "note":
            continue  # --fix's own notes
        out.append(line.replace(os.path.dirname(path) + "/", "").replace(path, name))
    return out


def filecheck(args, check_file, input_text, prefix, extra=()):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(input_text)
        input_path = f.name
    try:
        cmd = [args.filecheck, check_file, f"--check-prefix={prefix}", f"--input-file={input_path}",
               "--dump-input=fail", *extra]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode:
            print(p.stdout)
            fail(f"FileCheck {prefix} failed for {check_file}")
    finally:
        os.unlink(input_path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", required=True, help="clang-tidy-19 or devcopy-tidy")
    ap.add_argument("--load", help="plugin for --load=")
    ap.add_argument("--checks", required=True, help="e.g. devcopy-discarded-copy or devcopy-*")
    ap.add_argument("--filecheck", default="/usr/lib/llvm-19/bin/FileCheck")
    ap.add_argument("--save", help="write the normalized diagnostics here (front-end comparison)")
    ap.add_argument("--tool-arg", action="append", default=[],
                    help="extra front-end option (e.g. --header-filter=.*), repeatable")
    ap.add_argument("--expect-error", help="the run must fail cleanly with this regex in its output")
    ap.add_argument("--expect-finding", help="with --expect-error: a finding the run must still "
                    "report (a regex), past the error")
    ap.add_argument("fixture")
    ap.add_argument("compiler_args", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    extra = args.compiler_args[1:] if args.compiler_args[:1] == ["--"] else args.compiler_args
    # The fixture runs from a temporary copy: its own `#include "..."` still
    # resolve next to the original (project headers, e.g. fixtures/include/).
    extra = extra + ["-iquote", os.path.dirname(os.path.abspath(args.fixture))]

    name = os.path.basename(args.fixture)
    source = open(args.fixture, encoding="utf-8").read()
    # The CHECK comments go (line numbers stay) so --fix output holds only code.
    cleaned = CHECK_LINE.sub("//", source)
    want_messages = "CHECK-MESSAGES:" in source
    want_notes = "CHECK-NOTES:" in source
    if want_messages and want_notes:
        fail("use either CHECK-MESSAGES or CHECK-NOTES, not both")
    want_fixes = "CHECK-FIXES:" in source

    tmp = tempfile.mkdtemp(prefix="devcopy-fixture-")
    try:
        path = os.path.join(tmp, name)
        # The fixture runs from a temporary copy, with its "include/" folder
        # beside it: quoted includes resolve, and --fix never edits the tree.
        include = os.path.join(os.path.dirname(os.path.abspath(args.fixture)), "include")
        if os.path.isdir(include):
            shutil.copytree(include, os.path.join(tmp, "include"))
        with open(path, "w", encoding="utf-8") as f:
            f.write(cleaned)
        rc, stdout, stderr = run_tool(args, path, extra, fix=args.expect_error is None)
        everything = stdout + stderr
        if rc < 0 or any(c in everything for c in CRASH):
            print(everything)
            fail(f"the front end crashed (exit {rc})")

        if args.expect_error:
            print(everything)
            if rc == 0:
                fail("bad input was accepted (exit 0)")
            if not re.search(args.expect_error, everything):
                fail(f"expected an error matching {args.expect_error!r}")
            if args.expect_finding and not re.search(args.expect_finding, everything):
                fail(f"expected the finding {args.expect_finding!r} past the error")
            print(f"PASS: {name} fails cleanly (exit {rc})")
            return

        diags = diagnostics(stdout, path, name)
        print("\n".join(diags) if diags else "(no diagnostics)")
        if args.save:
            os.makedirs(os.path.dirname(os.path.abspath(args.save)), exist_ok=True)
            with open(args.save, "w", encoding="utf-8") as f:
                f.write("\n".join(diags) + "\n")
        if any(": error: " in d for d in diags) or rc not in (0, 1):
            print(stderr)
            fail(f"the fixture does not compile (exit {rc})")

        if want_notes:
            filecheck(args, args.fixture, "\n".join(diags) + "\n", "CHECK-NOTES",
                      ["--implicit-check-not={{note|warning|error}}:"])
        elif want_messages:
            filecheck(args, args.fixture, "\n".join(diags) + "\n", "CHECK-MESSAGES",
                      ["--implicit-check-not={{warning|error}}:"])
        elif any(" warning: " in d or " note: " in d for d in diags):
            fail("expected no diagnostics")

        fixed = open(path, encoding="utf-8").read()
        if want_fixes:
            filecheck(args, args.fixture, fixed, "CHECK-FIXES", ["--strict-whitespace"])
        elif fixed != cleaned:
            fail("--fix changed a fixture that has no CHECK-FIXES")
        print(f"PASS: {name}: {len(diags)} diagnostic line(s)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
