#!/usr/bin/env python3
"""devcopy analyze against clang-tidy-19 (with the devcopy plugin) on the same
input: clang-tidy's flags mean the same, the text report is byte for byte
what clang-tidy prints (source line, caret, ranges, fix-it text), and the
SARIF report carries ranges, notes, help links and baseline states.

Usage: cli_clang_tidy.py CASE --devcopy BIN --tidy BIN --clang-tidy BIN
                         --plugin SO [--clangd BIN] --mock DIR --validator BIN
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.parse

import yaml

import cli_e2e
import clitest
from cli_e2e import Project, check, expect_error, validate_sarif

HERE = os.path.dirname(os.path.abspath(__file__))
DEVCOPY_CHECKS = sorted(os.path.basename(p)[:-3]
                        for p in glob.glob(os.path.join(HERE, "..", "..", "rules", "devcopy-*.md"))
                        if not re.search(r"^languages:\s*python\b", open(p, encoding="utf-8").read(), re.M))
TABS = "#include <torch/torch.h>\nvoid tabbed(torch::Tensor t) {\n\tif (true)\n\t\tt.to(torch::kCPU, true);\n}\n"
ENDL = "#include <iostream>\nvoid hello() { std::cout << \"hi\" << std::endl; }\n"
HEADER = ("#include <torch/torch.h>\n"
          "inline void off(torch::Tensor p) {\n  p.to(torch::kCPU, true);\n}\n")
EXTRA = "#include <torch/torch.h>\n#ifdef EXTRA\nvoid extra(torch::Tensor t) { t.cuda(); }\n#endif\n"


class Tidy:
    """clang-tidy-19 with the devcopy plugin, run as devcopy runs."""

    def __init__(self, args, project):
        self.args, self.p = args, project

    def run(self, *argv, plugin=True):
        load = ["--load", self.args.plugin] if plugin else []
        proc = subprocess.run([self.args.clang_tidy, *load, "-p", ".", *argv], cwd=self.p.dir,
                              capture_output=True, text=True, timeout=300)
        return proc.returncode, proc.stdout, proc.stderr


def project(args, sources):
    p = Project(args, sources=sources)
    p.write("src/tabs.cpp", TABS)
    p.write("src/endl.cpp", ENDL)
    p.write("src/extra.cpp", EXTRA)
    p.write("inc/off.h", HEADER)
    p.write("src/header_user.cpp", '#include "../inc/off.h"\n')
    p.set_sources(sources)
    return p, Tidy(args, p)


def file_paths(node):
    """Every FilePath of an --export-fixes document."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "FilePath" and value:
                yield value
            else:
                yield from file_paths(value)
    elif isinstance(node, list):
        for item in node:
            yield from file_paths(item)


def absolute_paths(node, base):
    """Rewrites each FilePath of `node` as an absolute path below `base`."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "FilePath" and value:
                node[key] = os.path.normpath(os.path.join(base, value))
            else:
                absolute_paths(value, base)
    elif isinstance(node, list):
        for item in node:
            absolute_paths(item, base)


def same(what, ours, theirs):
    check(ours == theirs, f"{what}: devcopy differs from clang-tidy:\n--- devcopy\n{ours}"
                          f"--- clang-tidy\n{theirs}")


def case_text(args):
    """The text report is clang-tidy's, snippet and all, for devcopy's checks
    (tabs expanded, ranges, fix-its, notes) and for a stock clang-tidy check."""
    p, tidy = project(args, ["train.cpp", "tabs.cpp", "endl.cpp"])
    for unit in ("src/train.cpp", "src/tabs.cpp"):
        rc, ours, err = p.analyze(unit)
        check(rc == 1, f"{unit}: exit {rc}\n{err}")
        same(unit, ours, tidy.run("--checks=-*,devcopy-*", unit)[1])
    # performance-avoid-endl: clang-tidy's own module, linked into devcopy.
    rc, ours, err = p.analyze("--checks=-*,performance-avoid-endl", "src/endl.cpp")
    check(rc == 1 and "[performance-avoid-endl]" in ours, f"stock check not run: {rc}\n{ours}{err}")
    same("performance-avoid-endl", ours,
         tidy.run("--checks=-*,performance-avoid-endl", "src/endl.cpp", plugin=False)[1])
    # --warnings-as-errors: the same "error: ... [check,-warnings-as-errors]".
    flags = ["--warnings-as-errors=devcopy-discarded-copy"]
    rc, ours, err = p.analyze(*flags, "src/train.cpp")
    check("[devcopy-discarded-copy,-warnings-as-errors]" in ours, ours)
    check("1 warning treated as error" in err, err)
    same("--warnings-as-errors", ours, tidy.run("--checks=-*,devcopy-*", *flags, "src/train.cpp")[1])


def case_flags(args):
    """--list-checks, --explain-config, --config, --header-filter, --extra-arg(-before),
    --quiet: clang-tidy's meaning, compared with clang-tidy where it prints the same."""
    p, tidy = project(args, ["train.cpp", "header_user.cpp", "extra.cpp", "endl.cpp"])
    p.write(".clang-tidy", "Checks: '-*,devcopy-*,-devcopy-copy-in-loop'\n"
                           "CheckOptions: {MainFileOnly: false}\n")
    for flags in ([], ["--checks=performance-avoid-endl"]):
        for what in ("--list-checks", "--explain-config"):
            rc, ours, err = p.analyze(what, *flags, "src/train.cpp")
            check(rc == 0, f"{what} {flags}: exit {rc}\n{err}")
            same(f"{what} {flags}", ours, tidy.run(what, *flags, "src/train.cpp")[1])
    rc, ours, _ = p.analyze("--list-checks")
    check("devcopy-copy-in-loop" not in ours and "devcopy-discarded-copy" in ours, ours)
    # --config replaces .clang-tidy, as --config-file does; not both.
    rc, found = p.findings("--config={Checks: '-*,devcopy-create-then-move'}")
    check({f["rule"] for f in found} == {"devcopy-create-then-move"}, f"--config: {found}")
    expect_error(p.analyze("--config={}", "--config-file=x.yaml"), "--config", "--config-file")
    expect_error(p.analyze("--config={Checks: [unclosed"), "--config")
    # Headers: reported with --header-filter only, as clang-tidy does.
    def header_rules(*flags):
        rc, found = p.findings(*flags, "src/header_user.cpp")
        return {(os.path.relpath(f["file"], p.dir) if f["file"].startswith("/") else f["file"], f["line"])
                for f in found}
    check(header_rules() == set(), f"header finding without --header-filter: {header_rules()}")
    check(header_rules("--header-filter=.*") == {("inc/off.h", 3)}, str(header_rules("--header-filter=.*")))
    rc, ours, _ = p.analyze("--header-filter=.*", "src/header_user.cpp")
    # clang names the header as the #include reached it; devcopy without the "..".
    theirs = tidy.run("--header-filter=.*", "src/header_user.cpp")[1]
    same("--header-filter", ours, theirs.replace("src/../inc/", "inc/"))
    # --extra-arg and --extra-arg-before reach the compile command.
    for flag in ("--extra-arg=-DEXTRA", "--extra-arg-before=-DEXTRA"):
        rc, found = p.findings(flag, "src/extra.cpp")
        check([f["line"] for f in found] == [3], f"{flag}: {found}")
    rc, found = p.findings("src/extra.cpp")
    check(found == [], f"EXTRA undefined, yet: {found}")
    # --quiet: the report only.
    rc, out, err = p.analyze("--quiet", "src/train.cpp")
    check(rc == 1 and out and err == "", f"--quiet still says: {err!r}")
    # --export-fixes: clang-tidy's YAML, the same document, every path made
    # absolute (clang-tidy's own are relative to each BuildDirectory).
    p.analyze("--export-fixes=ours.yaml", "src/train.cpp")
    tidy.run("--export-fixes=theirs.yaml", "src/train.cpp")
    ours, theirs = (yaml.safe_load(p.read(n)) for n in ("ours.yaml", "theirs.yaml"))
    paths = list(file_paths(ours))
    check(paths and all(os.path.isabs(f) for f in paths), f"relative paths exported: {paths}")
    for d in theirs["Diagnostics"]:
        absolute_paths(d, d["BuildDirectory"])
    check(ours == theirs and len(ours["Diagnostics"]) == 2,
          f"--export-fixes:\n{p.read('ours.yaml')}\n---\n{p.read('theirs.yaml')}")
    check(any(d["DiagnosticMessage"]["Replacements"] for d in ours["Diagnostics"]), "no fixes exported")
    # Usage errors: one line, exit 2, llvm::cl's complaint made ours.
    line = expect_error(p.analyze("--chekcs=x"), "unknown option '--chekcs=x'", "--checks")
    expect_error(p.analyze("-p"), "'-p' needs a value")
    expect_error(p.analyze("--list-checks", "--checks=-*"), "no check is enabled")


def case_conventions(args):
    """clang-tidy's conventions, side by side with clang-tidy-19 + plugin:
    FILE -- FLAGS with no compile database, --line-filter (a note's line
    counts), --exclude-header-filter, --system-headers, --fix-notes (implying --fix),
    --dump-config."""
    p, tidy = project(args, ["train.cpp", "header_user.cpp"])
    p.write("src/sys_user.cpp", "#include <off.h>\n")
    p.write("src/parens.cpp", "bool g(bool a, bool b, bool c) {\n  return a && b || c;\n}\n")
    p.write(".clang-tidy", "CheckOptions: {MainFileOnly: false}\n")  # header findings too
    devcopy = ["--checks=-*,devcopy-*"]
    # FILE -- FLAGS: clang-tidy's fixed compile database; no compile_commands.json.
    os.remove(p.path("compile_commands.json"))
    flags = ["--", "-std=c++17", f"-I{args.mock}"]
    rc, ours, err = p.analyze("src/train.cpp", *flags)
    check(rc == 1 and ours, f"src/train.cpp -- FLAGS: exit {rc}\n{err}")
    # clang-tidy names the file absolute here; devcopy as always, from cwd.
    same("FILE -- FLAGS", ours,
         tidy.run(*devcopy, "src/train.cpp", *flags)[1].replace(p.dir + "/", ""))
    expect_error(p.analyze("src", *flags), "'src' is no source file")
    expect_error(p.analyze("--", "-std=c++17"), "name them before '--'")
    p.set_sources(["train.cpp", "header_user.cpp"])
    # --line-filter: line 17's finding, and the loop finding through its note
    # on line 10; a file the filter does not name reports nothing.
    lines = '--line-filter=[{"name":"src/train.cpp","lines":[[10,10],[17,17]]}]'
    rc, ours, _ = p.analyze(lines, "src/train.cpp")
    check("devcopy-copy-in-loop" in ours and "devcopy-create-then-move" in ours and
          "devcopy-discarded-copy" not in ours, f"{lines}:\n{ours}")
    same("--line-filter", ours, tidy.run(*devcopy, lines, "src/train.cpp")[1])
    rc, ours, _ = p.analyze('--line-filter=[{"name":"other.cpp"}]', "src/train.cpp")
    check(rc == 0 and ours == "", f"a file the filter leaves out still reports:\n{ours}")
    # --exclude-header-filter wins over --header-filter.
    header = ["--header-filter=.*", "src/header_user.cpp"]
    rc, ours, _ = p.analyze(*header)
    check("inc/off.h:3:3" in ours, f"no header finding to exclude:\n{ours}")
    rc, ours, _ = p.analyze("--exclude-header-filter=off\\.h", *header)
    check(rc == 0 and ours == "", f"--exclude-header-filter:\n{ours}")
    same("--exclude-header-filter", ours,
         tidy.run(*devcopy, "--exclude-header-filter=off\\.h", *header)[1])
    # --system-headers: a header reached through -isystem.
    system = [f"--extra-arg=-isystem{p.path('inc')}", "--header-filter=.*", "src/sys_user.cpp"]
    p.set_sources(["train.cpp", "sys_user.cpp", "parens.cpp"])
    rc, ours, _ = p.analyze(*system)
    check(rc == 0 and ours == "", f"a system header's finding without --system-headers:\n{ours}")
    rc, ours, _ = p.analyze("--system-headers", *system)
    check("inc/off.h:3:3" in ours, f"--system-headers:\n{ours}")
    same("--system-headers", ours,  # clang names it by the absolute -isystem path
         tidy.run(*devcopy, "--system-headers", *system)[1].replace(p.dir + "/", ""))
    # --fix-notes: clang's only fix-it for 'a && b || c' is on its note.
    checks = ["--checks=-*,devcopy-discarded-copy,clang-diagnostic-logical-op-parentheses",
              "--extra-arg=-Wparentheses", "src/parens.cpp"]
    before = p.read("src/parens.cpp")
    rc, out, _ = p.analyze("--fix", *checks)
    check("[clang-diagnostic-logical-op-parentheses]" in out, f"no warning to fix:\n{out}")
    check(p.read("src/parens.cpp") == before, "--fix applied a note's fix-it")
    p.analyze("--fix-notes", *checks)  # implies --fix, as in clang-tidy
    ours = p.read("src/parens.cpp")
    check("(a && b) || c" in ours, f"--fix-notes applied nothing:\n{ours}")
    p.write("src/parens.cpp", before)
    tidy.run("--fix-notes", *checks)
    same("--fix-notes", ours, p.read("src/parens.cpp"))
    # --dump-config: the effective configuration, check options included.
    rc, ours, _ = p.analyze("--dump-config", *devcopy, "src/train.cpp")
    theirs = tidy.run("--dump-config", *devcopy, "src/train.cpp")[1]
    ours, theirs = yaml.safe_load(ours), yaml.safe_load(theirs)
    # Each tool's defaults first, then --checks: '-*' makes them the same checks.
    check(ours["Checks"].endswith(",-*,devcopy-*") and theirs["Checks"].endswith(",-*,devcopy-*"),
          f"--dump-config Checks: {ours['Checks']!r} / {theirs['Checks']!r}")
    check(ours["CheckOptions"] == theirs["CheckOptions"] and
          any(k.startswith("devcopy-") for k in ours["CheckOptions"]),
          f"--dump-config CheckOptions:\n{ours}\n---\n{theirs}")


def case_version_help(args):
    """Every tool (the plugin in clang-tidy-19 too): devcopy's version beside
    LLVM's, the devcopy checks in --help, one line each."""
    tools = {"devcopy": [args.devcopy], "devcopy-tidy": [args.tidy],
             "clang-tidy-19 + plugin": [args.clang_tidy, f"--load={args.plugin}"]}
    if args.clangd:
        tools["devcopy-clangd"] = [args.clangd]
    for name, cmd in tools.items():
        proc = subprocess.run(cmd + ["--version"], capture_output=True, text=True, timeout=60)
        check(proc.returncode == 0, f"{name} --version: exit {proc.returncode}")
        llvm = "clangd version 19" if name == "devcopy-clangd" else "LLVM version 19"
        check("devcopy version " in proc.stdout and llvm in proc.stdout,
              f"{name} --version:\n{proc.stdout}")
        helps = [cmd + ["--help"]] + ([cmd[:1] + ["analyze", "--help"]] if name == "devcopy" else [])
        for h in helps:
            proc = subprocess.run(h, capture_output=True, text=True, timeout=60)
            check(proc.returncode == 0, f"{h}: exit {proc.returncode}")
            for rule in DEVCOPY_CHECKS:
                lines = [l for l in proc.stdout.splitlines() if l.split()[:1] == [rule]]
                check(len(lines) == 1 and len(lines[0].split()) > 2, f"{h}: no line for {rule}")
    proc = subprocess.run([args.devcopy, "analyze", "--help"], capture_output=True, text=True)
    for flag in ("--checks", "--config", "--config-file", "--header-filter", "--warnings-as-errors",
                 "--export-fixes", "--quiet", "--list-checks", "--explain-config", "--fix",
                 "-p ", "--extra-arg", "--extra-arg-before", "--format", "--baseline"):
        check(flag in proc.stdout, f"analyze --help lacks {flag}")


def regions(run):
    return [(r["ruleId"], r.get("baselineState"), r["locations"][0]["physicalLocation"]["region"])
            for r in run["results"]]


def case_sarif_report(args):
    """SARIF: regions of real width, a related location per note, helpUri per
    rule (the installed page, or --rule-docs), baselineState with a baseline."""
    p, _ = project(args, ["train.cpp"])
    p.write("src/sync.cpp", "#include <torch/torch.h>\ntorch::Tensor step(torch::Tensor x);\n"
            "double train(int steps, torch::Tensor x) {\n"
            "  torch::Device device(torch::kCUDA);\n  double total = 0;\n"
            "  for (int i = 0; i < steps; ++i) {\n"
            "    auto loss = step(x).to(device);\n    total += loss.item<double>();\n  }\n"
            "  return total;\n}\n")
    p.set_sources(["train.cpp", "sync.cpp"])
    rc, _, err = p.analyze("--format=sarif", "--output=a.sarif", "--rule-docs=https://example.org/r/")
    check(rc == 1, err)
    validate_sarif(args, p.path("a.sarif"))
    run = json.loads(p.read("a.sarif"))["runs"][0]
    for rule in run["tool"]["driver"]["rules"]:
        check(rule["helpUri"] == f"https://example.org/r/{rule['id']}.md", f"helpUri {rule}")
    got = {(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]):
           r for r in run["results"]}
    want_regions = {("devcopy-discarded-copy", 5): (3, 7), ("devcopy-copy-in-loop", 11): (22, 24),
                    ("devcopy-create-then-move", 17): (27, 29), ("devcopy-host-sync-in-loop", 8): (19, 23)}
    for key, (start, end) in want_regions.items():
        check(key in got, f"no result {key}: {sorted(got)}")
        region = got[key]["locations"][0]["physicalLocation"]["region"]
        check((region["startColumn"], region["endColumn"]) == (start, end), f"{key}: region {region}")
    for key, loop_line in ((("devcopy-copy-in-loop", 11), 10), (("devcopy-host-sync-in-loop", 8), 6)):
        related = got[key]["relatedLocations"]
        loop = [r for r in related if r["message"]["text"] == "loop starts here"]
        check(len(loop) == 1 and loop[0]["physicalLocation"]["region"]["startLine"] == loop_line and
              loop[0]["physicalLocation"]["region"]["endColumn"] == 6, f"{key}: loop note {related}")
    for r in run["results"]:
        check("baselineState" not in r, "baselineState without a baseline")

    # A clang-tidy check's results: a rule of its own, pointing at its documentation.
    p.set_sources(["endl.cpp"])
    rc, _, err = p.analyze("--checks=-*,performance-avoid-endl", "--format=sarif", "--output=e.sarif")
    check(rc == 1, err)
    validate_sarif(args, p.path("e.sarif"))
    run = json.loads(p.read("e.sarif"))["runs"][0]
    rule = run["tool"]["driver"]["rules"][run["results"][0]["ruleIndex"]]
    check(rule["id"] == "performance-avoid-endl" and rule["helpUri"] ==
          "https://clang.llvm.org/extra/clang-tidy/checks/performance/avoid-endl.html", str(rule))
    p.set_sources(["train.cpp", "sync.cpp"])

    # The default helpUri: the rule pages beside an installed binary.
    prefix = p.path("prefix")
    os.makedirs(os.path.join(prefix, "bin"))
    os.makedirs(os.path.join(prefix, "share/doc/devcopy/rules"))
    shutil.copy(args.devcopy, os.path.join(prefix, "bin/devcopy"))
    proc = subprocess.run([os.path.join(prefix, "bin/devcopy"), "analyze", "--no-progress",
                           "--format=sarif", "src/train.cpp"], cwd=p.dir, capture_output=True,
                          text=True, timeout=300)
    driver = json.loads(proc.stdout)["runs"][0]["tool"]["driver"]
    for rule in driver["rules"]:
        check(rule["helpUri"] == f"file://{prefix}/share/doc/devcopy/rules/{rule['id']}.md",
              f"installed helpUri {rule['helpUri']}")
    check(driver["informationUri"] == f"file://{prefix}/share/doc/devcopy/README.md", str(driver))

    # From the build tree: the source tree's pages, which exist (not an install
    # prefix's, which a build tree does not have).
    source = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    proc = subprocess.run([args.devcopy, "analyze", "--no-progress", "--format=sarif", "src/train.cpp"],
                          cwd=p.dir, capture_output=True, text=True, timeout=300)
    driver = json.loads(proc.stdout)["runs"][0]["tool"]["driver"]
    for uri in [r["helpUri"] for r in driver["rules"]] + [driver["informationUri"]]:
        path = urllib.parse.unquote(urllib.parse.urlparse(uri).path)
        check(uri.startswith("file://") and os.path.isfile(path) and
              os.path.realpath(path).startswith(source + os.sep), f"build-tree link {uri} opens nothing")

    # A baseline: known results stay, marked; a fixed one is absent; a new one new.
    p.set_sources(["train.cpp"])
    rc, _, err = p.analyze("--write-baseline=b.json")
    check(rc == 0, err)
    src = p.read("src/train.cpp").replace("prev.to(torch::kCPU, true);", "prev = prev.to(torch::kCPU, true);")
    src += "\nvoid fresh(torch::Tensor u) {\n  u.cuda();\n}\n"
    p.write("src/train.cpp", src)
    fresh_line = src.splitlines().index("  u.cuda();") + 1
    rc, _, err = p.analyze("--baseline=b.json", "--format=sarif", "--output=b.sarif")
    check(rc == 1 and "1 new finding(s)" in err and "2 in the baseline" in err, f"{rc}: {err}")
    validate_sarif(args, p.path("b.sarif"))
    states = sorted((r[0], r[1], r[2]["startLine"]) for r in regions(json.loads(p.read("b.sarif"))["runs"][0]))
    check(states == [("devcopy-copy-in-loop", "unchanged", 11), ("devcopy-create-then-move", "unchanged", 17),
                     ("devcopy-discarded-copy", "absent", 5), ("devcopy-discarded-copy", "new", fresh_line)],
          f"baseline states: {states}")
    # Text keeps reporting the new finding alone.
    rc, out, _ = p.analyze("--baseline=b.json")
    check([m[6] for m in cli_e2e.diagnostics(out)] == ["devcopy-discarded-copy"], out)


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    for flag in ("--devcopy", "--tidy", "--clang-tidy", "--plugin", "--mock", "--validator"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--clangd")
    args = ap.parse_args()
    try:
        CASES[args.case](args)
    except clitest.Failure as e:
        sys.exit(f"FAIL {args.case}: {e}")
    for d in cli_e2e.TEMP_DIRS:
        shutil.rmtree(d, ignore_errors=True)
    print(f"ok {args.case}")


if __name__ == "__main__":
    main()
