"""python -m devcopy run: a whole script under the copy observer, started as
python starts it."""
import json
import subprocess
import sys

SCRIPT = '''
import os, sys, torch
import helper  # beside the script: sys.path[0] is the script's folder
print("argv", sys.argv)
print("main", __name__, __file__ == os.path.abspath(__file__), sys.modules["__main__"].__dict__ is globals())
X = torch.randn(8)
X.double()
kept = X.to(torch.float16)
if len(sys.argv) > 1 and sys.argv[1] == "raise":
    raise KeyError("the script's own error")
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
'''


def devcopy_run(tmp_path, *args, cwd=None):
    return subprocess.run([sys.executable, "-m", "devcopy", "run", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd or tmp_path)


def write_script(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "helper.py").write_text("")
    script = tmp_path / "app" / "train.py"
    script.write_text(SCRIPT)
    return script


def test_runs_the_script_as_python_does_and_prints_the_report(tmp_path):
    script = write_script(tmp_path)
    r = devcopy_run(tmp_path, "app/train.py", "7", "--json", "x")
    assert r.returncode == 7, r.stderr
    assert "argv ['app/train.py', '7', '--json', 'x']" in r.stdout
    assert "main __main__ True True" in r.stdout
    assert "devcopy: discarded-copy: 64 B" in r.stderr
    assert f"at: {script}:7 in <module>" in r.stderr
    assert "devcopy: summary: 1 finding" in r.stderr  # the kept copy is no finding


def test_exit_status_and_traceback_of_a_failing_script(tmp_path):
    write_script(tmp_path)
    r = devcopy_run(tmp_path, "app/train.py", "raise")
    assert r.returncode == 1
    assert "KeyError: \"the script's own error\"" in r.stderr
    tb = r.stderr.split("Traceback (most recent call last):")[1].split('KeyError: "')[0]
    assert "devcopy" not in tb and "runpy" not in tb and "train.py\", line 10" in tb, tb
    assert "devcopy: discarded-copy" in r.stderr  # the report still comes
    r = devcopy_run(tmp_path, "app/train.py", "0")
    assert r.returncode == 0


def test_saves_json_and_html_and_runs_a_module(tmp_path):
    write_script(tmp_path)
    out = tmp_path / "r.json"
    r = devcopy_run(tmp_path, "--json", str(out), "--html", str(tmp_path / "r.html"), "-m", "train", "3",
                    cwd=tmp_path / "app")
    assert r.returncode == 3, r.stderr
    assert "argv [" in r.stdout and "'3']" in r.stdout
    saved = json.loads(out.read_text())
    assert [f["kind"] for f in saved["findings"]] == ["discarded-copy"]
    assert "discarded-copy" in (tmp_path / "r.html").read_text()


def test_a_missing_script_is_a_one_line_error(tmp_path):
    r = devcopy_run(tmp_path, "nope.py")
    assert r.returncode == 2 and r.stderr == "devcopy: error: cannot run nope.py: no such file\n"
