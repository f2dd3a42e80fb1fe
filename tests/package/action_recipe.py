#!/usr/bin/env python3
"""Runs the reusable action (action.yml) as a user's runner would, so it cannot rot.

A scratch user project (CMake + LibTorch, its own compile database, a git
checkout) plays the workspace. The action's shell steps are taken from
action.yml and run with bash as GitHub runs them, with the inputs, the
github/steps/runner contexts and GITHUB_OUTPUT that GitHub provides; its
`uses` steps are played by the test (the cache step must keep the folder
devcopy writes, keyed on the compile database; artifacts move between the
shard and merge jobs; the SARIF upload must name a valid report).

Nothing is installed into the system: `curl` is a stand-in for the release
server (it serves BUILD/packages under the release's URL), and `apt-get` checks
that the package's Depends are installed here, then unpacks it into a scratch
root whose bin/ comes first on PATH for the later steps.

Runs: the default inputs (a finding: exit code 1, the job fails, the report
is uploaded, rule links point at the release's web pages); the same again
(the results cache is reused, the same report); with a committed baseline (the
job passes); then two shard jobs and a merge job, whose report must equal the
unsharded one byte for byte.

Usage: action_recipe.py --source DIR --packages DIR --validator BIN
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
from clitest import Failure, check  # noqa: E402
from cli_e2e import validate_sarif  # noqa: E402

REPOSITORY = "example/devcopy"
SERVER = "https://github.com"

CURL = r'''#!/usr/bin/env python3
"""Stand-in for curl against GitHub's release server: -o FILE URL."""
import os, shutil, sys
args = sys.argv[1:]
out = args[args.index("-o") + 1]
url = [a for a in args if a.startswith("https://")][-1]
prefix = "%(server)s/%(repo)s/releases/download/v"
name = url.rsplit("/", 1)[-1]
src = os.path.join("%(packages)s", name)
if not url.startswith(prefix) or not os.path.isfile(src) or "/v" + name.split("_")[1] + "/" not in url:
    sys.exit("curl: (22) The requested URL returned error: 404 " + url)
shutil.copy(src, out)
'''

APT_GET = r'''#!/usr/bin/env python3
"""Stand-in for apt-get: `install X.deb` checks the Depends against what is
installed here and unpacks the package into %(root)s."""
import subprocess, sys
args = sys.argv[1:]
if args[0] == "update":
    sys.exit(0)
assert args[0] == "install", args
for deb in (a for a in args[1:] if a.endswith(".deb")):
    assert deb.startswith("/"), "apt-get install needs a path to the .deb: " + deb
    depends = subprocess.run(["dpkg-deb", "-f", deb, "Depends"], capture_output=True, text=True,
                             check=True).stdout
    for dep in filter(None, (d.strip() for d in depends.split(","))):
        names = [alt.split()[0].split(":")[0] for alt in dep.split("|")]
        if not any("install ok installed" in subprocess.run(
                ["dpkg-query", "-W", "-f=${Status}", n], capture_output=True, text=True).stdout
                for n in names):
            sys.exit("E: unmet dependency " + dep + " of " + deb)
    subprocess.run(["dpkg-deb", "-x", deb, "%(root)s"], check=True)
'''


class Runner:
    """One job's machine: a workspace, RUNNER_TEMP, PATH and the artifacts store."""

    def __init__(self, action, workspace, scratch, packages, artifacts):
        self.action, self.workspace, self.artifacts = action, workspace, artifacts
        self.temp = tempfile.mkdtemp(dir=scratch, prefix="runner_")
        # Every machine installs to the same place (/usr on GitHub's runners).
        self.root = os.path.join(scratch, "root")
        shutil.rmtree(self.root, ignore_errors=True)
        shims = os.path.join(self.temp, "shims")
        os.makedirs(shims)
        for name, text in (("curl", CURL), ("apt-get", APT_GET), ("sudo", "#!/bin/sh\nexec \"$@\"\n")):
            with open(os.path.join(shims, name), "w") as f:
                f.write(text % {"server": SERVER, "repo": REPOSITORY, "packages": packages,
                                "root": self.root})
            os.chmod(os.path.join(shims, name), 0o755)
        self.path = os.pathsep.join([os.path.join(self.root, "usr/bin"), shims, os.environ["PATH"]])

    def expand(self, text, ctx):
        def value(m):
            key = m[1].strip()
            check(key in ctx, f"unexpected expression ${{{{ {key} }}}} in action.yml")
            return str(ctx[key])
        return re.sub(r"\$\{\{([^}]*)\}\}", value, str(text))

    def condition(self, text, ctx):
        """A step's `if:` with the contexts the action uses."""
        expr = text.strip().removeprefix("${{").removesuffix("}}")
        expr = re.sub(r"[a-z]+(\.[\w-]+)+", lambda m: repr(ctx.get(m[0], "")), expr)
        expr = expr.replace("!cancelled()", "True").replace("&&", " and ").replace("||", " or ")
        expr = re.sub(r"!(?!=)", " not ", expr)
        return eval(expr)  # the action's own conditions, over repr'd strings

    def run(self, **given):
        """All the action's steps with these inputs; returns (steps, uploads, failed)."""
        inputs = {k: str(v.get("default", "")) for k, v in self.action["inputs"].items()}
        check(set(given) <= set(inputs), f"unknown inputs {set(given) - set(inputs)}")
        inputs.update({k: str(v) for k, v in given.items()})
        ctx = {f"inputs.{k}": v for k, v in inputs.items()}
        ctx.update({"github.action_repository": REPOSITORY, "github.server_url": SERVER,
                    "runner.temp": self.temp})
        record = {"uploads": [], "stdout": {}, "stderr": {}, "failed": None}
        for step in self.action["runs"]["steps"]:
            if "if" in step and not self.condition(step["if"], ctx):
                continue
            if "uses" in step:
                self.play(step, ctx, inputs, record)
                continue
            out = os.path.join(self.temp, "github_output")
            open(out, "w").close()
            env = dict(os.environ, PATH=self.path, RUNNER_TEMP=self.temp, GITHUB_OUTPUT=out,
                       GITHUB_ACTION_PATH=args.source, GITHUB_WORKSPACE=self.workspace)
            env.update({k: self.expand(v, ctx) for k, v in step.get("env", {}).items()})
            check(step["shell"] == "bash", f"{step['name']}: shell {step['shell']}")
            # GitHub runs `shell: bash` as `bash --noprofile --norc -eo pipefail {0}`.
            p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                               cwd=self.workspace, env=env, capture_output=True, text=True, timeout=900)
            record["stdout"][step["name"]], record["stderr"][step["name"]] = p.stdout, p.stderr
            with open(out) as f:
                for line in f:
                    key, _, val = line.rstrip("\n").partition("=")
                    ctx[f"steps.{step.get('id')}.outputs.{key}"] = val
            if p.returncode != 0:
                record["failed"] = (step["name"], p.returncode, p.stdout + p.stderr)
                break
        record["ctx"] = ctx
        return record

    def play(self, step, ctx, inputs, record):
        uses, raw = step["uses"], step.get("with", {})
        # The cache key is GitHub's to compute (hashFiles, github.sha); the rest is expanded.
        given = {k: self.expand(v, ctx) for k, v in raw.items() if not k.endswith("key") and k != "restore-keys"}
        if uses.startswith("actions/cache@"):
            build = os.path.join(self.workspace, inputs["build-dir"])
            check(os.path.join(self.workspace, given["path"]) == os.path.join(build, ".devcopy-cache"),
                  f"the cache step keeps {given['path']}, not the folder devcopy writes")
            check("compile_commands.json" in step["with"]["key"] and "hashFiles" in step["with"]["key"],
                  "the cache is keyed on the compile database")
        elif uses.startswith("actions/upload-artifact@"):
            check(os.path.isfile(given["path"]), f"artifact {given['path']} was not written")
            os.makedirs(self.artifacts, exist_ok=True)
            shutil.copy(given["path"], os.path.join(self.artifacts, given["name"] + ".json"))
        elif uses.startswith("actions/download-artifact@"):
            check(given["pattern"] == "devcopy-shard-*", given)
            os.makedirs(given["path"], exist_ok=True)
            for name in os.listdir(self.artifacts):
                shutil.copy(os.path.join(self.artifacts, name), given["path"])
        elif uses.startswith("github/codeql-action/upload-sarif@"):
            check(os.path.isfile(given["sarif_file"]), f"upload-sarif: no {given['sarif_file']}")
            record["uploads"].append(given["sarif_file"])
        else:
            raise Failure(f"action.yml uses {uses}, which this test does not know")


def user_project(scratch):
    """A CMake + LibTorch project with its own compile database, in a git checkout."""
    ws = os.path.join(scratch, "workspace")
    files = {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.20)\nproject(trainer CXX)\n"
                          "find_package(Torch REQUIRED)\nadd_library(trainer src/offload.cpp src/util.cpp)\n"
                          "target_link_libraries(trainer PRIVATE ${TORCH_LIBRARIES})\n",
        "src/offload.cpp": "#include <torch/torch.h>\n\ntorch::Tensor offload(torch::Tensor prev) {\n"
                           "  prev.to(torch::kCPU, /*non_blocking=*/true);\n  return prev;\n}\n",
        "src/util.cpp": "int scale(int steps) { return 2 * steps; }\n",
    }
    for name, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(ws, name)), exist_ok=True)
        with open(os.path.join(ws, name), "w") as f:
            f.write(text)
    git = ["git", "-c", "user.name=u", "-c", "user.email=u@example.org", "-C", ws]
    subprocess.run(git[:-2] + ["init", "-q", ws], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "trainer"], check=True)
    p = subprocess.run(["cmake", "-S", ws, "-B", os.path.join(ws, "build"), "-G", "Ninja",
                        "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"], capture_output=True, text=True)
    check(p.returncode == 0, f"the user project does not configure:\n{p.stdout}{p.stderr}")
    return ws


def first_run(runner, version):
    r = runner.run()
    check(r["failed"] and r["failed"][0] == "Fail on new findings" and r["failed"][1] == 1,
          f"a new finding must fail the job in the last step: {r['failed']}")
    check("devcopy version " + version in r["stdout"]["Install devcopy"],
          f"the installed devcopy is not {version}: {r['stdout']['Install devcopy']}")
    ctx = r["ctx"]
    check(ctx["steps.analyze.outputs.exit-code"] == "1", f"exit code {ctx}")
    check(r["uploads"] == [ctx["steps.analyze.outputs.sarif"]], f"uploads {r['uploads']}")
    sarif = r["uploads"][0]
    validate_sarif(args, sarif)
    with open(sarif) as f:
        text = f.read()
    run = json.loads(text)["runs"][0]
    check(run["tool"]["driver"]["version"] == version, f"driver version {run['tool']['driver']}")
    results = [(x["ruleId"], x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"])
               for x in run["results"]]
    check(results == [("devcopy-discarded-copy", "src/offload.cpp")], f"results {results}")
    web = f"{SERVER}/{REPOSITORY}/blob/v{version}/rules/"
    for rule in run["tool"]["driver"]["rules"]:
        check(rule["helpUri"] == f"{web}{rule['id']}.md", f"helpUri {rule['helpUri']}")
        check(os.path.isfile(os.path.join(args.source, "rules", rule["id"] + ".md")),
              f"{rule['helpUri']}: no such page in rules/")
    print(f"action: 1 finding, job failed after uploading {os.path.basename(sarif)}, rules at {web}")
    return text


def main():
    scratch = tempfile.mkdtemp(prefix="devcopy_action_")
    try:
        with open(os.path.join(args.source, "action.yml")) as f:
            action = yaml.safe_load(f)
        with open(os.path.join(args.source, "VERSION")) as f:
            version = f.read().strip()
        check(action["runs"]["using"] == "composite", "a composite action")
        ws = user_project(scratch)
        artifacts = os.path.join(scratch, "artifacts")
        runner = Runner(action, ws, scratch, args.packages, artifacts)
        first = first_run(runner, version)

        again = runner.run()
        analyze = again["stderr"]["Analyze with devcopy"]
        check("unchanged" in analyze, f"the second run must reuse the results cache:\n{analyze}")
        with open(again["uploads"][0]) as f:
            check(f.read() == first, "the warm run uploaded another report")
        print("action: warm rerun reused the results cache, same report")

        p = subprocess.run(["devcopy", "analyze", "-p", "build", "--write-baseline",
                            ".devcopy-baseline.json"], cwd=ws, capture_output=True, text=True,
                           env=dict(os.environ, PATH=runner.path))
        check(p.returncode == 0, p.stderr)
        passed = runner.run()
        check(passed["failed"] is None, f"with the baseline the job passes: {passed['failed']}")
        with open(passed["uploads"][0]) as f:
            states = [x.get("baselineState") for x in json.load(f)["runs"][0]["results"]]
        check(states == ["unchanged"], f"baselineState {states}")
        with open(passed["uploads"][0]) as f:
            unsharded = f.read()
        print("action: baseline honoured, job passes")

        for k in (1, 2):  # matrix jobs, each on a machine of its own
            shard = Runner(action, ws, scratch, args.packages, artifacts).run(shard=f"{k}/2")
            check(shard["failed"] is None and not shard["uploads"], f"shard {k}: {shard['failed']}")
        check(sorted(os.listdir(artifacts)) == ["devcopy-shard-1.json", "devcopy-shard-2.json"],
              f"artifacts {os.listdir(artifacts)}")
        merged = Runner(action, ws, scratch, args.packages, artifacts).run(merge="true")
        check(merged["failed"] is None, f"merge job: {merged['failed']}")
        with open(merged["uploads"][0]) as f:
            check(f.read() == unsharded, "the merged report differs from the unsharded one")
        print("action: 2 shards merged into the unsharded report")

        wrong = Runner(action, ws, scratch, args.packages, artifacts).run(version="9.9.9")
        check(wrong["failed"] and wrong["failed"][0] == "Install devcopy" and "404" in wrong["failed"][2],
              f"an unknown release must fail the install step: {wrong['failed']}")
    except Failure as e:
        sys.exit(f"FAIL action_recipe: {e} (scratch kept: {scratch})")
    shutil.rmtree(scratch, ignore_errors=True)
    print("ok action_recipe")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    for opt in ("--source", "--packages", "--validator"):
        ap.add_argument(opt, required=True)
    args = ap.parse_args()
    args.source, args.packages = os.path.abspath(args.source), os.path.abspath(args.packages)
    main()
