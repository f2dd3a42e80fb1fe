#!/usr/bin/env python3
"""End-to-end tests of the devcopy command on a mock-header project.

Each case copies tests/cli/project/ to a fresh directory, writes its
compile_commands.json (mock <torch/torch.h>: parsing takes milliseconds) and
runs the real build/analyzer/devcopy on it.

Usage: cli_e2e.py CASE --devcopy BIN --mock DIR [--validator BIN]
"""
import json
import os
import pty
import re
import shutil
import subprocess
import tempfile

from clitest import ProjectDir, check, run_cases, run_tool

HERE = os.path.dirname(os.path.abspath(__file__))

# (file, line, rule) of every finding in the fixture project; nothing else.
EXPECTED = {
    ("src/train.cpp", 5, "devcopy-discarded-copy"),
    ("src/train.cpp", 11, "devcopy-copy-in-loop"),
    ("src/train.cpp", 17, "devcopy-create-then-move"),
}
TEXT_LINE = re.compile(r"^(\S+):(\d+):(\d+): (warning|error|note): (.+?)(?: \[([\w-]+)\])?$")
# clang's snippet under each diagnostic: "   12 | source", "      | ~~^~~".
SNIPPET_LINE = re.compile(r"^ *(\d+)? \| ")


def diagnostics(out):
    """The diagnostic lines of a text report, each a TEXT_LINE match; every
    other line must belong to a snippet."""
    found = []
    for line in out.splitlines():
        m = TEXT_LINE.match(line)
        check(m or SNIPPET_LINE.match(line), f"line neither a diagnostic nor a snippet: {line!r}")
        if m:
            found.append(m)
    return found


def read_pty(master):
    """Everything written to a pty until its other end closes; closes it."""
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return out


TEMP_DIRS = []  # removed when the case passes; kept for a look when it fails


class Project(ProjectDir):
    def __init__(self, args, sources=("train.cpp", "clean.cpp")):
        self.args = args
        self.dir = tempfile.mkdtemp(prefix="devcopy_cli_")
        TEMP_DIRS.append(self.dir)
        shutil.copytree(os.path.join(HERE, "project"), self.dir, dirs_exist_ok=True)
        self.set_sources(sources)

    def set_sources(self, sources):
        commands = [{"directory": self.dir, "file": f"src/{s}",
                     "arguments": ["clang++", "-std=c++17", f"-I{self.args.mock}", "-c", f"src/{s}"]}
                    for s in sources]
        self.write("compile_commands.json", json.dumps(commands, indent=1))

    def run(self, *argv):
        p = run_tool([self.args.devcopy, *argv], self.dir)
        return p.returncode, p.stdout, p.stderr

    def analyze(self, *argv):
        return self.run("analyze", "--no-progress", *argv)

    def findings(self, *argv):
        rc, out, err = self.analyze("--format", "json", *argv)
        check(rc in (0, 1), f"analyze {argv} exited {rc}:\n{err}")
        return rc, json.loads(out)["findings"]


def triples(findings):
    return {(f["file"], f["line"], f["rule"]) for f in findings}


def expect_error(result, *needles):
    """Exit code 2 and exactly one one-line error that names what to fix."""
    rc, _, err = result
    lines = [l for l in err.splitlines() if l.startswith("devcopy: error:")]
    check(rc == 2, f"expected exit code 2, got {rc}:\n{err}")
    check(len(lines) == 1, f"expected one error line, got:\n{err}")
    for n in needles:
        check(n in lines[0], f"error line lacks {n!r}: {lines[0]}")
    return lines[0]


def case_text(args):
    p = Project(args)
    rc, out, err = p.analyze()
    out_text = out
    check(rc == 1, f"findings must exit 1, got {rc}:\n{err}")
    parsed = diagnostics(out)
    warnings = {(m[1], int(m[2]), m[6]) for m in parsed if m[4] == "warning"}
    check(warnings == EXPECTED, f"text findings {sorted(warnings)} != {sorted(EXPECTED)}")
    check("src/train.cpp:10:3: note: loop starts here" in out, f"loop note missing:\n{out}")
    check("3 finding(s) in 2 translation unit(s)" in err, err)

    rc, findings = p.findings()
    check(triples(findings) == EXPECTED, f"json findings: {sorted(triples(findings))}")
    check(len({f["fingerprint"] for f in findings}) == 3, "fingerprints must differ")
    # Parallel and serial runs report the same thing, in the same order.
    check(p.findings("--jobs", "1", "--no-cache") == p.findings("--jobs", "2", "--no-cache"),
          "--jobs changes the result")
    # On a terminal, a progress line on stderr; the report stays on stdout.
    master, slave = pty.openpty()
    proc = subprocess.run([args.devcopy, "analyze", "--jobs", "1", "--no-cache"], cwd=p.dir,
                          stdout=subprocess.PIPE, stderr=slave, text=True, timeout=300)
    os.close(slave)
    tty = read_pty(master)
    check(proc.returncode == 1 and proc.stdout == out_text, "a terminal changes the report")
    check(b"[1/2] " in tty and b"[2/2] " in tty, f"no progress line on a terminal: {tty!r}")
    # PATH arguments select translation units.
    rc, out, err = p.analyze("src/clean.cpp")
    check(rc == 0 and out == "", f"clean.cpp alone must pass silently: {rc}\n{out}{err}")
    check(p.findings("src")[1] == findings, "a directory selects the units under it")


def validate_sarif(args, sarif_path):
    """Microsoft's SARIF multitool; any error or warning fails."""
    check(args.validator and os.access(args.validator, os.X_OK),
          f"SARIF validator not found at {args.validator}; run scripts/setup.sh test")
    log = sarif_path + ".validation.sarif"
    p = subprocess.run([args.validator, "validate", sarif_path, "-o", log, "--log", "ForceOverwrite"],
                       capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"validator failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    with open(log) as f:
        run = json.load(f)["runs"][0]
    check(run["invocations"][0]["executionSuccessful"], f"validator did not finish:\n{p.stdout}")
    problems = [r for r in run.get("results", [])
                if r.get("level", "warning") in ("error", "warning")]
    check(not problems, "SARIF validator reports:\n" + p.stdout)


def case_sarif(args):
    p = Project(args)
    rc, _, err = p.analyze("--format", "sarif", "--output", "out.sarif")
    check(rc == 1, f"exit {rc}: {err}")
    validate_sarif(args, p.path("out.sarif"))
    doc = json.loads(p.read("out.sarif"))
    check(doc["version"] == "2.1.0", "version")
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    check(run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == "file://" + p.dir + "/", "SRCROOT")
    seen = set()
    for r in run["results"]:
        rule = rules[r["ruleIndex"]]
        check(rule["id"] == r["ruleId"], f"ruleIndex of {r['ruleId']} points at {rule['id']}")
        check("## What it flags" in rule["help"]["markdown"] and rule["fullDescription"]["text"],
              f"rule {rule['id']} lacks its page")
        check(rule["defaultConfiguration"]["level"] == r["level"], "level is the rule's default")
        loc = r["locations"][0]["physicalLocation"]
        check(loc["artifactLocation"] == {"uri": "src/train.cpp", "uriBaseId": "%SRCROOT%"},
              f"location {loc['artifactLocation']}")
        check(r["partialFingerprints"]["devcopyLineHash/v1"], "fingerprint")
        seen.add(("src/train.cpp", loc["region"]["startLine"], r["ruleId"]))
        if r["ruleId"] == "devcopy-copy-in-loop":
            related = r["relatedLocations"][0]
            check(related["message"]["text"] == "loop starts here" and
                  related["physicalLocation"]["region"]["startLine"] == 10, f"note: {related}")
        if r["ruleId"] == "devcopy-discarded-copy":
            change = r["fixes"][0]["artifactChanges"][0]
            check(change["replacements"][0]["insertedContent"]["text"] == "prev = ", f"fix: {change}")
    check(seen == EXPECTED, f"sarif results {sorted(seen)}")

    # A unit that does not compile: a tool notification, the others' results
    # still there, and the log still valid.
    p.write("src/broken.cpp", "#include <torch/torch.h>\nint broken( {\n")
    p.set_sources(["train.cpp", "clean.cpp", "broken.cpp"])
    rc, _, err = p.analyze("--format", "sarif", "--output", "broken.sarif")
    check(rc == 2, f"broken unit must exit 2, got {rc}")
    validate_sarif(args, p.path("broken.sarif"))
    run = json.loads(p.read("broken.sarif"))["runs"][0]
    check(len(run["results"]) == 3, "the broken unit hides the others' results")
    check(not run["invocations"][0]["executionSuccessful"], "executionSuccessful must be false")
    note = run["invocations"][0]["toolExecutionNotifications"][0]
    check(note["level"] == "error" and "broken.cpp" in note["message"]["text"], f"{note}")


def case_baseline(args):
    p = Project(args)
    rc, out, err = p.analyze("--write-baseline", "baseline.json")
    check(rc == 0, f"writing a baseline exits 0, got {rc}: {err}")
    check(len(json.loads(p.read("baseline.json"))["entries"]) == 3, "baseline holds 3 entries")
    rc, out, err = p.analyze("--baseline", "baseline.json")
    check(rc == 0 and out == "", f"all known: exit 0, no output; got {rc}:\n{out}")
    check("0 new finding(s)" in err and "3 in the baseline" in err, err)

    # Unrelated edits shift and reindent every flagged line: still all known.
    src = p.read("src/train.cpp")
    shifted = "// a new header comment\n#include <vector>\n\n" + src.replace("\n  ", "\n    ")
    p.write("src/train.cpp", shifted)
    rc, out, err = p.analyze("--baseline", "baseline.json")
    check(rc == 0 and out == "", f"shifted lines must stay baselined; got {rc}:\n{out}")

    # A new finding is reported, alone, and fails the run.
    grown = shifted + "\nvoid fresh(torch::Tensor u) {\n  u.cuda();\n}\n"
    p.write("src/train.cpp", grown)
    new_line = grown.splitlines().index("  u.cuda();") + 1
    rc, out, err = p.analyze("--baseline", "baseline.json")
    lines = [m[0] for m in diagnostics(out)]
    check(rc == 1 and len(lines) == 1 and "[devcopy-discarded-copy]" in lines[0] and
          f"train.cpp:{new_line}:" in lines[0], f"only the new finding; got {rc}:\n{out}")


def case_fix(args):
    p = Project(args)
    rc, out, err = p.analyze("--fix")
    check(rc == 1, f"the loop copy has no fix-it and stays: exit 1, got {rc}: {err}")
    check("applied fixes for 2 finding(s)" in err, err)
    src = p.read("src/train.cpp")
    check("prev = prev.to(torch::kCPU, true);" in src, f"discarded copy not fixed:\n{src}")
    check("torch::ones({4}, torch::TensorOptions().device(dev))" in src, f"factory not fixed:\n{src}")
    rc, findings = p.findings()
    check(triples(findings) == {("src/train.cpp", 11, "devcopy-copy-in-loop")},
          f"after --fix (and the file still compiles): {sorted(triples(findings))}")


def case_config(args):
    p = Project(args)
    p.write(".clang-tidy", "Checks: '-devcopy-discarded-copy'\n")
    rc, findings = p.findings()
    check(triples(findings) == {t for t in EXPECTED if t[2] != "devcopy-discarded-copy"},
          f".clang-tidy Checks ignored: {sorted(triples(findings))}")
    rc, findings = p.findings("--checks", "-*,devcopy-create-then-move")
    check(triples(findings) == {t for t in EXPECTED if t[2] == "devcopy-create-then-move"},
          f"--checks ignored: {sorted(triples(findings))}")
    p.write("only_discarded.yaml", "Checks: '-*,devcopy-discarded-copy'\n")
    rc, findings = p.findings("--config-file", "only_discarded.yaml")
    check(triples(findings) == {t for t in EXPECTED if t[2] == "devcopy-discarded-copy"},
          f"--config-file ignored: {sorted(triples(findings))}")
    # A directory's own .clang-tidy (no InheritParentConfig) replaces the parent's.
    p.write("src/.clang-tidy", "Checks: '-*,devcopy-copy-in-loop'\n")
    rc, findings = p.findings()
    check(triples(findings) == {t for t in EXPECTED if t[2] == "devcopy-copy-in-loop"},
          f"nested .clang-tidy: {sorted(triples(findings))}")
    expect_error(p.analyze("--checks", "-*"), "no devcopy check is enabled")


def case_errors(args):
    p = Project(args)
    expect_error(p.analyze("-p", "nowhere"), "nowhere/compile_commands.json", "-p BUILD_DIR")
    p.write("bad_db/compile_commands.json", "[{ not json")
    expect_error(p.analyze("-p", "bad_db"), "bad_db/compile_commands.json", "regenerate")
    expect_error(p.analyze("--baseline", "missing.json"), "missing.json", "--write-baseline")
    p.write("garbage.json", "{\"version\": 1, \"entries\": 3}")
    expect_error(p.analyze("--baseline", "garbage.json"), "garbage.json", "--write-baseline")
    expect_error(p.analyze("--config-file", "missing.yaml"), "missing.yaml")
    p.write(".clang-tidy", "Checks: [unclosed\n")
    expect_error(p.analyze(), p.path(".clang-tidy"), "fix the YAML")
    os.remove(p.path(".clang-tidy"))
    os.makedirs(p.path("src/.clang-tidy"))  # there, but unreadable as a file
    expect_error(p.analyze(), p.path("src/.clang-tidy"), "cannot read")
    os.rmdir(p.path("src/.clang-tidy"))
    expect_error(p.analyze("no/such/dir"), "no/such/dir")
    expect_error(p.analyze("--format", "xml"), "--format")
    expect_error(p.run("analyse"), "analyse")
    expect_error(p.analyze("--output", p.path("no/dir/out.txt")), "no/dir/out.txt")

    # A unit that does not parse: exit 2, an error naming it, and every other
    # unit's findings still reported.
    p.write("src/broken.cpp", "#include <torch/torch.h>\nint broken( {\n")
    p.set_sources(["train.cpp", "broken.cpp", "clean.cpp"])
    rc, out, err = p.analyze()
    line = expect_error((rc, out, err), "src/broken.cpp:2:", "compile_commands.json")
    found = {(m[1], int(m[2]), m[6]) for m in diagnostics(out) if m[4] == "warning"}
    check(found == EXPECTED, f"findings of the other units hidden: {sorted(found)}")
    # A command whose directory is gone (clang's tooling would abort on it).
    p.write("moved/compile_commands.json", json.dumps([{
        "directory": p.path("no/such/build"), "file": p.path("src/train.cpp"),
        "arguments": ["clang++", "-c", p.path("src/train.cpp")]}]))
    expect_error(p.analyze("-p", "moved"), "no/such/build", "regenerate")
    # A unit listed in the database but gone from disk.
    p.set_sources(["train.cpp", "gone.cpp"])
    rc, out, err = p.analyze()
    expect_error((rc, out, err), "gone.cpp", "regenerate")
    check("[devcopy-create-then-move]" in out, "the remaining unit is still analyzed")


def only_error_line(result, *needles):
    """expect_error, and nothing else on stderr: no parser noise, no crash text."""
    line = expect_error(result, *needles)
    err = result[2]
    check(err.strip() == line, f"stderr holds more than the error:\n{err}")
    return line


HEADERS_TOO = "HeaderFilterRegex: '.*'\nCheckOptions: {MainFileOnly: false}\n"
FIXED_TRAIN = ("prev = prev.to(torch::kCPU, true);",
               "torch::ones({4}, torch::TensorOptions().device(dev))")


def case_fix_paths(args):
    """A file the compile database reaches by two paths is fixed once."""
    p = Project(args)
    os.symlink("src", p.path("alias"))
    commands = [{"directory": p.dir, "file": f"{d}/train.cpp",
                 "arguments": ["clang++", "-std=c++17", f"-I{args.mock}", "-c", f"{d}/train.cpp"]}
                for d in ("src", "alias")]
    p.write("compile_commands.json", json.dumps(commands))
    rc, out, err = p.analyze("--fix")
    check(rc == 1, f"the loop copy stays: exit 1, got {rc}:\n{err}")
    src = p.read("src/train.cpp")
    for fixed in FIXED_TRAIN:
        check(src.count(fixed) == 1, f"fix applied {src.count(fixed)} times:\n{src}")
    check(out.count("[devcopy-copy-in-loop]") == 1, f"one finding per file, not per path:\n{out}")
    check(os.path.islink(p.path("alias")), "the symlink was replaced")
    # A header reached through -Iinc and -Ilink (a symlink to inc).
    p.write(".clang-tidy", HEADERS_TOO)
    p.write("inc/off.h", "#include <torch/torch.h>\n"
            "inline void off(torch::Tensor p) {\n  p.to(torch::kCPU, true);\n}\n")
    os.symlink("inc", p.path("link"))
    p.write("src/a.cpp", '#include "off.h"\n')
    p.write("src/b.cpp", '#include "off.h"\n')
    commands = [{"directory": p.dir, "file": f"src/{u}.cpp",
                 "arguments": ["clang++", "-std=c++17", f"-I{args.mock}", f"-I{inc}", "-c", f"src/{u}.cpp"]}
                for u, inc in (("a", "inc"), ("b", "link"))]
    p.write("compile_commands.json", json.dumps(commands))
    rc, out, err = p.analyze("--fix")
    check(rc == 0, f"all fixed: exit 0, got {rc}:\n{out}{err}")
    check("applied fixes for 1 finding(s)" in err, err)
    check("  p = p.to(torch::kCPU, true);\n" in p.read("inc/off.h"), p.read("inc/off.h"))


def case_fix_readonly(args):
    """A file that cannot be written: exit 2, its findings reported, no file changed."""
    p = Project(args)
    p.write(".clang-tidy", HEADERS_TOO)
    p.write("inc/off.h", "#include <torch/torch.h>\n"
            "inline void off(torch::Tensor p) {\n  p.to(torch::kCPU, true);\n}\n")
    p.write("src/train.cpp", '#include "../inc/off.h"\n' + p.read("src/train.cpp"))
    before = {n: p.read(n) for n in ("src/train.cpp", "inc/off.h")}
    os.chmod(p.path("inc/off.h"), 0o444)
    rc, out, err = p.analyze("--fix", "--format", "json")
    expect_error((rc, out, err), "inc/off.h", "read-only")
    doc = json.loads(out)
    check(len(doc["findings"]) == 4 and doc["summary"]["errors"] == 1,
          f"fixable findings dropped from the report: {out}")
    check("applied fixes" not in err, err)
    for name, text in before.items():
        check(p.read(name) == text, f"{name} changed although the run failed")
    check(sorted(os.listdir(p.path("inc"))) == ["off.h"], "a temporary file was left")


def slow_unit(p, args, seconds_of_work=400_000_000):
    """A unit whose analysis takes seconds (constant evaluation), for interrupting."""
    p.write("src/slow.cpp", "constexpr long spin(long n) { long s = 0; for (long i = 0; i < n; ++i)"
            " s += i % 7; return s; }\n"
            f"static_assert(spin({seconds_of_work}) > 0);\n")
    commands = json.loads(p.read("compile_commands.json"))
    commands.append({"directory": p.dir, "file": "src/slow.cpp",
                     "arguments": ["clang++", "-std=c++17", "-fconstexpr-steps=2147483647",
                                   "-c", "src/slow.cpp"]})
    p.write("compile_commands.json", json.dumps(commands))


def case_atomic_output(args):
    """--output and --write-baseline replace the previous file only when complete."""
    import signal
    import time
    p = Project(args)
    for name in ("report.json", "baseline.json"):
        p.write(name, "previous " + name)
    slow_unit(p, args)
    for flag, name in (("--output", "report.json"), ("--write-baseline", "baseline.json")):
        proc = subprocess.Popen([args.devcopy, "analyze", "--no-progress", "--jobs", "1",
                                 "--format", "json", flag, name], cwd=p.dir,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        check(proc.poll() is None, "the slow unit finished too soon to interrupt")
        check(p.read(name) == "previous " + name, f"{name} truncated before the analysis")
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        proc.communicate(timeout=60)
        check(proc.returncode != 0, "an interrupted run exited 0")
        check(p.read(name) == "previous " + name, f"an interrupted run changed {name}")
        leftovers = [f for f in os.listdir(p.dir) if ".devcopy-" in f]
        check(not leftovers, f"temporary files left: {leftovers}")
    # A write failure is an error (2), in one line, whether --output or stdout.
    p.set_sources(["train.cpp"])
    rc, out, err = p.analyze("--output", "/dev/full")
    expect_error((rc, out, err), "/dev/full", "space")
    check("LLVM ERROR" not in err, err)
    with open("/dev/full", "w") as full:
        proc = subprocess.run([args.devcopy, "analyze", "--no-progress"], cwd=p.dir,
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=300)
    lines = proc.stderr.strip().splitlines()
    check(proc.returncode == 2 and any("standard output" in l and "space" in l for l in lines),
          f"stdout on a full disk: exit {proc.returncode}:\n{proc.stderr}")
    check("LLVM ERROR" not in proc.stderr, proc.stderr)
    os.chmod(p.path("report.json"), 0o444)
    expect_error(p.analyze("--output", "report.json"), "report.json", "read-only")
    check(p.read("report.json") == "previous report.json", "a read-only report was replaced")


def case_database_paths(args):
    """Relative "directory" and "file", resolved as the specification says."""
    p = Project(args)
    # "directory" relative: to the database's folder; "file" relative to "directory".
    p.write("build/compile_commands.json", json.dumps([
        {"directory": "..", "file": f"src/{s}",
         "arguments": ["clang++", "-std=c++17", f"-I{args.mock}", "-c", f"src/{s}"]}
        for s in ("train.cpp", "clean.cpp")]))
    elsewhere = tempfile.mkdtemp(prefix="devcopy_cwd_")
    TEMP_DIRS.append(elsewhere)
    p.write(".clang-tidy", "Checks: '-devcopy-create-then-move'\n")
    proc = subprocess.run([args.devcopy, "analyze", "--no-progress", "--format", "json",
                           "-p", p.path("build")], cwd=elsewhere, capture_output=True, text=True,
                          timeout=300)
    check(proc.returncode == 1, f"exit {proc.returncode}:\n{proc.stderr}")
    doc = json.loads(proc.stdout)
    want = {t for t in EXPECTED if t[2] != "devcopy-create-then-move"}
    got = {(os.path.relpath(f["file"], p.dir) if f["file"].startswith("/") else f["file"],
            f["line"], f["rule"]) for f in doc["findings"]}
    check(got == want, f"relative directory, .clang-tidy beside the sources: {sorted(got)}")
    check(doc["summary"]["translation_units"] == 2 and not doc["errors"], proc.stdout)
    # A relative "directory" that does not exist is an error, not a silent pass.
    p.write("build/compile_commands.json", json.dumps([
        {"directory": "../nowhere", "file": "src/train.cpp",
         "arguments": ["clang++", "-c", "src/train.cpp"]}]))
    expect_error(p.analyze("-p", "build"), "nowhere")


def case_hostile(args):
    """Broken, binary, deep and garbage inputs: one line each, exit 2, never a crash."""
    p = Project(args)
    deep = "[" * 50000 + "]" * 50000
    tried = 0
    for name, text in [("truncated", '[{"directory": "/x", "fi'),
                       ("binary", "\x00\xff\xfe\x01ELF\x7f" * 50),
                       ("deep", deep), ("deep_args", '[{"directory": "/", "file": "a.cpp", '
                                                     '"arguments": ' + deep + '}]'),
                       ("empty", ""), ("object", '{"directory": "/"}'),
                       ("no_command", '[{"directory": "/", "file": "a.cpp"}]')]:
        p.write(f"db_{name}/compile_commands.json", text)
        only_error_line(p.analyze("-p", f"db_{name}"), f"db_{name}/compile_commands.json")
        tried += 1
    for name, text in [("deep", '{"version": 1, "entries": ' + deep + "}"),
                       ("deep_object", '{"a":' * 50000 + "1" + "}" * 50000),
                       ("binary", "\x7fELF\x00\x01" * 100), ("number", "1e999999"),
                       ("huge_string", '{"version": 1, "entries": [{"fingerprint": "' + "x" * 2_000_000 + '"'),
                       ("dir", None)]:
        if text is None:
            os.makedirs(p.path(f"bl_{name}.json"))
        else:
            p.write(f"bl_{name}.json", text)
        only_error_line(p.analyze("--baseline", f"bl_{name}.json"), f"bl_{name}.json")
        tried += 1
    for name, text in [("deep", "Checks: " + "[" * 50000), ("binary", "\x00\x01\xff" * 100),
                       ("unclosed", "CheckOptions: [ {key: a, value: b\n")]:
        p.write(f"cfg_{name}.yaml", text)
        only_error_line(p.analyze("--config-file", f"cfg_{name}.yaml"), f"cfg_{name}.yaml")
        tried += 1
    # Garbage source: the first real error, not clang's "too many errors emitted".
    import random
    rnd = random.Random(11)
    p.write("src/garbage.cpp", "".join(chr(rnd.choice(list(range(32, 127)) + [10])) for _ in range(4000)))
    p.set_sources(["garbage.cpp", "train.cpp"])
    rc, out, err = p.analyze()
    line = expect_error((rc, out, err), "src/garbage.cpp:", "more")
    check("too many errors" not in line, line)
    check(out.count("[devcopy-") == 3, "the other unit's findings are still reported")
    tried += 1
    print(f"{tried} hostile inputs: one-line errors, no crash")


PROGRESS_LINE = re.compile(r"^\[(\d+)/(\d+)\] (\S+) \d+\.\d s, (\d+) findings?(, (\d+) compile errors?)?$")


def stdout_on_terminal(args, cwd, *argv):
    """stdout of devcopy when it is a terminal (a pty), as bytes."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([args.devcopy, "analyze", "--no-progress", *argv], cwd=cwd,
                            stdout=slave, stderr=subprocess.DEVNULL)
    os.close(slave)
    out = read_pty(master)
    proc.wait(timeout=300)
    return out


def case_flags_more(args):
    """Progress lines where CI reads them, --verify-config, --use-color,
    --fix-errors, --allow-no-checks, --enable-check-profile, and a unit that
    does not compile reporting its findings beside its error."""
    p = Project(args)
    # One line per finished unit on stderr, which is no terminal here.
    rc, out, err = p.run("analyze", "--no-cache", "--jobs", "1")
    lines = [PROGRESS_LINE.match(line) for line in err.splitlines() if line.startswith("[")]
    check(len(lines) == 2 and all(lines), f"progress lines on a pipe:\n{err}")
    got = {(m[3], int(m[4])) for m in lines}
    check(got == {("src/train.cpp", 3), ("src/clean.cpp", 0)}, f"progress: {sorted(got)}")
    check({int(m[1]) for m in lines} == {1, 2} and {m[2] for m in lines} == {"2"}, err)
    for quiet in ("--quiet", "--no-progress"):
        rc, out, err = p.run("analyze", "--no-cache", quiet)
        check(rc == 1 and "[1/2]" not in err, f"{quiet} still shows progress:\n{err}")

    # --verify-config: a glob selecting no check, an option no check reads.
    rc, out, err = p.analyze("--verify-config", "src/train.cpp")
    check(rc == 0 and out == "No config errors detected.\n", f"--verify-config: {rc}\n{out}{err}")
    p.write(".clang-tidy", "Checks: 'devcopy-*,devcopy-discarded-copi'\n"
                           "CheckOptions: {devcopy-copy-in-loop.MainFileOnli: false}\n")
    expect_error(p.analyze("--verify-config", "src/train.cpp"),
                 "check glob 'devcopy-discarded-copi' selects no check",
                 "unknown check option 'devcopy-copy-in-loop.MainFileOnli'", p.path(".clang-tidy"))
    os.remove(p.path(".clang-tidy"))

    # --use-color: clang's colors; by default only when stdout is a terminal.
    rc, out, err = p.analyze("--use-color", "src/train.cpp")
    check("\033[0;1;35mwarning: " in out, f"--use-color: no color:\n{out!r}")
    rc, plain, err = p.analyze("src/train.cpp")
    check("\033[" not in plain, "colors on a pipe without --use-color")
    check(re.sub(r"\033\[[0-9;]*m", "", out) == plain, "colors changed the text")
    tty = stdout_on_terminal(args, p.dir, "src/train.cpp")
    check(b"\033[0;1;35mwarning: " in tty, f"no color on a terminal: {tty[:200]!r}")
    tty = stdout_on_terminal(args, p.dir, "--use-color=false", "src/train.cpp")
    check(b"\033[" not in tty, f"--use-color=false colored a terminal: {tty[:200]!r}")

    # --allow-no-checks: none enabled is no error; nothing is analyzed.
    expect_error(p.analyze("--checks=-*"), "no devcopy check is enabled")
    rc, out, err = p.analyze("--checks=-*", "--allow-no-checks")
    check(rc == 0 and out == "", f"--allow-no-checks: exit {rc}\n{out}{err}")

    # --enable-check-profile: a row per check, every unit analyzed again.
    p.analyze()  # fills the cache
    rc, out, err = p.analyze("--enable-check-profile")
    check(rc == 1 and "unchanged, not analyzed again" not in err, f"profile used the cache:\n{err}")
    rows = re.findall(r"^ +(\d+\.\d+) +(\d+\.\d+) +(\d+\.\d+)  (devcopy-[a-z-]+)$", err, re.M)
    check({r[3] for r in rows} >= {"devcopy-discarded-copy", "devcopy-copy-in-loop"},
          f"--enable-check-profile table:\n{err}")
    check("check profile of 2 translation unit(s)" in err, err)

    # A unit that does not compile: its own findings beside its error, exit 2;
    # --fix leaves it alone unless --fix-errors.
    p.write("src/broken.cpp", p.read("src/train.cpp") + "int broken() { return undeclared; }\n")
    p.set_sources(["broken.cpp"])
    before = p.read("src/broken.cpp")
    rc, out, err = p.analyze("--no-cache")
    expect_error((rc, out, err), "src/broken.cpp:", "undeclared")
    found = {(m[1], int(m[2]), m[6]) for m in diagnostics(out) if m[4] == "warning"}
    want = {(f.replace("train", "broken"), line, rule) for f, line, rule in EXPECTED}
    check(found == want, f"the broken unit's findings: {sorted(found)}")
    rc, out, err = p.analyze("--fix")
    check(rc == 2 and p.read("src/broken.cpp") == before and "--fix-errors" in err,
          f"--fix despite a compile error: {rc}\n{err}")
    rc, out, err = p.analyze("--fix-errors")
    check(rc == 2 and "prev = prev.to(" in p.read("src/broken.cpp"),
          f"--fix-errors applied nothing: {rc}\n{err}")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    run_cases(CASES, TEMP_DIRS, options=("--validator",))


if __name__ == "__main__":
    main()
