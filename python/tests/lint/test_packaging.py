"""The linter without torch, the generated catalog, the flake8 plugin."""
import os
import subprocess
import sys

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPO = os.path.dirname(PYTHON_DIR)
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")

# torch made unimportable before anything else runs: `import torch` raises.
NO_TORCH = "import sys; sys.modules['torch'] = None\n"


def _python(code, cwd=None):
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    return subprocess.run([sys.executable, "-c", NO_TORCH + code], capture_output=True, text=True,
                          env=env, cwd=cwd)


def test_lint_runs_without_torch():
    p = _python("import runpy; sys.argv = ['devcopy', 'lint', %r]\n"
                "runpy.run_module('devcopy', run_name='__main__', alter_sys=True)"
                % os.path.join(FIXTURES, "seed_offload.py"))
    assert p.returncode == 1, p.stderr
    assert "seed_offload.py:17:17: warning: result of 'to()' is discarded" in p.stdout
    p = _python("import devcopy.lint; assert 'torch' not in [m for m in sys.modules if sys.modules[m]]")
    assert p.returncode == 0, p.stderr


def test_package_keeps_its_public_names_and_imports_torch_on_first_use():
    p = _python("import devcopy\n"
                "print(sorted(devcopy.__all__))\n"
                "try:\n    devcopy.inspect\nexcept ImportError as e:\n    print('needs torch')\n")
    assert p.returncode == 0, p.stderr
    names = ["Finding", "Observation", "ProbeFailure", "Report", "__version__", "assert_no_discarded_copies",
             "assert_no_findings", "available_memory", "check", "holders", "inspect",
             "inspect_distributed", "mark_read", "observe", "scope"]
    assert p.stdout.splitlines() == [str(sorted(names)), "needs torch"]
    p = _python("import devcopy; devcopy.no_such_name")
    assert "module 'devcopy' has no attribute 'no_such_name'" in p.stderr


def test_checked_in_catalog_matches_the_rule_pages(tmp_path):
    out = tmp_path / "_catalog.py"
    pages = sorted(os.path.join(REPO, "rules", f) for f in os.listdir(os.path.join(REPO, "rules"))
                   if f.endswith(".md") and f != "README.md")
    subprocess.run([sys.executable, os.path.join(REPO, "rules", "gen_catalog.py"), "--python", str(out),
                    *pages], check=True)
    with open(os.path.join(PYTHON_DIR, "devcopy", "lint", "_catalog.py"), encoding="utf-8") as f:
        checked_in = f.read()
    assert out.read_text() == checked_in, (
        "python/devcopy/lint/_catalog.py is stale: run "
        "python3 rules/gen_catalog.py --python python/devcopy/lint/_catalog.py rules/*.md")


def test_every_static_rule_has_a_python_section():
    from devcopy.lint._catalog import RULES
    for rid, r in RULES.items():
        if r["kind"] == "static":
            assert "\n## Python\n" in r["help"], rid


def test_flake8_plugin(tmp_path):
    try:
        import flake8  # noqa: F401
    except ImportError:
        import pytest
        pytest.skip("flake8 is not installed")
    (tmp_path / ".flake8").write_text(
        "[flake8:local-plugins]\nextension =\n    DCP = devcopy.lint.flake8_plugin:Plugin\n"
        f"paths = {PYTHON_DIR}\n")
    src = open(os.path.join(FIXTURES, "seed_offload.py")).read()
    (tmp_path / "a.py").write_text(src)
    (tmp_path / "b.py").write_text(src.replace("non_blocking=True)", "non_blocking=True)  # noqa: DCP101"))
    p = subprocess.run([sys.executable, "-m", "flake8", "--select", "DCP", "a.py", "b.py"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 1
    assert p.stdout.splitlines() == [
        "a.py:17:17: DCP101 result of 'to()' is discarded: 'prev_tensor' is copied to the host and "
        "the copy is dropped at once, 'prev_tensor' itself is unchanged (to offload activations "
        "saved for backward, use torch.autograd.graph.save_on_cpu; this call frees nothing); assign "
        "the result (prev_tensor = prev_tensor.to(...)) or remove the call [devcopy-discarded-copy]"]


def test_pre_commit_hook_runs_its_entry():
    with open(os.path.join(REPO, ".pre-commit-hooks.yaml"), encoding="utf-8") as f:
        text = f.read()
    hook = text[text.index("- id: devcopy-lint"):]
    entry = hook.split("entry:", 1)[1].splitlines()[0].split()
    assert "types: [python]" in hook
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    p = subprocess.run([sys.executable if entry[0] == "python3" else entry[0], *entry[1:],
                        os.path.join(FIXTURES, "seed_offload.py")], capture_output=True, text=True, env=env)
    assert p.returncode == 1 and "[devcopy-discarded-copy]" in p.stdout
