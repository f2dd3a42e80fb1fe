#!/usr/bin/env python3
"""Faults around the devcopy command: files edited while it runs, signals
during --fix, owners and hard links, response files, corrupt caches,
unbounded inputs, and the one-line errors for each.

Usage: cli_faults.py CASE --devcopy BIN --mock DIR
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

from cli_e2e import TEMP_DIRS, Project, expect_error
from clitest import check, run_cases

FACTORY = "torch::ones({4}, torch::TensorOptions().device(dev))"


def leftovers(directory):
    return [f for f in os.listdir(directory) if ".devcopy-" in f]


def blocking_unit(p, args):
    """A unit that includes a named pipe: its analysis waits, using no CPU,
    until the test writes the header. Returns the pipe's path."""
    os.mkfifo(p.path("src/wait.h"))
    p.write("src/wait.cpp", '#include "wait.h"\n')
    commands = json.loads(p.read("compile_commands.json"))
    commands.append({"directory": p.dir, "file": "src/wait.cpp",
                     "arguments": ["clang++", "-std=c++17", "-c", "src/wait.cpp"]})
    p.write("compile_commands.json", json.dumps(commands))
    return p.path("src/wait.h")


def case_fix_changed(args):
    """A file edited after its unit was analyzed is not fixed: exit 2, one
    line naming it, the findings kept, the user's edit intact."""
    p = Project(args)
    pipe = blocking_unit(p, args)
    proc = subprocess.Popen([args.devcopy, "analyze", "--no-progress", "--jobs", "1", "--fix",
                             "--no-cache", "--format", "json"], cwd=p.dir,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with open(pipe, "w") as header:  # opens once train.cpp (costlier: LibTorch) is done
        edited = "#include <vector>\n" + p.read("src/train.cpp")
        p.write("src/train.cpp", edited)
        header.write("int waited;\n")
    out, err = proc.communicate(timeout=300)
    expect_error((proc.returncode, out, err), "src/train.cpp", "changed since devcopy analyzed it")
    check(p.read("src/train.cpp") == edited, f"the edited file was changed:\n{p.read('src/train.cpp')}")
    check(len(json.loads(out)["findings"]) == 3, f"findings dropped: {out}")
    check("applied fixes" not in err, err)
    # Run again: the new text is analyzed and fixed.
    p.set_sources(["train.cpp"])
    rc, _, err = p.analyze("--fix")
    check(rc == 1 and FACTORY in p.read("src/train.cpp"), f"second run: {rc} {err}")


def many_files(p, args, n):
    sources = []
    for i in range(n):
        p.write(f"src/f{i}.cpp", "#include <torch/torch.h>\n"
                f"void f{i}(torch::Tensor t) {{\n  t.to(torch::kCPU, true);\n}}\n")
        sources.append(f"f{i}.cpp")
    p.set_sources(sources)
    return [f"src/{s}" for s in sources]


def case_fix_signal(args):
    """SIGTERM while --fix commits many files: all of them fixed or none, and
    no temporary file left."""
    p = Project(args)
    files = many_files(p, args, 60)
    original = p.read(files[0])
    outcomes = []
    for trigger in ("first temporary", "first rename"):
        for f in files:
            p.write(f, original.replace("f0", f"f{f[5:-4]}"))
        proc = subprocess.Popen([args.devcopy, "analyze", "--no-progress", "--fix", "--quiet"],
                                cwd=p.dir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        src = p.path("src")
        most = 0  # temporaries seen at once: all written, then renamed
        while proc.poll() is None:
            temps = len(leftovers(src))
            most = max(most, temps)
            if trigger == "first temporary" and temps:
                break
            if trigger == "first rename" and most == len(files) and temps < most:
                break
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
        fixed = sum("t = t.to(" in p.read(f) for f in files)
        check(fixed in (0, len(files)), f"SIGTERM at the {trigger}: {fixed} of {len(files)} fixed")
        check(not leftovers(src), f"temporaries left: {leftovers(src)[:3]}")
        outcomes.append((trigger, fixed, proc.returncode))
    print("outcomes:", outcomes)


def case_fix_owner(args):
    """--fix keeps the file's owner, group, mode and hard links."""
    p = Project(args)
    train = p.path("src/train.cpp")
    os.chmod(train, 0o640)
    if os.geteuid() == 0:
        os.chown(train, 65534, 65534)
    p.write("clean_copy.cpp", "")
    shutil.copy(p.path("src/clean.cpp"), p.path("clean_copy.cpp"))
    os.link(p.path("src/clean.cpp"), p.path("clean_link.cpp"))
    p.write("src/clean.cpp", p.read("src/clean.cpp") + "void g(torch::Tensor t) { t.cpu(); }\n")
    inode = os.stat(p.path("src/clean.cpp")).st_ino
    rc, out, err = p.analyze("--fix")
    check(rc == 1 and "applied fixes for 3 finding(s)" in err, f"{rc}: {err}")
    st = os.stat(train)
    check(st.st_mode & 0o7777 == 0o640, f"mode {oct(st.st_mode)}")
    if os.geteuid() == 0:
        check((st.st_uid, st.st_gid) == (65534, 65534), f"owner {st.st_uid}:{st.st_gid}")
    check(FACTORY in p.read("src/train.cpp"), "train.cpp not fixed")
    check("t = t.cpu();" in p.read("clean_link.cpp"), "the other hard link kept the old text")
    check(os.stat(p.path("src/clean.cpp")).st_ino == inode, "a linked file got a new inode")
    check(not leftovers(p.path("src")), "temporaries left")


def case_fix_leftovers(args):
    """Temporaries a killed run left are removed by the next run that writes
    there; one a live run holds locked stays."""
    p = Project(args)
    dead = p.path("src/train.cpp.devcopy-0a1b2c.tmp")
    live = p.path("src/clean.cpp.devcopy-3d4e5f.tmp")
    other = p.path("src/notes.devcopy-backup.tmp")  # not devcopy's pattern
    for f in (dead, live, other):
        p.write(os.path.relpath(f, p.dir), "partial")
    # A live run holds its temporary locked (a lock per process: a child).
    child = subprocess.Popen([sys.executable, "-c",
                              "import fcntl,sys,time; f=open(sys.argv[1],'r+');"
                              "fcntl.lockf(f, fcntl.LOCK_EX); print('locked', flush=True);"
                              "time.sleep(60)", live], stdout=subprocess.PIPE, text=True)
    check(child.stdout.readline().strip() == "locked", "the child did not lock")
    try:
        rc, _, err = p.analyze("--fix")
        check(rc == 1, f"{rc}: {err}")
        check(not os.path.exists(dead), "a dead run's temporary was left")
        check(os.path.exists(live), "a live run's temporary was removed")
        check(os.path.exists(other), "a file not of devcopy's pattern was removed")
    finally:
        child.kill()
        child.wait()


def case_fix_directive(args):
    """A fix whose range holds a preprocessor line or a comment is never
    applied: the file keeps every line, the finding stays."""
    p = Project(args)
    p.write("src/variant.cpp", "#include <torch/torch.h>\n"
            "torch::Tensor a(torch::Device dev, torch::Device dev2) {\n"
            "  return torch::ones({4})\n#ifdef VARIANT\n      .to(dev);\n#else\n"
            "      .to(dev2);\n#endif\n}\n"
            "torch::Tensor b(torch::Device dev) {\n"
            "  return torch::ones({4}) // on the host first\n      .to(dev);\n}\n")
    p.set_sources(["variant.cpp"])
    before = p.read("src/variant.cpp")
    rc, out, err = p.analyze("--fix", "--format", "json")
    check(rc == 1, f"the findings stay: exit 1, got {rc}: {err}")
    check(p.read("src/variant.cpp") == before, f"damaged:\n{p.read('src/variant.cpp')}")
    rules = [f["rule"] for f in json.loads(out)["findings"]]
    check(rules.count("devcopy-create-then-move") == 2, f"findings: {out}")


def case_response_file(args):
    """`clang++ @flags.rsp` (CMake's Ninja generator): expanded from the
    entry's directory, so the flags it holds reach the analysis."""
    p = Project(args)
    p.write("build/flags.rsp", f'-std=c++17 "-I{args.mock}"\n')
    commands = [{"directory": p.path("build"), "file": f"../src/{s}",
                 "arguments": ["clang++", "@flags.rsp", "-c", f"../src/{s}"]}
                for s in ("train.cpp", "clean.cpp")]
    p.write("build/compile_commands.json", json.dumps(commands))
    rc, out, err = p.analyze("-p", "build", "--format", "json")
    check(rc == 1, f"exit {rc}:\n{err}")
    check(len(json.loads(out)["findings"]) == 3, f"findings through the response file: {out}")
    for name, setup, needle in [("missing", None, "does not exist"),
                                ("device", "/dev/zero", "not a regular file")]:
        if os.path.lexists(p.path("build/flags.rsp")):
            os.remove(p.path("build/flags.rsp"))
        if setup:
            os.symlink(setup, p.path("build/flags.rsp"))
        expect_error(p.analyze("-p", "build"), "flags.rsp", needle)


def case_bounded_inputs(args):
    """Devices and endless inputs: a one-line error at once, never a read
    without end."""
    p = Project(args)
    p.set_sources(["train.cpp"])
    for argv, needle in [(["--baseline", "/dev/zero"], "NUL"),
                         (["--baseline", "/dev/urandom"], "/dev/urandom"),
                         (["--config-file", "/dev/zero"], "NUL")]:
        start = time.monotonic()
        expect_error(p.analyze(*argv), argv[1], needle)
        check(time.monotonic() - start < 60, f"{argv} took too long")
    rc, out, err = p.run("merge", "/dev/zero")
    expect_error((rc, out, err), "/dev/zero", "NUL")
    # The facts file of an earlier run, read on a run over some PATHs (the
    # check reads a FactsFile the same way: devcopy::readText).
    p.write("build/compile_commands.json", p.read("compile_commands.json"))
    os.symlink("/dev/zero", p.path("build/devcopy-facts.json"))
    rc, out, err = p.analyze("-p", "build", "src/train.cpp")
    check(rc == 1 and "NUL" in err and "devcopy-facts.json" in err, f"exit {rc}:\n{err}")
    os.remove(p.path("build/devcopy-facts.json"))
    # A facts file whose version is no integer: the value is named.
    p.write("build/devcopy-facts.json", '{"format": "devcopy-facts", "version": 1.5, "units": []}')
    rc, out, err = p.analyze("-p", "build", "src/train.cpp")
    check("version 1.5" in err, f"the version is not named:\n{err}")


def case_messages(args):
    """Each bad setting names what is wrong, and its limit."""
    p = Project(args)
    p.set_sources(["train.cpp"])
    expect_error(p.analyze("--shard", "7/1000000"), "N <= 10000")
    expect_error(p.analyze("--jobs", "100000"), "1 to 4096")
    expect_error(p.analyze("--root", "/nonexistent"), "/nonexistent", "not a directory")
    base = json.loads(p.read("compile_commands.json"))[0]
    p.write("plain", "")
    for name, change, needles in [
            ("dir_is_file", {"directory": p.path("plain")}, ("plain", "is not a directory")),
            ("file_is_dir", {"file": p.path("src")}, ("src", "is a directory")),
            ("extra_key", {"extra": 3}, ("entry 1", '"extra"', "a number"))]:
        entry = dict(base, **change)
        if name == "dir_is_file":
            entry["file"] = p.path("src/train.cpp")
        p.write(f"db_{name}/compile_commands.json", json.dumps([entry]))
        expect_error(p.analyze("-p", f"db_{name}"), *needles)
    # A warning made an error, an open NOLINTBEGIN: named, not "does not compile".
    p.write("src/werror.cpp", "void f() { int unused = 0; }\n")
    p.write("src/nolint.cpp", "#include <torch/torch.h>\n// NOLINTBEGIN(devcopy-discarded-copy)\n"
            "void g(torch::Tensor t) { t.cpu(); }\n")
    p.write("compile_commands.json", json.dumps([
        {"directory": p.dir, "file": "src/werror.cpp",
         "arguments": ["clang++", "-Wall", "-Werror", "-c", "src/werror.cpp"]},
        {"directory": p.dir, "file": "src/nolint.cpp",
         "arguments": ["clang++", "-std=c++17", f"-I{args.mock}", "-c", "src/nolint.cpp"]}]))
    rc, out, err = p.analyze()
    lines = [line for line in err.splitlines() if line.startswith("devcopy: error:")]
    check(rc == 2 and len(lines) == 2, f"exit {rc}:\n{err}")
    check(any("unused variable" in x and "-Werror" in x for x in lines), err)
    check(any("NOLINTBEGIN" in x and "nolint.cpp" in x for x in lines), err)
    # The open NOLINTBEGIN alone: its line, the problem and the remedy, and
    # no claim that the file does not compile (it does).
    nolint = [x for x in lines if "nolint.cpp" in x]
    check(len(nolint) == 1 and "src/nolint.cpp:2:" in nolint[0]
          and "unmatched 'NOLINTBEGIN'" in nolint[0] and "NOLINTEND" in nolint[0]
          and "does not compile" not in nolint[0], err)
    # Its progress line counts a NOLINT error, not a compile error.
    _, _, shown = p.run("analyze", "--no-cache")
    progress = [x for x in shown.splitlines() if x.startswith("[") and "nolint.cpp" in x]
    check(len(progress) == 1 and "1 NOLINT error" in progress[0]
          and "compile error" not in progress[0], shown)
    # The -Werror unit does not compile with its command: that stays said.
    check(any("werror.cpp" in x and "does not compile" in x for x in lines), err)
    check(not any("could not run" in x for x in lines), err)


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


if __name__ == "__main__":
    run_cases(CASES, TEMP_DIRS)
