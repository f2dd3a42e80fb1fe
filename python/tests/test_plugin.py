"""The pytest plugin, run as users run it (pytester: a real pytest run; the
plugin is found through the package's entry point, with no -p)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import devcopy

TESTS = '''
import torch
X = torch.randn(8)

def test_discards():
    X.double()

def test_clean():
    x = torch.randn(8)
    assert x.double().sum().item() == x.sum().item() or True

def test_fixture(devcopy_observe):
    y = torch.randn(4).double()
    assert devcopy_observe.report.findings == []
    devcopy_observe.assert_clean()
'''


def test_fail_mode_fails_the_discarding_test_with_its_line(pytester):
    pytester.makepyfile(test_user=TESTS)
    result = pytester.runpytest("--devcopy=fail")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "*test_user.py::test_discards discarded copies*",
        "*discarded-copy at *test_user.py:5*",
    ])


def test_warn_mode_passes_and_warns(pytester):
    pytester.makepyfile(test_user=TESTS)
    result = pytester.runpytest("--devcopy=warn")
    result.assert_outcomes(passed=3, warnings=1)
    result.stdout.fnmatch_lines(["*DevcopyWarning*test_discards discarded copies*"])


def test_off_by_default(pytester):
    pytester.makepyfile(test_user=TESTS)
    result = pytester.runpytest()
    result.assert_outcomes(passed=3)


def test_assertion_helper_reads_well(pytester):
    pytester.makepyfile(test_helper='''
import torch, devcopy

X = torch.randn(8)

def test_it():
    with devcopy.assert_no_discarded_copies():
        X.double()
''')
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "E*AssertionError: devcopy found 1 problem (discarded-copy)",
        "E*discarded-copy at *test_helper.py:7",
        "*copied 64 B of a double [[]8[]] tensor*",
    ])


def test_bad_option_value(pytester):
    result = pytester.runpytest("--devcopy=loud")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*--devcopy: invalid choice: 'loud'*"])


def test_entry_point_is_declared():
    import tomllib
    root = Path(__file__).resolve().parents[2]
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["pytest11"] == {"devcopy.pytest_plugin": "devcopy.pytest_plugin"}
    assert (root / meta["project"]["readme"]).is_file()  # the package's own readme


def _pytest_subprocess(tmp_path, *args, ini=None):
    """pytest in a fresh interpreter with only PYTHONPATH set to where
    devcopy is imported from (the build tree, or an install): no -p."""
    (tmp_path / "test_user.py").write_text(TESTS)
    if ini is not None:
        (tmp_path / "pytest.ini").write_text(ini)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DEVCOPY"))}
    env["PYTHONPATH"] = str(Path(devcopy.__file__).resolve().parents[1])
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)


def test_found_with_only_pythonpath_in_a_new_process(tmp_path):
    r = _pytest_subprocess(tmp_path, "--devcopy=fail")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "unrecognized arguments" not in r.stderr
    assert "1 failed, 2 passed" in r.stdout and "test_user.py::test_discards discarded copies" in r.stdout


def test_ini_option_and_the_command_line_overriding_it(tmp_path):
    r = _pytest_subprocess(tmp_path, ini="[pytest]\ndevcopy = fail\n")
    assert r.returncode == 1 and "1 failed, 2 passed" in r.stdout, r.stdout + r.stderr
    r = _pytest_subprocess(tmp_path, "--devcopy=off", ini="[pytest]\ndevcopy = fail\n")
    assert r.returncode == 0 and "3 passed" in r.stdout, r.stdout + r.stderr


def test_old_explicit_p_flag_still_loads_it_once(pytester):
    pytester.makepyfile(test_user=TESTS)
    result = pytester.runpytest("-p", "devcopy.pytest_plugin", "--devcopy=fail")
    result.assert_outcomes(passed=2, failed=1)


def test_ini_option_in_pyproject(pytester):
    pytester.makepyfile(test_user=TESTS)
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\ndevcopy = "warn"\n')
    result = pytester.runpytest()
    result.assert_outcomes(passed=3, warnings=1)


def test_bad_ini_value_is_a_usage_error(pytester):
    pytester.makepyfile(test_user=TESTS)
    pytester.makeini("[pytest]\ndevcopy = loud\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*devcopy: ini option devcopy = 'loud': expected one of off, warn, fail*"])


ALLOW = '''
import pytest, torch
X = torch.randn(8)

@pytest.mark.devcopy_allow("discarded-copy")
def test_allowed():
    X.double()

@pytest.mark.devcopy_allow("stale-after-move")
def test_other_kind_allowed_still_fails():
    X.double()

@pytest.mark.devcopy_off
def test_off():
    X.double()
'''


def test_allow_marker_lets_that_kind_pass_under_strict_markers(pytester):
    pytester.makepyfile(test_allow=ALLOW)
    result = pytester.runpytest("--strict-markers", "--devcopy=fail")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_other_kind_allowed_still_fails discarded copies*"])


@pytest.mark.parametrize("args, message", [
    ('"discard-copy"', "*devcopy_allow('discard-copy'): not a devcopy runtime rule (rules: *discarded-copy*"),
    ("", "*devcopy_allow needs the kinds it allows*"),
])
def test_allow_marker_with_an_unknown_kind_is_a_usage_error(pytester, args, message):
    pytester.makepyfile(test_allow=f'''
import pytest
@pytest.mark.devcopy_allow({args})
def test_it():
    pass
''')
    result = pytester.runpytest("--devcopy=fail")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_failures_hide_devcopys_own_frames(pytester):
    pytester.makepyfile(test_tb='''
import torch, devcopy
X = torch.randn(8)

def test_context_manager():
    with devcopy.assert_no_discarded_copies():
        X.double()

def test_fixture_assert(devcopy_observe):
    X.double()
    devcopy_observe.assert_clean()

def test_helper():
    with devcopy.observe() as obs:
        X.double()
    devcopy.assert_no_findings(obs.report)
''')
    result = pytester.runpytest("--tb=long")
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    pkg = str(Path(devcopy.__file__).parent)
    assert pkg not in out and "contextlib" not in out, out
    assert out.count("E       AssertionError: devcopy found 1 problem") == 3
    result.stdout.fnmatch_lines(["test_tb.py:5: AssertionError", "test_tb.py:10: AssertionError",
                                 "test_tb.py:15: AssertionError"])


def test_old_fixture_name_works_and_warns(pytester):
    pytester.makepyfile(test_old='''
import torch
X = torch.randn(4)

def test_it(devcopy):
    X.double()
    assert len(devcopy.report.findings) == 1
''')
    result = pytester.runpytest("-W", "error::DeprecationWarning")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the devcopy fixture is deprecated*use devcopy_observe*"])
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, warnings=1)
