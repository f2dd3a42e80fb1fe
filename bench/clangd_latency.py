#!/usr/bin/env python3
"""Time to diagnostics in the editor: stock clangd-19 against devcopy-clangd.

Both servers get the same arguments, the same compile database and the same
.clangd (the project's: devcopy-* enabled, FastCheckFilter: Loose). Stock
clangd has no devcopy checks and skips their names, so the ratio is what our
checks cost. Both servers run at once and take turns, each measured while the
other is idle (its CPU time stands still), so load on a shared machine hits
both alike; the medians are compared.

  python3 bench/clangd_latency.py [--build build] [--file examples/X.cpp]

Measured per run: open (didOpen to the first publishDiagnostics: preamble with
<torch/torch.h>, then the main file and its checks) and edit (didChange to the
diagnostics of that version: the preamble is reused, so this is the main-file
rebuild plus checks, the latency people feel while typing).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


class Server:
    """A language server on stdio, spoken to with LSP's JSON-RPC framing."""

    def __init__(self, cmd, cwd, env):
        self.proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0

    def send(self, method, params, request=False):
        msg = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            msg["id"] = self.next_id
        body = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return msg.get("id")

    def receive(self):
        length = None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the server exited (code %s)" % self.proc.poll())
            line = line.strip()
            if not line:
                break
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        return json.loads(self.proc.stdout.read(length))

    def wait_for(self, match):
        while True:
            msg = self.receive()
            if msg.get("method") == "window/workDoneProgress/create" and "id" in msg:
                self._reply(msg["id"])
            if match(msg):
                return msg

    def _reply(self, msg_id):
        body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": None}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def close(self):
        try:
            rid = self.send("shutdown", None, request=True)
            self.wait_for(lambda m: m.get("id") == rid and "method" not in m)
            self.send("exit", None)
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait()


def diagnostics_of(version, uri):
    return lambda m: (m.get("method") == "textDocument/publishDiagnostics"
                      and m["params"]["uri"] == uri and m["params"].get("version") == version)


def wait_idle(pid, quiet=0.5, limit=120.0):
    """Waits until the process has used no CPU for `quiet` seconds: clangd
    indexes the preamble and the AST after publishing, and that work must not
    land in the other server's measurement."""
    def cpu():
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime, in ticks
    deadline = time.monotonic() + limit
    last, since = cpu(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = cpu()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return


class Session:
    """One server with the file open; edit() appends a line and times the
    diagnostics of that version."""

    def __init__(self, binary, args, path, env):
        self.uri, self.text, self.version = path.as_uri(), path.read_text(), 1
        self.server = Server([binary] + args, cwd=REPO, env=env)
        rid = self.server.send("initialize", {"processId": os.getpid(), "rootUri": REPO.as_uri(),
                                              "capabilities": {}}, request=True)
        self.server.wait_for(lambda m: m.get("id") == rid)
        self.server.send("initialized", {})

    def open(self):
        """Returns (seconds, devcopy diagnostics)."""
        start = time.perf_counter()
        self.server.send("textDocument/didOpen", {"textDocument": {
            "uri": self.uri, "languageId": "cpp", "version": 1, "text": self.text}})
        msg = self.server.wait_for(diagnostics_of(1, self.uri))
        seconds = time.perf_counter() - start
        wait_idle(self.server.proc.pid)
        return seconds, sum(1 for d in msg["params"]["diagnostics"]
                            if str(d.get("code", "")).startswith("devcopy-"))

    def edit(self):
        # A keystroke's worth of change at the end of the file: the preamble
        # (the includes) stays valid, the main file is reparsed and checked.
        self.version += 1
        self.text += "// edit %d\n" % self.version
        start = time.perf_counter()
        self.server.send("textDocument/didChange", {
            "textDocument": {"uri": self.uri, "version": self.version},
            "contentChanges": [{"text": self.text}]})
        self.server.wait_for(diagnostics_of(self.version, self.uri))
        seconds = time.perf_counter() - start
        wait_idle(self.server.proc.pid)
        return seconds

    def close(self):
        self.server.close()


def torch_example(cdb):
    """The first example in the compile database that includes <torch/torch.h>."""
    for entry in json.loads((cdb / "compile_commands.json").read_text()):
        path = Path(entry["directory"], entry["file"]).resolve()
        if path.parent == REPO / "examples" and "<torch/torch.h>" in path.read_text():
            return path
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=str(REPO / "build"), help="build dir with compile_commands.json")
    ap.add_argument("--devcopy-clangd", help="default: BUILD/analyzer/devcopy-clangd")
    ap.add_argument("--stock", default="clangd-19")
    ap.add_argument("--file", help="default: the first example including <torch/torch.h>")
    ap.add_argument("--runs", type=int, default=3, help="server starts per binary")
    ap.add_argument("--edits", type=int, default=10, help="edits per server start")
    opts = ap.parse_args()

    build = Path(opts.build).resolve()
    ours = Path(opts.devcopy_clangd or build / "analyzer" / "devcopy-clangd")
    stock = shutil.which(opts.stock)
    if not (build / "compile_commands.json").is_file():
        sys.exit("clangd_latency: no compile_commands.json in %s (configure with -DDEVCOPY_EXAMPLES=ON)" % build)
    if not ours.is_file():
        sys.exit("clangd_latency: %s not built (configure with -DDEVCOPY_CLANGD=ON)" % ours)
    if not stock:
        sys.exit("clangd_latency: %s not found (apt-get install clangd-19)" % opts.stock)
    path = Path(opts.file).resolve() if opts.file else torch_example(build)
    if path is None or not path.is_file():
        sys.exit("clangd_latency: no example including <torch/torch.h> in %s; pass --file" % build)

    # Same flags for both. No background index: it would parse the whole
    # database meanwhile. An empty XDG_CONFIG_HOME keeps user config out.
    args = ["--compile-commands-dir=%s" % build, "--background-index=false", "--log=error"]
    env = dict(os.environ, XDG_CONFIG_HOME=tempfile.mkdtemp(prefix="clangd-bench-"))
    servers = {"clangd-19": stock, "devcopy-clangd": str(ours)}
    opens = {name: [] for name in servers}
    edits = {name: [] for name in servers}
    shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    print("file: %s (%d runs, %d edits each, servers alternating)" % (shown, opts.runs, opts.edits))
    for run in range(opts.runs):
        # Both servers live at once and take turns, each measured while the
        # other is idle; the one going first alternates between runs.
        order = list(servers) if run % 2 == 0 else list(reversed(servers))
        sessions = {name: Session(servers[name], args, path, env) for name in order}
        try:
            for name in order:
                seconds, found = sessions[name].open()
                opens[name].append(seconds)
                print("  run %d %-15s open %6.2f s  devcopy diagnostics %d" % (run + 1, name, seconds, found))
                if name == "devcopy-clangd" and found == 0:
                    sys.exit("clangd_latency: devcopy-clangd published no devcopy diagnostic on %s: "
                             "are the checks enabled in .clangd?" % shown)
                if name == "clangd-19" and found:
                    sys.exit("clangd_latency: stock clangd-19 published devcopy diagnostics?")
            for _ in range(opts.edits):
                for name in order:
                    edits[name].append(sessions[name].edit())
            for name in order:
                print("  run %d %-15s edits %s" % (run + 1, name, " ".join(
                    "%.3f" % t for t in edits[name][-opts.edits:])))
        finally:
            for session in sessions.values():
                session.close()

    med = {k: (statistics.median(opens[k]), statistics.median(edits[k])) for k in servers}
    print("%-15s %12s %12s" % ("median", "open (s)", "edit (s)"))
    for name in servers:
        print("%-15s %12.3f %12.3f" % (name, *med[name]))
    r_open = med["devcopy-clangd"][0] / med["clangd-19"][0]
    r_edit = med["devcopy-clangd"][1] / med["clangd-19"][1]
    print("ratio devcopy-clangd / clangd-19: open %.3f, edit %.3f (target <= 1.1)" % (r_open, r_edit))


if __name__ == "__main__":
    main()
