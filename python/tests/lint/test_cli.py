"""The command: exit codes, outputs, baselines, suppression, --fix."""
import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from devcopy.lint import cli
from devcopy.lint._output import stable_hash

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BAD = "import torch\nx = torch.randn(3)\ndevice = 'cuda'\nx.to(device)\n"


def lint(*args, cwd=None):
    """Runs `python3 -m devcopy lint` as users do; (rc, stdout, stderr)."""
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    p = subprocess.run([sys.executable, "-m", "devcopy", "lint", *args], capture_output=True,
                       text=True, cwd=cwd, env=env)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture
def project(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "clean.py").write_text("import torch\nx = torch.zeros(3)\ny = x.to('cuda')\n")
    return tmp_path


def test_exit_codes(project):
    assert lint("clean.py", cwd=project)[0] == 0
    rc, out, err = lint("bad.py", cwd=project)
    assert rc == 1 and "bad.py:4:1: warning: result of 'to()' is discarded" in out
    assert "[devcopy-discarded-copy]" in out and "x.to(device)\n^~~~~~~~~~~~" in out
    rc, out, err = lint("missing.py", cwd=project)
    assert rc == 2 and err.strip().splitlines() == ["devcopy: error: no such file or folder: missing.py"]
    rc, _, err = lint("--format", "xml", "bad.py", cwd=project)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "invalid choice" in err
    (project / "broken.py").write_text("def f(:\n")
    rc, _, err = lint("broken.py", cwd=project)
    assert rc == 2 and "broken.py: cannot parse: invalid syntax (line 1)" in err


def test_json_has_the_cpp_commands_shape(project):
    rc, out, _ = lint("--format", "json", "--root", str(project), str(project / "bad.py"))
    doc = json.loads(out)
    assert rc == 1 and list(doc) == ["version", "tool", "findings", "errors", "summary"]
    assert doc["version"] == 1 and doc["tool"] == "devcopy" and doc["errors"] == []
    f = doc["findings"][0]
    assert list(f) == ["file", "line", "column", "end", "rule", "level", "message", "fingerprint", "notes", "fixes"]
    assert (f["file"], f["line"], f["column"], f["end"]) == ("bad.py", 4, 1, {"line": 4, "column": 13})
    assert doc["summary"] == {"translation_units": 1, "findings": 1, "baselined": 0, "errors": 0}
    key = "devcopy-discarded-copy\0bad.py\0x.to(device)"
    assert f["fingerprint"] == stable_hash(key) + ":0"


def test_fingerprint_hash_is_fnv1a_64():
    assert stable_hash("") == "cbf29ce484222325"
    assert stable_hash("a") == "af63dc4c8601ec8c"


def test_sarif(project):
    rc, out, _ = lint("--format", "sarif", "-o", "out.sarif", "bad.py", cwd=project)
    doc = json.loads((project / "out.sarif").read_text())
    run = doc["runs"][0]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert "devcopy-checkpoint-to-device" in ids and "devcopy-discarded-copy" in ids
    assert all(r["helpUri"].endswith("/" + r["id"] + ".md") for r in run["tool"]["driver"]["rules"])
    res = run["results"][0]
    assert res["ruleId"] == "devcopy-discarded-copy" and ids[res["ruleIndex"]] == res["ruleId"]
    assert list(res["partialFingerprints"]) == ["devcopyLineHash/v1"]
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "bad.py", "uriBaseId": "%SRCROOT%"}
    assert loc["region"]["startLine"] == 4 and rc == 1 and out == ""


def test_baseline_round_trip(project):
    assert lint("--write-baseline", "base.json", "bad.py", cwd=project)[0] == 0
    entries = json.loads((project / "base.json").read_text())["entries"]
    assert [e["rule"] for e in entries] == ["devcopy-discarded-copy"]
    rc, out, err = lint("--baseline", "base.json", "bad.py", cwd=project)
    assert rc == 0 and out == "" and "0 new finding(s)" in err and "1 in the baseline" in err
    with open(project / "bad.py", "a") as f:
        f.write("x.cuda()\n")
    rc, out, _ = lint("--baseline", "base.json", "bad.py", cwd=project)
    assert rc == 1 and "bad.py:5:1" in out and "bad.py:4:" not in out
    (project / "junk.json").write_text("{}")
    rc, _, err = lint("--baseline", "junk.json", "bad.py", cwd=project)
    assert rc == 2 and "is not a devcopy baseline" in err


@pytest.mark.parametrize("comment,silenced", [
    ("# noqa", True), ("# noqa: devcopy-discarded-copy", True), ("# noqa: DCP101", True),
    ("# noqa: E501", False), ("# noqa: devcopy-copy-in-loop", False), ("# NOLINT", True),
    ("# NOLINT(devcopy-discarded-copy)", True), ("# NOLINT(devcopy-*)", True),
    ("# NOLINT(devcopy-redundant-chain)", False)])
def test_suppression(project, comment, silenced):
    (project / "s.py").write_text(BAD.replace("x.to(device)", "x.to(device)  " + comment))
    assert lint("s.py", cwd=project)[0] == (0 if silenced else 1)


def test_nolintnextline(project):
    (project / "s.py").write_text(BAD.replace("x.to(device)", "# NOLINTNEXTLINE(devcopy-discarded-copy)\nx.to(device)"))
    assert lint("s.py", cwd=project)[0] == 0


def test_fix_is_safe_and_keeps_the_mode(tmp_path):
    target = tmp_path / "create_then_move.py"
    shutil.copy(os.path.join(FIXTURES, "create_then_move.py"), target)
    os.chmod(target, 0o750)
    rc, _, err = lint("--fix", str(target))
    assert rc == 1 and "applied fixes for 4 finding(s)" in err
    with open(os.path.join(FIXTURES, "create_then_move.fixed"), encoding="utf-8") as f:
        assert target.read_text() == f.read()
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o750
    assert [p.name for p in tmp_path.iterdir()] == ["create_then_move.py"]
    rc, out, _ = lint(str(target))  # left: the move with non_blocking, the legacy constructors
    assert out.count("[devcopy-create-then-move]") == 5


def test_select_and_unknown_rule(project):
    assert lint("--select", "devcopy-copy-in-loop", "bad.py", cwd=project)[0] == 0
    rc, _, err = lint("--disable", "devcopy-nope", "bad.py", cwd=project)
    assert rc == 2 and "no rule matches 'devcopy-nope'" in err


def test_main_in_process(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    assert cli.main(["-q", "bad.py"]) == 1
    assert "bad.py:4:1" in capsys.readouterr().out


def test_odd_input(project):
    (project / "latin.py").write_bytes(b"\xff\xfe x = 1\n")
    rc, _, err = lint("latin.py", cwd=project)
    assert rc == 2 and "latin.py: cannot read:" in err
    (project / "long.py").write_text("import torch\nx = torch.zeros(1)\ny = x" + "+x" * 3000 + "\nx.cuda()\n")
    rc, out, err = lint("long.py", cwd=project)
    assert rc == 1 and "long.py:4:1" in out, err
    (project / "empty.py").write_text("")
    (project / "nopy").mkdir()
    assert lint("empty.py", "nopy", cwd=project)[0] == 0
    rc, _, err = lint("-o", str(project / "missing" / "out.json"), "bad.py", cwd=project)
    assert rc == 2 and "output: cannot write" in err


def test_json_fixes_are_byte_edits_that_give_the_fixed_file():
    src = os.path.join(FIXTURES, "create_then_move.py")
    rc, out, _ = lint("--format", "json", "--root", FIXTURES, src)
    edits = [x for f in json.loads(out)["findings"] for x in f["fixes"]]
    assert edits and all(e["file"] == "create_then_move.py" for e in edits)
    with open(src, "rb") as f:
        data = f.read()
    for e in sorted(edits, key=lambda e: e["offset"], reverse=True):
        data = data[:e["offset"]] + e["replacement"].encode() + data[e["offset"] + e["length"]:]
    with open(os.path.join(FIXTURES, "create_then_move.fixed"), "rb") as f:
        assert data == f.read()


def _validator():
    path = os.environ.get("DEVCOPY_SARIF_VALIDATOR") or os.path.join(
        os.path.dirname(PYTHON_DIR), ".cache", "sarif-multitool", "node_modules", "@microsoft",
        "sarif-multitool-linux", "Sarif.Multitool")
    return path if os.access(path, os.X_OK) else None


@pytest.mark.skipif(_validator() is None, reason="Microsoft's SARIF multitool is not installed "
                    "(scripts/setup.sh; or set DEVCOPY_SARIF_VALIDATOR)")
def test_sarif_passes_microsofts_validator(tmp_path):
    out = tmp_path / "all.sarif"
    rc, _, err = lint("-q", "--format", "sarif", "-o", str(out), "--root", FIXTURES, FIXTURES)
    assert rc == 1, err
    log = tmp_path / "validation.sarif"
    p = subprocess.run([_validator(), "validate", str(out), "-o", str(log), "--log", "ForceOverwrite"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    run = json.loads(log.read_text())["runs"][0]
    assert [r for r in run.get("results", []) if r.get("level", "warning") in ("error", "warning")] == []


def test_form_feed_keeps_line_numbers(project):
    (project / "ff.py").write_text("import torch\n\x0c\nx = torch.randn(3)\ndevice = 'cuda'\nx.to(device)\n")
    rc, out, _ = lint("ff.py", cwd=project)
    assert rc == 1 and "ff.py:5:1:" in out and "x.to(device)\n^" in out


def test_a_linter_bug_names_the_file_and_stops_nothing_else(project, monkeypatch):
    from devcopy.lint import _engine
    from devcopy.lint.rules import discarded_copy

    def broken(walk, stmt, kind):
        raise KeyError("boom")
    monkeypatch.setattr(discarded_copy, "on_expr_stmt", broken)
    r = _engine.lint_file(str(project / "bad.py"))
    assert r["error"].startswith("internal error of devcopy lint (KeyError: 'boom')")


def test_fix_keeps_line_endings_and_encoding(tmp_path):
    target = tmp_path / "l1.py"
    target.write_bytes(b'# -*- coding: latin-1 -*-\r\nimport torch\r\ns = "\xe9"\r\nz = torch.zeros(3).cuda()\r\n')
    rc, out, err = lint("--fix", str(target))
    assert rc == 1 and "applied fixes for 1 finding(s)" in err
    assert "z = torch.zeros(3).cuda()\n    ^" in out  # the report shows the line as it was found
    assert target.read_bytes() == (b'# -*- coding: latin-1 -*-\r\nimport torch\r\ns = "\xe9"\r\n'
                                   b"z = torch.zeros(3, device='cuda')\r\n")
