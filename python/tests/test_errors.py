"""Bad input to the Python package: one-line errors naming the problem, from
`python -m devcopy` (exit status 2) and from the API (TypeError/ValueError
naming the argument and what it accepts)."""
import json
import math
import os
import subprocess
import sys

import pytest
import torch
from torch import nn

import devcopy

GOOD = {"findings": [{"kind": "discarded-copy", "message": "m", "bytes": 8, "devices": ["cpu"],
                      "tensors": [], "op": "aten::to", "module": "", "details": []}]}


def run_cli(*args, stdout=subprocess.PIPE):
    return subprocess.run([sys.executable, "-m", "devcopy", *args], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=120)


def one_line_error(r, *parts):
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("devcopy: error: "), r.stderr
    assert "Traceback" not in r.stderr
    for part in parts:
        assert part in r.stderr, r.stderr


def mistyped():
    bad = json.loads(json.dumps(GOOD))
    bad["findings"][0]["bytes"] = "eight"
    return bad


@pytest.mark.parametrize("text, message", [
    (json.dumps(mistyped()), "findings[0].bytes is a string, expected an integer"),
    ("[" * 100000 + "]" * 100000, "nested too deeply"),
    ('{"findings":[1]}', "findings[0] is an integer, expected an object"),
    ('{"findings":[{"devices": "cpu"}]}', "findings[0].devices is a string, expected a list of strings"),
    ('{"findings":[{"bytes": 1e400}]}', "findings[0].bytes is a number, expected an integer"),
    ('{"findings":[{"bytes": 99999999999999999999}]}', "findings[0].bytes is an integer out of range"),
    ('{"findings":[], "devices": {}}', "devices is an object, expected a list"),
    ('{"findings":[], "host_syncs": true}', "host_syncs is true, expected an integer"),
    # Found by tests/fuzz_report.py: the timeline reader trusted every field.
    ('{"findings":[], "timelines": true}', "timelines is true, expected a list"),
    ('{"findings":[], "timelines": [{"samples": 1.5}]}', "timelines[0].samples is a number, expected a list"),
    ('{"findings":[], "timelines": [{"samples": [[1, 2]]}]}', "timelines[0].samples[0] is a list, expected"),
    ('{"findings":[], "timelines": [{"marks": [{"line": 4294967296}]}]}',
     "timelines[0].marks[0].line is an integer, expected a line number"),
], ids=["mistyped", "deep", "number-item", "string-list", "float", "huge", "devices", "syncs",
        "timelines", "samples", "sample", "line"])
def test_report_command_rejects_bad_reports_in_one_line(tmp_path, text, message):
    saved = tmp_path / "saved.json"
    saved.write_text(text)
    one_line_error(run_cli("report", str(saved)), f"{saved}: ", message)
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        devcopy.Report.from_json(text)


def test_report_command_output_errors_keep_the_old_file(tmp_path):
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(GOOD))
    one_line_error(run_cli("report", str(saved), "-o", str(tmp_path / "no" / "dir" / "out.txt")),
                   "cannot write", "No such file or directory")
    if os.path.exists("/dev/full"):
        one_line_error(run_cli("report", str(saved), "-o", "/dev/full"),
                       "cannot write /dev/full: No space left on device")
        with open("/dev/full", "w") as full:
            one_line_error(run_cli("report", str(saved), stdout=full), "cannot write to stdout")
    kept = tmp_path / "kept.txt"
    kept.write_text("the user's file")
    os.chmod(kept, 0o640)
    assert run_cli("report", str(saved), "-o", str(kept)).returncode == 0
    assert "discarded-copy" in kept.read_text() and (os.stat(kept).st_mode & 0o777) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt", "saved.json"]


def test_report_command_reads_with_a_size_limit():
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    one_line_error(run_cli("report", "/dev/zero"), "/dev/zero: larger than 64 MiB")


def test_report_command_rejects_binary_input(tmp_path):
    saved = tmp_path / "saved.json"
    saved.write_bytes(b'{"findings": ["\xff"]}')
    one_line_error(run_cli("report", str(saved)), "not UTF-8 text at byte 15")


def test_from_json_takes_text():
    with pytest.raises(TypeError, match="takes the JSON text, got dict"):
        devcopy.Report.from_json(GOOD)


@pytest.mark.parametrize("option, value, error, message", [
    ("unreachable_threshold", "x", TypeError, "option unreachable_threshold='x': expected a number of bytes"),
    ("gradients", "yes", TypeError, "option gradients='yes': expected True or False"),
    ("gradients", 1, TypeError, "option gradients=1: expected True or False"),
    ("unreachable_threshold", -1, ValueError,
     "option unreachable_threshold=-1: expected a number of bytes, an int >= 0"),
    ("unreachable_threshold", math.nan, ValueError, "option unreachable_threshold=nan"),
    ("cached_ratio", math.nan, ValueError, "option cached_ratio=nan: expected a finite number >= 0"),
    ("cached_ratio", -0.5, ValueError, "option cached_ratio=-0.5"),
    ("block_details", 2.5, ValueError, "option block_details=2.5: expected a number of blocks"),
    ("treshold", 1, TypeError, "unknown option 'treshold' (options: gradients, allocator"),
])
def test_inspect_options_name_the_option_and_what_it_accepts(option, value, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        devcopy.inspect(nn.Linear(2, 2), **{option: value})


def test_inspect_options_of_the_right_type_are_taken():
    r = devcopy.inspect(nn.Linear(2, 2), gradients=False, unreachable_threshold=1.0 * (1 << 20),
                        cached_ratio=1, block_details=0)
    assert r.findings == []


@pytest.mark.parametrize("kwargs, error, message", [
    ({"group": "x"}, TypeError, "group is a str; expected a torch.distributed.ProcessGroup"),
    ({"timeout": math.nan}, ValueError, "timeout=nan: expected a number of seconds > 0"),
    ({"timeout": math.inf}, ValueError, "timeout=inf"),
    ({"timeout": -1}, ValueError, "timeout=-1"),
    ({"timeout": "60"}, TypeError, "timeout='60': expected a number of seconds"),
    ({"gradients": "yes"}, TypeError, "devcopy.inspect_distributed: option gradients='yes'"),
])
def test_inspect_distributed_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        devcopy.inspect_distributed(nn.Linear(2, 2), **kwargs)


def test_holders_names_what_it_accepts():
    with pytest.raises(TypeError, match="devcopy.holders: expected a torch.nn.Module, got int"):
        devcopy.holders(42)
    with pytest.raises(ValueError, match="devcopy.holders: device='gpu!' is not a device"):
        devcopy.holders(nn.Linear(2, 2), device="gpu!")


class NeverInitialized(nn.Module):
    def __init__(self):  # never runs Module.__init__: no tables at all
        pass


class HidesItsTables(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 3)

    def __getattribute__(self, name):  # torch reads _modules from __dict__ itself
        if name == "_modules":
            raise AttributeError(name)
        return object.__getattribute__(self, name)


class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.odd = HidesItsTables()


@pytest.mark.parametrize("cls, tensors", [(NeverInitialized, 0), (HidesItsTables, 2), (Holder, 2)])
def test_odd_but_valid_module_subclasses_are_accepted(cls, tensors):
    model = cls()
    report = devcopy.inspect(model)
    assert sum(d.reachable_bytes for d in report.devices) == (6 + 3) * 4 * (tensors > 0)
    assert json.loads(report.to_json()) == json.loads(devcopy._C._cpp_inspect(model).to_json())
    with devcopy.observe(model):
        pass
    assert devcopy.holders(model) == []


def test_a_child_that_is_not_a_module_is_named():
    model = nn.Sequential(nn.Linear(2, 2))
    model._modules["1"] = 42
    with pytest.raises(TypeError, match="devcopy: submodule 1 is an int, not a torch.nn.Module"):
        devcopy.inspect(model)
    with pytest.raises(TypeError, match="devcopy: submodule 1 is an int, not a torch.nn.Module"):
        devcopy._C._cpp_inspect(model)


def test_a_tensor_root_of_the_wrong_type_reads_well():
    with pytest.raises(TypeError, match="root 'x' is a str"):
        devcopy.inspect(nn.Linear(2, 2), roots={"x": "not a tensor"})
    with pytest.raises(TypeError, match="mark_read's argument is an int, not a torch.Tensor"):
        devcopy.mark_read(3)


def test_version_is_the_projects_one():
    from pathlib import Path
    from importlib import metadata
    root = Path(__file__).resolve().parents[2]
    assert devcopy.__version__ == (root / "VERSION").read_text().strip()
    assert metadata.version("devcopy") == devcopy.__version__
    assert torch.__version__  # the package imported torch, as the extension needs


@pytest.mark.parametrize("sarif, where", [
    ({"version": "2.1.0", "runs": [{"results": [{"locations": {"0": 1}}]}]}, "runs[0].results[0].locations"),
    ({"version": "2.1.0", "runs": [{"results": [{"message": "text"}]}]}, "runs[0].results[0].message"),
    ({"version": "2.1.0", "runs": 3}, "the document.runs"),
], ids=["locations", "message", "runs"])
def test_report_command_rejects_bad_static_runs_in_one_line(tmp_path, sarif, where):
    """Found by tests/fuzz_report.py: a SARIF field of the wrong type raised
    KeyError from the static reader."""
    probe = tmp_path / "probe.json"
    probe.write_text(json.dumps(GOOD))
    saved = tmp_path / "run.sarif"
    saved.write_text(json.dumps(sarif))
    one_line_error(run_cli("report", "--html", str(probe), str(saved), "-o", str(tmp_path / "page.html")),
                   where)
