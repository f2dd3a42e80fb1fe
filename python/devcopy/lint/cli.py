"""python3 -m devcopy lint PATH...: devcopy's static checks on Python source.

Exit codes as the C++ devcopy command: 0 no findings, 1 findings, 2 a usage or
input error (a one-line message on stderr).
"""
import argparse
import os
import sys

from . import _baseline, _engine, _files, _output
from ._catalog import RULES


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, as the C++ command
        self.exit(2, f"devcopy: error: {message} (see 'python3 -m devcopy lint --help')\n")


def _version():
    try:
        from importlib.metadata import version
        return version("devcopy")
    except Exception:  # not installed: running from a checkout
        return "0.1.0"


def parser():
    p = _Parser(prog="python3 -m devcopy lint",
                description="Find unintended tensor copies in PyTorch Python source, without "
                            "running it (torch need not be installed).",
                epilog=_rules_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", metavar="PATH", help="Python files or folders (searched for *.py)")
    p.add_argument("--format", choices=("text", "json", "sarif"), default="text",
                   help="output format (default: text, clang-style)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report here instead of stdout")
    p.add_argument("--root", metavar="DIR", default=None,
                   help="paths in JSON, SARIF and baselines are relative to this folder (default: cwd)")
    p.add_argument("--baseline", metavar="FILE", help="report only findings not in this baseline")
    p.add_argument("--write-baseline", metavar="FILE", help="record all findings as the baseline and exit 0")
    p.add_argument("--fix", action="store_true", help="apply the fixes that are safe (edits files in place)")
    p.add_argument("--select", metavar="RULES", help="comma-separated rule ids (globs) to run; default all")
    p.add_argument("--disable", metavar="RULES", help="comma-separated rule ids (globs) not to run")
    p.add_argument("-j", "--jobs", type=int, default=0, metavar="N",
                   help="parallel processes (default: one per core)")
    p.add_argument("--rule-docs", metavar="URL", help="base URL of the rule pages, for SARIF helpUri")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary line on stderr")
    return p


def _rules_help():
    """The rules, one line each, for the end of --help (as the C++ tools list their checks)."""
    ids = _static_ids()
    width = max(map(len, ids))
    lines = ["rules (flake8 code; select with --select, silence with # noqa: RULE):"]
    for r in ids:
        lines.append(f"  {r:{width}}  {_engine.FLAKE8_CODES.get(r, '')}  {RULES[r]['summary']}")
    return "\n".join(lines)


def _static_ids():
    return [r for r, meta in sorted(RULES.items()) if meta["kind"] == "static" and "python" in meta["languages"]]


def _chosen(select, disable):
    import fnmatch
    ids = _static_ids()
    want = [s.strip() for s in select.split(",") if s.strip()] if select else ["*"]
    drop = [s.strip() for s in disable.split(",") if s.strip()] if disable else []
    for pattern in want + drop:
        if not any(fnmatch.fnmatchcase(r, pattern) for r in ids):
            raise _engine.LintError(f"no rule matches '{pattern}' (rules: {', '.join(ids)})")
    return {r for r in ids if any(fnmatch.fnmatchcase(r, w) for w in want)
            and not any(fnmatch.fnmatchcase(r, d) for d in drop)}


def main(argv=None):
    args = parser().parse_args(argv)
    root = os.path.abspath(args.root or os.getcwd())
    try:
        if not os.path.isdir(root):
            raise _engine.LintError(f"--root is not a folder: {args.root}")
        if args.jobs < 0:
            raise _engine.LintError("--jobs must be 0 (one per core) or more")
        chosen = _chosen(args.select, args.disable)
        entries = _baseline.read(args.baseline) if args.baseline else None
        raw, errors, files, _ = _engine.run(args.paths, jobs=args.jobs or None)
    except (_engine.LintError, _baseline.BaselineError) as e:
        print(f"devcopy: error: {e}", file=sys.stderr)
        return 2
    sources = _output.Sources()
    findings = [_output.Finding(file, f) for file, f in raw if f[0] in chosen]
    _output.assign_fingerprints(findings, sources, root)
    if args.fix:
        fixed = _files.apply_fixes(findings, sources)
        if not args.quiet and fixed:
            print(f"devcopy: applied fixes for {fixed} finding(s)", file=sys.stderr)
    if args.write_baseline:
        try:
            _baseline.write(args.write_baseline, findings, root)
        except OSError as e:
            errors.append((args.write_baseline, f"baseline: cannot write: {e.strerror}"))
        else:
            if not args.quiet:
                print(f"devcopy: wrote {len(findings)} finding(s) to {args.write_baseline}", file=sys.stderr)
    known = []
    if entries is not None:
        findings, known, _absent = _baseline.classify(findings, entries)
    if args.format == "json":
        text = _output.write_json(findings, errors, files, len(known), root, sources)
    elif args.format == "sarif":
        text = _output.write_sarif(findings + known, errors, root, sources, args.rule_docs, _version())
    else:
        text = _output.write_text(findings, sources, os.getcwd())
    try:
        if args.output:
            _files.write_atomically(args.output, text)
        else:
            sys.stdout.write(text)
    except OSError as e:
        errors.append((args.output, f"output: cannot write: {e.strerror}"))
    if not args.quiet:
        tail = f", {len(known)} in the baseline" if entries is not None else ""
        print(f"devcopy: {len(findings)}{' new' if entries is not None else ''} finding(s) in "
              f"{files} file(s){tail}", file=sys.stderr)
    if errors:
        for file, message in errors:
            where = f"{_output.relative(file, os.getcwd())}: " if file else ""
            print(f"devcopy: error: {where}{message}", file=sys.stderr)
        return 2
    if args.write_baseline:
        return 0
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
