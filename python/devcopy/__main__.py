"""python -m devcopy: observe a whole script, or render a saved report.

    python -m devcopy run [--json FILE] [--html FILE] script.py [args...]
    python -m devcopy run [options] -m module [args...]
    python -m devcopy report [--html] saved.json [more.json run.sarif] [-o page.html]
    python -m devcopy lint [options] PATH...   (static checks, docs/python-lint.md)

`run` runs the script as `python script.py args` would (sys.argv, __main__,
sys.path[0]) under devcopy's copy observer, then prints the observer's report
to stderr; the exit status is the script's. `report` prints a report saved
with Report.to_json() (Python or C++) as text or as one HTML page, merged
with a static run's SARIF or JSON (`devcopy analyze`, `python -m devcopy lint`). Errors are
one line on stderr, with exit status 2.
"""
import argparse
import sys

from ._cli import CliError, read_input, write_output


def _parser():
    p = argparse.ArgumentParser(prog="python -m devcopy", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("report", help="print a saved JSON report as text or HTML")
    r.add_argument("json", nargs="+",
                   help="reports saved with Report.to_json() ('-' reads stdin); SARIF or JSON of a "
                        "static run too")
    r.add_argument("--html", action="store_true", help="write one self-contained HTML page")
    r.add_argument("-o", "--output", help="write here instead of stdout")
    run = sub.add_parser("run", help="run a Python script under the copy observer and print "
                                     "its report")
    run.add_argument("--json", metavar="FILE", help="also save the report as JSON")
    run.add_argument("--html", metavar="FILE", help="also save the report as an HTML page")
    run.add_argument("-m", dest="module", action="store_true",
                     help="the target is a module, run as `python -m` runs it")
    run.add_argument("target", help="the script (or, with -m, the module) to run")
    run.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return p


def _report(args):
    from ._report import Report
    from ._static import load
    report, static = None, []
    for path in args.json:
        text = read_input(path)
        try:
            kind, data = load(text, path)
            if kind == "static":
                static += data
                continue
            one = Report.from_json(text)
        except ValueError as e:
            raise CliError(f"{path}: {str(e).removeprefix('devcopy: ')}") from None
        except Exception as e:  # a report no check above foresaw: still one line
            raise CliError(f"{path}: cannot read this report ({type(e).__name__}: {e})") from None
        report = one if report is None else report.merged(one)
    report = report if report is not None else Report()
    name = ", ".join(args.json)
    try:
        if args.html:
            out = report.to_html(title=f"devcopy report: {name}", static=static)
        else:
            out = str(report) + "".join(
                f"{s['file']}:{s['line']}: {s['level']}: {s['message']} [{s['rule']}]\n" for s in static)
    except Exception as e:  # a report no check above foresaw: still one line
        raise CliError(f"{name}: cannot render this report ({type(e).__name__}: {e})") from None
    write_output(args.output, out)
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["lint"]:  # static checks: needs neither torch nor the extension
        from .lint.cli import main as lint
        return lint(argv[1:])
    args = _parser().parse_args(argv)
    try:
        if args.command == "run":
            from ._run import run
            return run(args)
        return _report(args)
    except CliError as e:
        print(f"devcopy: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
