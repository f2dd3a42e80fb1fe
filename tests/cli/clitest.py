"""What the command-line tests share: failures that name what went wrong,
running a tool with a crash check, and a scratch project directory."""
import os
import subprocess

CRASH = ("Stack dump", "PLEASE submit", "Segmentation", "terminate called")


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def run_tool(cmd, cwd):
    """Runs `cmd` in `cwd` (output captured); a crash is a failure."""
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    for bad in CRASH:
        check(bad not in p.stderr + p.stdout, f"{cmd[0]} crashed on {cmd[1:]}:\n{p.stderr}")
    return p


class ProjectDir:
    """A scratch project; subclasses fill `self.dir`."""

    dir = ""

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, text):
        os.makedirs(os.path.dirname(self.path(name)), exist_ok=True)
        with open(self.path(name), "w") as f:
            f.write(text)

    def read(self, name):
        with open(self.path(name)) as f:
            return f.read()


def run_cases(cases, temp_dirs, options=()):
    """The command line of a test script: CASE --devcopy BIN --mock DIR (and
    `options`); runs the case, removes `temp_dirs` when it passes."""
    import argparse
    import shutil
    import sys
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(cases))
    ap.add_argument("--devcopy", required=True)
    ap.add_argument("--mock", required=True)
    for o in options:
        ap.add_argument(o)
    args = ap.parse_args()
    try:
        cases[args.case](args)
    except Failure as e:
        sys.exit(f"FAIL {args.case}: {e}")
    for d in temp_dirs:
        shutil.rmtree(d, ignore_errors=True)
    print(f"ok {args.case}")
