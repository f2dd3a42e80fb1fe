"""devcopy.inspect on CPU models: the C++ rules, through Python."""
import json

import pytest
import torch
from torch import nn

import devcopy


class Two(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(64, 64)
        self.b = nn.Linear(64, 64)


def test_duplicate_storage_names_both_parameters():
    m = Two()
    with torch.no_grad():
        m.b.weight.copy_(m.a.weight)
    r = devcopy.inspect(m)
    dup = r.findings_of("duplicate-storage")
    assert len(dup) == 1
    f = dup[0]
    assert set(f.tensors) == {"a.weight", "b.weight"}
    assert f.bytes == 64 * 64 * 4
    assert f.devices == ("cpu",)
    assert "a.weight" in f.message and "16.00 KiB" in f.message
    assert str(r).splitlines()[0].startswith("devcopy:") or "duplicate-storage" in str(r)


def test_clean_model_has_no_findings_and_counts_reachable_bytes():
    m = Two()
    r = devcopy.inspect(m)
    assert r.findings == []
    assert not r.has_findings
    (cpu,) = [d for d in r.devices if d.device == "cpu"]
    assert cpu.reachable_bytes == 2 * (64 * 64 + 64) * 4


def test_tied_weights_are_shared_not_duplicated():
    m = Two()
    m.b.weight = m.a.weight
    r = devcopy.inspect(m)
    assert r.findings == []
    assert [sorted(s.tensors) for s in r.shared] == [["a.weight", "b.weight"]]


def test_shared_submodule_is_mirrored_once():
    inner = nn.Linear(8, 8)
    m = nn.Sequential(inner, nn.ReLU(), inner)
    r = devcopy.inspect(m)
    assert r.findings == []
    assert sorted(sorted(s.tensors) for s in r.shared) == [["0.bias", "2.bias"], ["0.weight", "2.weight"]]


def test_gradients_are_reachable_and_optional():
    m = Two()
    m.a(torch.ones(2, 64)).sum().backward()
    with_grads = devcopy.inspect(m).devices[0].reachable_bytes
    without = devcopy.inspect(m, gradients=False).devices[0].reachable_bytes
    assert with_grads - without == (64 * 64 + 64) * 4


def test_tensor_and_module_roots_take_part_in_duplicates():
    m = Two()
    cache = {"k": m.a.weight.detach().clone()}
    r = devcopy.inspect(m, roots={"cache": cache})
    (f,) = r.findings_of("duplicate-storage")
    assert set(f.tensors) == {"a.weight", "cache.k"}
    other = Two()
    other.load_state_dict(m.state_dict())
    r = devcopy.inspect(m, roots={"copy": other})
    assert {t for f in r.findings for t in f.tensors} >= {"a.weight", "copy.a.weight", "copy.b.bias"}


def test_optimizer_state_is_reachable_never_compared():
    m = Two()
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    m.a(torch.ones(4, 64)).sum().backward()
    opt.step()
    buf = opt.state[m.a.weight]["momentum_buffer"]
    # A root equal to the momentum buffer: a duplicate only if state were compared.
    twin = buf.clone()
    r = devcopy.inspect(m, roots={"opt": opt, "twin": twin})
    assert r.findings_of("duplicate-storage") == []
    base = devcopy.inspect(m, roots={"twin": twin}).devices[0].reachable_bytes
    assert r.devices[0].reachable_bytes - base == (64 * 64 + 64) * 4  # two momentum buffers


def test_optimizer_state_is_named_by_parameter():
    from devcopy._roots import Roots
    m = Two()
    opt = torch.optim.Adam(m.parameters())
    m.a(torch.ones(1, 64)).sum().backward()
    opt.step()
    names = [n for n, _ in Roots(m, {"opt": opt}).state]
    assert "opt.state.a.weight.exp_avg" in names and "opt.state.a.bias.exp_avg_sq" in names


def test_inspect_changes_nothing():
    m = Two()
    m.b.weight.requires_grad_(False)
    before = {n: (p, p.requires_grad, p.detach().clone()) for n, p in m.named_parameters()}
    devcopy.inspect(m)
    for n, p in m.named_parameters():
        assert p is before[n][0] and p.requires_grad == before[n][1]
        assert torch.equal(p, before[n][2])


def test_bad_input_gives_one_line_errors():
    with pytest.raises(TypeError, match="expected a torch.nn.Module, got list"):
        devcopy.inspect([1, 2])
    with pytest.raises(TypeError, match="unknown option 'treshold'"):
        devcopy.inspect(Two(), treshold=1)
    with pytest.raises(TypeError, match="root 'x' is a str"):
        devcopy.inspect(Two(), roots={"x": "nope"})
    with pytest.raises(ValueError, match="not a device"):
        devcopy.available_memory("warp-drive")


def test_json_round_trip_and_text():
    m = Two()
    with torch.no_grad():
        m.b.weight.copy_(m.a.weight)
    r = devcopy.inspect(m)
    data = json.loads(r.to_json())
    assert data["findings"][0]["kind"] == "duplicate-storage"
    again = devcopy.Report.from_json(r.to_json())
    assert again.to_json() == r.to_json()
    assert str(again) == str(r)
    with pytest.raises(ValueError, match="not a devcopy JSON report"):
        devcopy.Report.from_json("[]")


def test_check_honours_devcopy_probe(monkeypatch, capsys):
    m = Two()
    with torch.no_grad():
        m.b.weight.copy_(m.a.weight)
    monkeypatch.setenv("DEVCOPY_PROBE", "off")
    assert not devcopy.check(m).has_findings
    monkeypatch.setenv("DEVCOPY_PROBE", "warn")
    assert devcopy.check(m).has_findings
    assert "duplicate-storage" in capsys.readouterr().err
    monkeypatch.setenv("DEVCOPY_PROBE", "fail")
    with pytest.raises(devcopy.ProbeFailure) as e:
        devcopy.check(m)
    assert "a.weight" in str(e.value) and e.value.report.has_findings
    devcopy.check(Two())  # clean: no raise


def test_available_memory_cpu():
    assert devcopy.available_memory("cpu") > 0


def test_flattened_route_matches_the_cpp_walk():
    """inspect() hands the model to C++ as named tensors (one walk of the
    Python modules' tables); the C++ walk of the mirrored module tree is the
    reference: same names, order, roles, findings and figures."""
    torch.manual_seed(0)
    inner = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.Linear(8, 8, bias=False))
    m = nn.Module()
    m.a = inner
    m.b = inner                                   # a shared submodule: walked twice
    m.head = nn.Linear(8, 8)
    m.tail = nn.Linear(8, 8)
    m.tail.weight = m.head.weight                 # tied
    m.register_buffer("scale", torch.ones(8))
    m.register_parameter("unused", None)          # None entries are left out
    m.alias = nn.Parameter(m.head.bias.detach())  # shared storage
    m.copy = nn.Parameter(m.head.bias.detach().clone())  # duplicated
    m.head(torch.randn(2, 8)).sum().backward()    # gradients
    py, cpp = devcopy.inspect(m), devcopy._C._cpp_inspect(m)
    assert py.to_json() == cpp.to_json()
    assert [f.kind for f in py.findings] == ["duplicate-storage"]
    assert len(py.shared) == 10  # the shared submodule's 8, tied, alias
