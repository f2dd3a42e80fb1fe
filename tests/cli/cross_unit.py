#!/usr/bin/env python3
"""devcopy-repeated-module-move across translation units, end to end.

Copies the multi-file project in tests/cli/multi/ (constructors in src/*.cpp,
the model moved again in src/main.cpp) to a fresh directory with a compile
database (mock <torch/torch.h>), then:

  1. `devcopy analyze`: the cross-file findings with their notes, the facts
     file beside compile_commands.json, a run on one PATH keeping the others'
     facts, --no-facts giving single-file results;
  2. devcopy-tidy, the clang-tidy plugin and devcopy-clangd (over LSP, as an
     editor runs it) on src/main.cpp alone, reading that facts file: the same
     findings and notes;
  3. a missing facts file (single-file behaviour, silent) and a malformed one
     (one warning line, no crash).

Usage: cross_unit.py --devcopy BIN --tidy BIN --clang-tidy BIN --plugin SO
                     [--clangd BIN] --mock DIR
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from clitest import Failure, check, run_tool

HERE = os.path.dirname(os.path.abspath(__file__))
RULE = "devcopy-repeated-module-move"
SOURCES = ["block.cpp", "encoder.cpp", "net.cpp", "host.cpp", "main.cpp"]

# (line in src/main.cpp, module named, note file, note line, constructor)
EXPECTED = [
    (7, "block.conv1", "src/block.cpp", 5, "BlockImpl"),
    (10, "encoder", "src/encoder.cpp", 5, "EncoderImpl"),
    (12, "net.head", "src/net.cpp", 6, "NetImpl"),
    (14, "pipeline.stage.conv1", "src/block.cpp", 5, "BlockImpl"),
    (16, "decoder", "src/encoder.cpp", 10, "DecoderImpl"),
    (18, "built", "src/net.cpp", 16, None),  # a factory: moves what it returns
]
DIAG = re.compile(r"^(?P<file>[^\s:]+):(?P<line>\d+):(?P<col>\d+): (?P<kind>warning|note): (?P<msg>.*)$")


def expected_set(root):
    """{(main.cpp line, note file, note line)} as absolute paths."""
    return {(ln, os.path.join(root, nf), nl) for ln, _, nf, nl, _ in EXPECTED}


def tidy_findings(out, root):
    """(line in main.cpp, note file, note line) for each repeated-module-move warning."""
    found, last = set(), None
    for line in out.splitlines():
        m = DIAG.match(line)
        if not m:
            continue
        path = os.path.join(root, m["file"])  # unchanged when absolute
        if m["kind"] == "warning" and RULE in m["msg"]:
            check(path == os.path.join(root, "src/main.cpp"), f"warning outside main.cpp: {line}")
            last = int(m["line"])
        elif m["kind"] == "note" and last is not None:
            found.add((last, path, int(m["line"])))
            last = None
    return found


def case_analyze(args, root):
    p = run_tool([args.devcopy, "analyze", "--no-progress", "--format", "json"], root)
    check(p.returncode == 1, f"analyze exited {p.returncode}:\n{p.stderr}")
    findings = [f for f in json.loads(p.stdout)["findings"] if f["rule"] == RULE]
    got = {(f["line"], os.path.join(root, f["notes"][0]["file"]), f["notes"][0]["line"])
           for f in findings if f["file"] == "src/main.cpp" and f["notes"]}
    check(got == {(ln, os.path.join(root, nf), nl) for ln, _, nf, nl, _ in EXPECTED},
          f"analyze found {sorted(got)}")
    check(len(findings) == len(EXPECTED), f"unexpected findings: {findings}")
    for f in findings:
        ln, name, nf, nl, ctor = next(e for e in EXPECTED if e[0] == f["line"])
        where = f"({os.path.basename(nf)}:{nl})"
        first = f"constructor of '{ctor}' {where}" if ctor else f"'build_plain' {where}, which returns it"
        check(f"module '{name}' is moved to 'device' again" in f["message"] and
              first in f["message"] and "double VRAM" in f["message"], f"message: {f['message']}")
        note = (f"the constructor of '{ctor}'" if ctor else "'build_plain', which returns it")
        check(f["notes"][0]["message"] == f"'{name}' is first moved here, in {note}",
              f"note: {f['notes'][0]}")
    facts = json.load(open(os.path.join(root, "devcopy-facts.json")))
    check(facts["format"] == "devcopy-facts" and facts["version"] == 1, "facts header")
    units = {os.path.relpath(u["file"], root) for u in facts["units"]}
    check(units == {f"src/{s}" for s in SOURCES}, f"facts units: {units}")

    # Warm: every unit's facts come from the results cache; the join and the
    # facts file are the same, byte for byte.
    with open(os.path.join(root, "devcopy-facts.json")) as f:
        cold_facts = f.read()
    warm = run_tool([args.devcopy, "analyze", "--no-progress", "--format", "json"], root)
    check(f"{len(SOURCES)} of {len(SOURCES)} unit(s) unchanged" in warm.stderr,
          f"a second run must reuse every unit:\n{warm.stderr}")
    check(warm.stdout == p.stdout, "cached cross-unit findings differ from the cold run's")
    with open(os.path.join(root, "devcopy-facts.json")) as f:
        check(f.read() == cold_facts, "the facts file written from the cache differs")

    # One PATH: the other units' facts come from the last run's file.
    p = run_tool([args.devcopy, "analyze", "--no-progress", "--format", "json", "src/main.cpp"], root)
    got = {f["line"] for f in json.loads(p.stdout)["findings"] if f["rule"] == RULE}
    check(got == {e[0] for e in EXPECTED}, f"analyze src/main.cpp found {sorted(got)}")
    facts = json.load(open(os.path.join(root, "devcopy-facts.json")))
    check(len(facts["units"]) == len(SOURCES), "a PATH run dropped the other units' facts")

    # A PATH whose unit holds no repeated move: main.cpp's findings (joined
    # from the last run's facts) are nobody's question here.
    p = run_tool([args.devcopy, "analyze", "--no-progress", "--format", "json", "src/block.cpp"], root)
    found = json.loads(p.stdout)["findings"]
    check(p.returncode == 0 and not found, f"analyze src/block.cpp reported other files: {found}")

    # --export-fixes: the cross-file findings too with absolute paths and
    # their unit's build directory (here not the sources' folder).
    build = os.path.join(root, "out")
    os.makedirs(build, exist_ok=True)
    with open(os.path.join(root, "compile_commands.json")) as f:
        commands = json.load(f)
    for c in commands:
        c["file"] = os.path.join(root, c["file"])
        c["arguments"] = [os.path.join(root, a) if a.startswith("src/") else
                          "-I" + os.path.join(root, a[2:]) if a == "-Iinclude" else a
                          for a in c["arguments"]]
        c["directory"] = build
    with open(os.path.join(build, "compile_commands.json"), "w") as f:
        json.dump(commands, f)
    p = run_tool([args.devcopy, "analyze", "--no-progress", "-p", "out", "--export-fixes=fixes.yaml"], root)
    check(p.returncode == 1, f"analyze -p out: {p.returncode}\n{p.stderr}")
    with open(os.path.join(root, "fixes.yaml")) as f:
        text = f.read()
    cross = [d for d in text.split("\n  - DiagnosticName:")[1:] if d.lstrip().startswith(RULE)]
    check(len(cross) == len(EXPECTED), f"cross-file findings exported: {len(cross)}\n{text}")
    for d in cross:
        paths = re.findall(r"FilePath: +'?([^'\n]+)", d)
        check(paths and all(os.path.isabs(x) for x in paths), f"relative FilePath:\n{d}")
        check(re.search(r"BuildDirectory: +'?" + re.escape(build) + r"'?$", d, re.M),
              f"BuildDirectory is not the unit's:\n{d}")

    # -p naming the database file itself: the facts go beside it.
    os.remove(os.path.join(root, "devcopy-facts.json"))
    p = run_tool([args.devcopy, "analyze", "--no-progress", "-p", "compile_commands.json"], root)
    check(p.returncode == 1 and os.path.exists(os.path.join(root, "devcopy-facts.json")),
          f"-p compile_commands.json:\n{p.stderr}")

    # --no-facts: each unit alone, as before the facts existed.
    p = run_tool([args.devcopy, "analyze", "--no-progress", "--no-facts", "--format", "json",
             "--facts", "unused.json"], root)
    check(p.returncode == 0 and not json.loads(p.stdout)["findings"],
          f"--no-facts must find nothing here:\n{p.stdout}{p.stderr}")
    check(not os.path.exists(os.path.join(root, "unused.json")), "--no-facts wrote a facts file")


def front_ends(args):
    main = ["src/main.cpp"]
    yield "devcopy-tidy", [args.tidy, f"--checks=-*,{RULE}", "-p", ".", "--quiet", *main]
    yield "plugin", [args.clang_tidy, f"--load={args.plugin}", f"--checks=-*,{RULE}", "-p", ".",
                     "--quiet", *main]


def lsp_findings(args, root, want):
    """devcopy-clangd as an editor runs it (LSP over stdio): open src/main.cpp,
    wait for its diagnostics, compare them and their related locations."""
    with open(os.path.join(root, ".clangd"), "w") as f:
        f.write(f"Diagnostics:\n  ClangTidy:\n    Add: [{RULE}]\n    FastCheckFilter: None\n")
    proc = subprocess.Popen([args.clangd, f"--compile-commands-dir={root}", "--log=error"], cwd=root,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(msg):
        body = json.dumps(msg).encode()
        proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        proc.stdin.flush()

    def receive():
        length = 0
        while (line := proc.stdout.readline().strip()):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(proc.stdout.read(length))

    main = os.path.join(root, "src/main.cpp")
    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": f"file://{root}", "capabilities": {"textDocument": {
                "publishDiagnostics": {"relatedInformation": True}}}}})
        send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": f"file://{main}", "languageId": "cpp", "version": 1, "text": open(main).read()}}})
        while True:
            msg = receive()
            if (msg.get("method") == "textDocument/publishDiagnostics" and
                    msg["params"]["uri"] == f"file://{main}"):
                break
    finally:
        proc.kill()
        proc.wait()
    got = set()
    for d in msg["params"]["diagnostics"]:
        if d.get("code") != RULE:
            continue
        for r in d.get("relatedInformation", []):
            got.add((d["range"]["start"]["line"] + 1, r["location"]["uri"].replace("file://", ""),
                     r["location"]["range"]["start"]["line"] + 1))
    check(got == want, f"devcopy-clangd found {sorted(got)}, want {sorted(want)}:\n{msg}")


def case_tidy(args, root):
    want = expected_set(root)
    for name, cmd in front_ends(args):
        p = run_tool(cmd, root)
        got = tidy_findings(p.stdout, root)
        check(got == want, f"{name} with the facts file found {sorted(got)}, want {sorted(want)}:\n"
                           f"{p.stdout}{p.stderr}")
    if args.clangd:
        lsp_findings(args, root, want)

    # An explicit FactsFile option, relative to the compile command's folder.
    shutil.move(os.path.join(root, "devcopy-facts.json"), os.path.join(root, "other.json"))
    p = run_tool([args.tidy, f"--checks=-*,{RULE}", "-p", ".", "--quiet",
             "--config={CheckOptions: {" + RULE + ".FactsFile: other.json}}", "src/main.cpp"], root)
    check(tidy_findings(p.stdout, root) == want, f"FactsFile option ignored:\n{p.stdout}{p.stderr}")

    # No facts file: this unit alone, silently.
    for name, cmd in front_ends(args):
        p = run_tool(cmd, root)
        check(p.returncode == 0 and RULE not in p.stdout and "facts" not in p.stderr + p.stdout,
              f"{name} without a facts file:\n{p.stdout}{p.stderr}")

    # A malformed one: one warning naming the file, then this unit alone.
    with open(os.path.join(root, "devcopy-facts.json"), "w") as f:
        f.write('{"format": "devcopy-facts", "version": 1, "units": [{"file": 3}]}')
    for name, cmd in front_ends(args):
        p = run_tool(cmd, root)
        out = p.stdout + p.stderr
        bad = [l for l in out.splitlines() if "cannot read facts file" in l]
        check(len(bad) == 1 and "devcopy-facts.json" in bad[0] and "devcopy analyze" in bad[0],
              f"{name}: malformed facts file must give one warning line:\n{out}")
        check(tidy_findings(p.stdout, root) == set(), f"{name} used a malformed facts file")
    # Hostile: nested 50,000 levels (the JSON parser recurses per level).
    with open(os.path.join(root, "devcopy-facts.json"), "w") as f:
        f.write("[" * 50000 + "]" * 50000)
    p = run_tool(next(front_ends(args))[1], root)
    check(p.returncode in (0, 1) and "nested more than 256 levels deep" in p.stdout + p.stderr,
          f"a deeply nested facts file must give one warning, not a crash:\n{p.stdout}{p.stderr}")
    with open(os.path.join(root, "devcopy-facts.json"), "w") as f:
        f.write('{"format": "devcopy-facts", "version": 99, "units": []}')
    p = run_tool(next(front_ends(args))[1], root)
    check("facts format version 99, this devcopy reads version 1" in p.stdout + p.stderr,
          f"a future version must be named:\n{p.stdout}{p.stderr}")


def main():
    ap = argparse.ArgumentParser()
    for opt in ("--devcopy", "--tidy", "--clang-tidy", "--plugin", "--mock"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--clangd")
    args = ap.parse_args()
    for name in ("devcopy", "tidy", "plugin", "mock", "clangd"):
        if getattr(args, name) and os.path.exists(getattr(args, name)):
            setattr(args, name, os.path.abspath(getattr(args, name)))
    root = os.path.realpath(tempfile.mkdtemp(prefix="devcopy_cross_"))
    shutil.copytree(os.path.join(HERE, "multi"), root, dirs_exist_ok=True)
    commands = [{"directory": root, "file": f"src/{s}",
                 "arguments": ["clang++", "-std=c++17", "-isystem", args.mock, "-Iinclude", "-c",
                               f"src/{s}"]} for s in SOURCES]
    with open(os.path.join(root, "compile_commands.json"), "w") as f:
        json.dump(commands, f, indent=1)
    try:
        case_analyze(args, root)
        case_tidy(args, root)
    except Failure as e:
        print(f"FAIL: {e}\n(project kept in {root})")
        return 1
    shutil.rmtree(root)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
