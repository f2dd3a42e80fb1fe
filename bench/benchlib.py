"""What the benchmark scripts share: the translation units they run on and
the timing of one command, so that every ratio is measured the same way."""
import json
import os
import resource
import subprocess
import time

# How the analyzer's tests compile the real-header fixtures.
FIXTURE_ARGS = ["clang++", "-std=c++17", "-D_GLIBCXX_USE_CXX11_ABI=1",
                "-isystem", "/usr/include/torch/csrc/api/include", "-fsyntax-only"]


def units(build_db, fixtures=()):
    """Compile-database entries: the examples with the build's own commands
    (from `build_db`), then each fixture as the analyzer's tests compile it.
    Every one includes the real <torch/torch.h>. Run from the repository root."""
    examples = os.path.abspath("examples") + "/"
    with open(build_db) as f:
        entries = [e for e in json.load(f)
                   if os.path.join(e["directory"], e["file"]).startswith(examples)]
    entries += [{"directory": os.getcwd(), "file": os.path.abspath(s),
                 "arguments": FIXTURE_ARGS + [os.path.abspath(s)]} for s in fixtures]
    return entries


def write_db(directory, entries):
    """Writes `entries` as directory/compile_commands.json."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "compile_commands.json"), "w") as f:
        json.dump(entries, f)


def timed(cmd):
    """Runs `cmd`; returns its wall seconds, the CPU seconds (user + sys) of
    the processes it ran, and the completed process (output captured)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, p
