#!/usr/bin/env python3
"""Runs the README's CI recipe as written, so it cannot rot.

- .github/workflows/devcopy.yml: the `devcopy` step's script runs with bash
  (as GitHub runs it) from the source root against examples/, with
  DEVCOPY_BUILD pointing at this build and RUNNER_TEMP at a temporary
  directory; the file the upload step names must exist and pass Microsoft's
  SARIF validator. The build step must build the binary the step runs.
  The step runs twice: the second run must reuse the results cache that
  the workflow's actions/cache step keeps, and upload the same report.
- .github/workflows/devcopy-sharded.yml: each matrix job's analysis step,
  its shard file handed over as the artifact steps say, then the merge job's
  step: the merged SARIF must equal the unsharded workflow's, byte for byte.
- .pre-commit-hooks.yaml: the hook's entry and args run as pre-commit would,
  on the staged files its `files` pattern selects, in a mock-header project.

Usage: ci_recipe.py --source DIR --build DIR --devcopy BIN --mock DIR --validator BIN
"""
import argparse
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import yaml

from cli_e2e import TEMP_DIRS, check, validate_sarif
from clitest import Failure

HERE = os.path.dirname(os.path.abspath(__file__))
# What GitHub sets in every job's environment.
GITHUB = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "example/devcopy",
          "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567"}


def expand(text, **context):
    """GitHub's ${{ a.b }} expressions in `text`, from `context` ("a.b")."""
    def value(m):
        key = m[1].strip()
        check(key in context, f"unexpected expression ${{{{ {key} }}}} in the recipe")
        return str(context[key])
    return re.sub(r"\$\{\{([^}]*)\}\}", value, text)


def run_step(step, args, env):
    # GitHub runs `shell: bash` as `bash --noprofile --norc -eo pipefail {0}`.
    p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step],
                       cwd=args.source, env=env, capture_output=True, text=True, timeout=900)
    print(p.stderr, end="")
    return p


def workflow(args):
    with open(os.path.join(args.source, ".github/workflows/devcopy.yml")) as f:
        wf = yaml.safe_load(f)
    check(wf["permissions"].get("security-events") == "write", "upload-sarif needs security-events: write")
    job = wf["jobs"]["devcopy"]
    steps = job["steps"]
    step = next(s for s in steps if s.get("id") == "devcopy")
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    check(steps.index(upload) > steps.index(step), "upload runs after the analysis")
    check("failure" not in upload.get("if", "") and "success" not in upload.get("if", ""),
          "the upload must run when the analysis finds something (exit 1)")
    build_step = "\n".join(s.get("run", "") for s in steps[: steps.index(step)])
    check("--target devcopy" in build_step, "a step before the analysis builds target devcopy")
    check(job["env"]["DEVCOPY_BUILD"] in build_step or "$DEVCOPY_BUILD" in build_step,
          "the build step uses DEVCOPY_BUILD")

    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))
    check(steps.index(cache) < steps.index(step), "the cache is restored before the analysis")
    cache_dir = expand(cache["with"]["path"], **{"env.DEVCOPY_BUILD": args.build})
    check(cache_dir == os.path.join(args.build, ".devcopy-cache"),
          f"the cache step keeps {cache_dir}, not the folder devcopy writes")

    temp = tempfile.mkdtemp(prefix="devcopy_ci_")
    TEMP_DIRS.append(temp)
    env = dict(os.environ, DEVCOPY_BUILD=args.build, RUNNER_TEMP=temp, **GITHUB)
    p = run_step(step["run"], args, env)
    check(p.returncode in (0, 1), f"the devcopy step failed with exit code {p.returncode}")
    sarif = expand(upload["with"]["sarif_file"], **{"runner.temp": temp})
    check(os.path.isfile(sarif), f"the upload step's sarif_file {sarif} was not written")
    check(glob.glob(os.path.join(cache_dir, "*", "*", "*.json")), f"no cache entries in {cache_dir}")
    with open(sarif) as f:
        first = f.read()
    again = run_step(step["run"], args, env)
    check(again.returncode == p.returncode and "unit(s) unchanged" in again.stderr,
          f"the second run must reuse the cache:\n{again.stderr}")
    with open(sarif) as f:
        check(f.read() == first, "the warm run uploaded another report")
    validate_sarif(args, sarif)
    with open(sarif) as f:
        run = json.load(f)["runs"][0]
    check(run["tool"]["driver"]["rules"], "rules from rules/ in the upload")
    web = "{GITHUB_SERVER_URL}/{GITHUB_REPOSITORY}/blob/{GITHUB_SHA}/rules/".format(**GITHUB)
    for rule in run["tool"]["driver"]["rules"]:  # code scanning links the web pages
        check(rule["helpUri"] == web + rule["id"] + ".md", f"helpUri {rule['helpUri']}, not under {web}")
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]}
    check(all(u.startswith("examples/") for u in uris), f"repository-relative paths: {uris}")
    print(f"workflow: exit {p.returncode}, {len(run['results'])} result(s) uploaded, warm rerun "
          "identical")
    if p.returncode == 1 and os.path.exists(os.path.join(args.source, ".devcopy-baseline.json")):
        # Not the recipe's fault (this build may hold more examples than CI's):
        # say how to refresh the repository's own baseline.
        print("note: findings missing from .devcopy-baseline.json; if intended, refresh it with "
              "build/analyzer/devcopy analyze -p build examples --write-baseline .devcopy-baseline.json")
    return sarif


def sharded_workflow(args, unsharded_sarif):
    with open(os.path.join(args.source, ".github/workflows/devcopy-sharded.yml")) as f:
        wf = yaml.safe_load(f)
    analyze, merge = wf["jobs"]["analyze"], wf["jobs"]["merge"]
    check(merge["needs"] == "analyze", "the merge job waits for the analysis jobs")
    shards = analyze["strategy"]["matrix"]["shard"]
    check(shards == list(range(1, len(shards) + 1)) and int(wf["env"]["DEVCOPY_SHARDS"]) == len(shards),
          "the matrix lists shards 1..DEVCOPY_SHARDS")
    step = next(s for s in analyze["steps"] if s.get("id") == "devcopy")
    upload = next(s for s in analyze["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    download = next(s for s in merge["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    merge_step = next(s for s in merge["steps"] if s.get("id") == "merge")
    sarif_upload = next(s for s in merge["steps"]
                        if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    check("--target devcopy" in "\n".join(s.get("run", "") for s in merge["steps"]),
          "the merge job builds devcopy")

    temp = tempfile.mkdtemp(prefix="devcopy_ci_sharded_")
    TEMP_DIRS.append(temp)
    env = dict(os.environ, DEVCOPY_BUILD=args.build, RUNNER_TEMP=temp,
               DEVCOPY_SHARDS=str(wf["env"]["DEVCOPY_SHARDS"]), **GITHUB)
    downloaded = expand(download["with"]["path"], **{"runner.temp": temp})
    os.makedirs(downloaded)
    for k in shards:  # each matrix job, on its own machine
        p = run_step(expand(step["run"], **{"matrix.shard": k}), args, env)
        check(p.returncode == 0, f"shard {k} failed with exit code {p.returncode}")
        artifact = expand(upload["with"]["path"], **{"matrix.shard": k, "runner.temp": temp})
        check(os.path.isfile(artifact), f"shard {k} did not write {artifact}")
        shutil.move(artifact, downloaded)  # upload-artifact, then download-artifact
    p = run_step(merge_step["run"], args, env)
    check(p.returncode in (0, 1), f"the merge step failed with exit code {p.returncode}")
    sarif = expand(sarif_upload["with"]["sarif_file"], **{"runner.temp": temp})
    with open(sarif) as f, open(unsharded_sarif) as g:
        check(f.read() == g.read(), "the merged SARIF differs from the unsharded workflow's")
    print(f"sharded workflow: {len(shards)} shards merged into the unsharded report")


def pre_commit(args):
    with open(os.path.join(args.source, ".pre-commit-hooks.yaml")) as f:
        hook = next(h for h in yaml.safe_load(f) if h["id"] == "devcopy")
    check(hook["language"] == "system", "the hook runs the installed devcopy")
    project = tempfile.mkdtemp(prefix="devcopy_hook_")
    TEMP_DIRS.append(project)
    shutil.copytree(os.path.join(HERE, "project"), project, dirs_exist_ok=True)
    with open(os.path.join(project, "src/unlisted.cpp"), "w") as f:
        f.write("int unlisted;\n")
    os.makedirs(os.path.join(project, "build"))
    with open(os.path.join(project, "build/compile_commands.json"), "w") as f:
        json.dump([{"directory": project, "file": f"src/{s}",
                    "arguments": ["clang++", "-std=c++17", f"-I{args.mock}", "-c", f"src/{s}"]}
                   for s in ("train.cpp", "clean.cpp")], f)
    env = dict(os.environ, PATH=os.path.dirname(os.path.abspath(args.devcopy)) + os.pathsep +
               os.environ["PATH"])

    def commit(staged):
        files = [s for s in staged if re.search(hook["files"], s)]
        cmd = shlex.split(hook["entry"]) + hook.get("args", []) + files
        return subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=300)

    p = commit(["src/train.cpp", "src/unlisted.cpp", "notes.txt"])
    check(p.returncode == 1 and "[devcopy-discarded-copy]" in p.stdout,
          f"a staged file with findings must block the commit: {p.returncode}\n{p.stdout}{p.stderr}")
    check("skipping 'src/unlisted.cpp'" in p.stderr, f"unlisted file not noted:\n{p.stderr}")
    p = commit(["src/clean.cpp", "notes.txt"])
    check(p.returncode == 0 and p.stdout == "", f"a clean commit passes: {p.returncode}\n{p.stdout}{p.stderr}")
    print("pre-commit hook: blocks findings, passes clean files")


def main():
    ap = argparse.ArgumentParser()
    for opt in ("--source", "--build", "--devcopy", "--mock", "--validator"):
        ap.add_argument(opt, required=True)
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    try:
        pre_commit(args)
        sharded_workflow(args, workflow(args))
    except Failure as e:
        sys.exit(f"FAIL ci_recipe: {e}")
    for d in TEMP_DIRS:
        shutil.rmtree(d, ignore_errors=True)
    print("ok ci_recipe")


if __name__ == "__main__":
    main()
