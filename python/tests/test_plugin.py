"""The pytest plugin, run as users run it (pytester: a real pytest run)."""
import pytest

TESTS = '''
import torch
X = torch.randn(8)

def test_discards():
    X.double()

def test_clean():
    x = torch.randn(8)
    assert x.double().sum().item() == x.sum().item() or True

def test_fixture(devcopy):
    y = torch.randn(4).double()
    assert devcopy.report.findings == []
    devcopy.assert_clean()
'''


def test_fail_mode_fails_the_discarding_test_with_its_line(pytester):
    pytester.makepyfile(test_user=TESTS)
    result = pytester.runpytest("-p", "devcopy.pytest_plugin", "--devcopy=fail")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "*test_user.py::test_discards discarded copies*",
        "*discarded-copy at *test_user.py:5*",
    ])


def test_warn_mode_passes_and_warns(pytester):
    pytester.makepyfile(test_user=TESTS)
    result = pytester.runpytest("-p", "devcopy.pytest_plugin", "--devcopy=warn")
    result.assert_outcomes(passed=3, warnings=1)
    result.stdout.fnmatch_lines(["*DevcopyWarning*test_discards discarded copies*"])


def test_off_by_default(pytester):
    pytester.makepyfile(test_user=TESTS)
    result = pytester.runpytest("-p", "devcopy.pytest_plugin")
    result.assert_outcomes(passed=3)


def test_assertion_helper_reads_well(pytester):
    pytester.makepyfile(test_helper='''
import torch, devcopy

X = torch.randn(8)

def test_it():
    with devcopy.assert_no_discarded_copies():
        X.double()
''')
    result = pytester.runpytest("-p", "devcopy.pytest_plugin")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "E*AssertionError: devcopy found 1 problem (discarded-copy)",
        "E*discarded-copy at *test_helper.py:7",
        "*copied 64 B of a double [[]8[]] tensor*",
    ])


def test_bad_option_value(pytester):
    result = pytester.runpytest("-p", "devcopy.pytest_plugin", "--devcopy=loud")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*--devcopy: invalid choice: 'loud'*"])


@pytest.mark.parametrize("mode", ["fail"])
def test_entry_point_is_declared(mode):
    import pathlib
    import tomllib
    root = pathlib.Path(__file__).resolve().parents[2]
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["pytest11"]["devcopy"] == "devcopy.pytest_plugin"
