"""python -m devcopy report --html saved.json [-o page.html]: a saved JSON
report (Report.to_json(), or the C++ Report::to_json()) as text or HTML."""
import argparse
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["lint"]:  # static checks: needs neither torch nor the extension
        from .lint.cli import main as lint
        return lint(argv[1:])
    from ._report import Report
    p = argparse.ArgumentParser(prog="python -m devcopy", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("report", help="print a saved JSON report as text or HTML")
    r.add_argument("json", help="a report saved with Report.to_json()")
    r.add_argument("--html", action="store_true", help="write one self-contained HTML page")
    r.add_argument("-o", "--output", help="write here instead of stdout")
    args = p.parse_args(argv)
    try:
        with open(args.json, encoding="utf-8") as f:
            report = Report.from_json(f.read())
    except OSError as e:
        print(f"devcopy: error: cannot read {args.json}: {e.strerror}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"devcopy: error: {args.json}: {str(e).removeprefix('devcopy: ')}", file=sys.stderr)
        return 2
    text = report.to_html(title=f"devcopy report: {args.json}") if args.html else str(report)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
