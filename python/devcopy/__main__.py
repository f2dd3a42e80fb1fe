"""python -m devcopy report --html saved.json [more.json run.sarif] [-o page.html]:
saved JSON reports (Report.to_json(), or the C++ Report::to_json()) as text or
one HTML page, merged with a static run's SARIF or JSON."""
import argparse
import sys

from ._report import Report
from ._static import load


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m devcopy", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("report", help="print a saved JSON report as text or HTML")
    r.add_argument("json", nargs="+",
                   help="reports saved with Report.to_json(); SARIF or JSON of a static run too")
    r.add_argument("--html", action="store_true", help="write one self-contained HTML page")
    r.add_argument("-o", "--output", help="write here instead of stdout")
    args = p.parse_args(argv)
    report, static = None, []
    for path in args.json:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            kind, data = load(text, path)
            if kind == "static":
                static += data
                continue
            one = Report.from_json(text)
        except OSError as e:
            print(f"devcopy: error: cannot read {path}: {e.strerror}", file=sys.stderr)
            return 2
        except ValueError as e:
            print(f"devcopy: error: {path}: {str(e).removeprefix('devcopy: ')}", file=sys.stderr)
            return 2
        report = one if report is None else report.merged(one)
    report = report if report is not None else Report()
    name = ", ".join(args.json)
    if args.html:
        text = report.to_html(title=f"devcopy report: {name}", static=static)
    else:
        text = str(report) + "".join(f"{s['file']}:{s['line']}: {s['level']}: {s['message']} [{s['rule']}]\n"
                                     for s in static)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
