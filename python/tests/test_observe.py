"""devcopy.observe on CPU: the offload seed as written (a dtype change
stands in for to('cpu'), which copies nothing on the CPU), with lines."""
import threading

import pytest
import torch
from torch import nn

import devcopy

HERE = __file__.rsplit("/", 1)[-1]


def line_of(fn, text):
    import inspect
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(text)


class DeepModel(nn.Module):
    def __init__(self, layer_num=4, layer_size=32):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(layer_size, layer_size) for _ in range(layer_num)])
        self.relu = nn.ReLU()

    def forward(self, x, offload=False):
        if offload:
            prev_tensor = x
            for idx, layer in enumerate(self.layers):
                x = self.relu(layer(prev_tensor))
                prev_tensor.to(torch.float64, non_blocking=True)
                prev_tensor = x
        return x


class SavedOnHost(DeepModel):
    def forward(self, x, offload=False):
        with torch.autograd.graph.save_on_cpu():
            for layer in self.layers:
                x = self.relu(layer(x))
        return x


def test_offload_seed_one_discarded_copy_per_layer_with_its_line():
    model = DeepModel()
    x = torch.randn(8, 32, requires_grad=True)
    with devcopy.observe(model) as obs:
        model(x, offload=True).sum().backward()
    found = obs.report.findings_of("discarded-copy")
    # One per layer (the observer may merge one call site's repeats: count).
    assert sum(f.count for f in found) == 4
    assert sum(f.bytes for f in found) == 4 * 8 * 32 * 8
    line = line_of(DeepModel.forward, "prev_tensor.to(")
    for f in found:
        assert f.location.endswith(f"{HERE}:{line}"), f.location
        assert f.devices == ("cpu", "cpu")
    assert f"{HERE}:{line}" in str(obs.report)


def test_save_on_cpu_version_discards_nothing():
    model = SavedOnHost()
    with devcopy.observe(model) as obs:
        model(torch.randn(8, 32, requires_grad=True)).sum().backward()
    assert obs.report.findings_of("discarded-copy") == []


def test_used_returned_and_kept_copies_are_not_discarded():
    x = torch.randn(16)
    kept = []
    with devcopy.observe() as obs:
        y = x.double()
        y.sum()
        z = x.to(torch.float16)
        kept.append(x.clone())

    assert z.dtype == torch.float16 and kept
    assert obs.report.findings == []
    routes = {(c.src_device, c.dst_device, c.dtype): c.count for c in obs.report.copies}
    assert routes[("cpu", "cpu", "double")] == 1


def test_module_name_and_copy_in_a_layer():
    class Leaky(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            x.double()  # discarded
            return self.fc(x)

    model = nn.Sequential(Leaky(), nn.Linear(4, 4))
    x = torch.randn(2, 4)
    with devcopy.observe(model) as obs:
        model(x)
    (f,) = obs.report.findings_of("discarded-copy")
    assert f.module == "0"
    assert f.location.endswith(f"{HERE}:{line_of(Leaky.forward, 'x.double()')}")


class _Nested(nn.Module):
    """Copies in forward, in a helper method, and in a child's forward."""

    def __init__(self):
        super().__init__()
        self.inner = nn.Sequential(_Leaky())

    def helper(self, x):
        x.half()  # discarded, in this module's own method
        return x

    def forward(self, x):
        return self.inner(self.helper(x))


def test_the_innermost_running_module_is_named_without_hooks():
    from torch.nn.modules import module as torch_module

    model = nn.Sequential(_Nested())
    with devcopy.observe(model) as obs:
        # Nothing runs on module calls: no global hook is installed.
        assert not torch_module._global_forward_hooks
        assert not torch_module._global_forward_pre_hooks
        model(torch.randn(4))
    names = sorted(f.module for f in obs.report.findings_of("discarded-copy"))
    assert names == ["0", "0.inner.0"], str(obs.report)


def test_a_module_of_another_model_is_not_named():
    watched, other = nn.Sequential(nn.Linear(4, 4)), nn.Sequential(_Leaky())
    with devcopy.observe(watched) as obs:
        other(torch.randn(4))
    (f,) = obs.report.findings_of("discarded-copy")
    assert f.module == "", str(obs.report)


def test_copies_on_another_python_thread_are_seen():
    x = torch.randn(64)
    with devcopy.observe() as obs:
        t = threading.Thread(target=lambda: x.double())
        t.start()
        t.join()
    (f,) = obs.report.findings_of("discarded-copy")
    assert f.bytes == 64 * 8
    if devcopy._observe.NATIVE_LOCATIONS:  # the mode route sees only its own thread
        line = line_of(test_copies_on_another_python_thread_are_seen, "x.double())")
        assert f.location.endswith(f"{HERE}:{line}")


def test_stale_after_move_names_the_parameter():
    model = nn.Sequential(nn.Linear(8, 8))
    old = model[0].weight.data  # a stray reference to the old storage
    with devcopy.observe(model) as obs:
        model.to(torch.float64)
    found = obs.report.findings_of("stale-after-move")
    # Torch 1.13 reports Python's set_data twice today (the observer's).
    assert found and {f.tensors for f in found} == {("0.weight",)}
    assert all(f.bytes == 8 * 8 * 4 for f in found)
    assert old.dtype == torch.float32


def test_report_stays_after_the_block_and_observer_is_gone():
    x = torch.randn(4)
    with devcopy.observe() as obs:
        x.double()
    x.double()  # after the block: not observed
    assert len(obs.report.findings) == 1


def test_observe_rejects_a_non_module():
    import pytest
    with pytest.raises(TypeError, match="expected a torch.nn.Module, got int"):
        devcopy.observe(3)


def _load_through_the_device(lin, state):
    lin.load_state_dict({k: v.cuda() for k, v in state.items()})


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_state_loaded_through_the_device_is_a_transient_copy():
    lin = nn.Linear(256, 256).cuda()
    state = {k: v.cpu() for k, v in lin.state_dict().items()}
    with devcopy.observe(lin) as obs:
        _load_through_the_device(lin, state)
    (f,) = obs.report.findings_of("transient-device-copy")
    assert f.count == 2 and f.bytes == (256 * 256 + 256) * 4, str(obs.report)
    assert f.location.endswith(f"{HERE}:{line_of(_load_through_the_device, 'v.cuda()')}")
    with devcopy.observe(lin) as obs:
        lin.load_state_dict(state)  # host -> parameters, once
    assert obs.report.findings_of("transient-device-copy") == [], str(obs.report)


class _Raises(nn.Module):
    def forward(self, x):
        raise ValueError("bad input")


class _Catches(nn.Module):
    """Calls a child that raises, handles it, then copies: its own copy."""

    def __init__(self):
        super().__init__()
        self.inner = _Raises()

    def forward(self, x):
        try:
            self.inner(x)
        except ValueError:
            pass
        x.double()  # discarded, in this module
        return x


def test_scope_is_popped_when_forward_raises():
    model = nn.Sequential(nn.Linear(4, 4), _Raises())
    x = torch.randn(4)
    with devcopy.observe(model) as obs:
        with pytest.raises(ValueError):
            model(torch.randn(2, 4))
        x.double()  # after the failed call: in no module
    (f,) = obs.report.findings_of("discarded-copy")
    assert f.module == "", str(obs.report)


def test_a_handled_exception_leaves_the_outer_module_current():
    model = nn.Sequential(_Catches())
    with devcopy.observe(model) as obs:
        model(torch.randn(4))
        model(torch.randn(4))
    found = obs.report.findings_of("discarded-copy")
    assert found and {f.module for f in found} == {"0"}, str(obs.report)


def test_a_finished_observation_cannot_be_re_entered():
    obs = devcopy.observe()
    with obs:
        pass
    with pytest.raises(RuntimeError, match="finished and cannot be re-entered"):
        with obs:
            pass
    with pytest.raises(RuntimeError, match="already running"):
        with devcopy.observe() as running:
            running.__enter__()


class _Leaky(nn.Module):
    def forward(self, x):
        x.double()  # discarded, in this module
        return x


def test_a_pre_hook_that_replaces_the_arguments_keeps_the_module():
    model = nn.Sequential(_Leaky(), _Raises())
    model[0].register_forward_pre_hook(lambda mod, args: (args[0] * 1,))
    model[1].register_forward_pre_hook(lambda mod, args: (args[0] * 1,))
    x = torch.randn(4)
    with devcopy.observe(model) as obs:
        with pytest.raises(ValueError):
            model(x)
        model[0](x)  # the next module call sees the failed call's frame gone
        x.double()
    modules = sorted((f.module, f.count) for f in obs.report.findings_of("discarded-copy"))
    assert modules == [("", 1), ("0", 2)], str(obs.report)


class KeepsInit(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("init_weight", self.fc.weight.detach().clone())


class Holder:
    pass


def _build_and_drop():
    model = KeepsInit()
    return model.init_weight.shape


def test_kept_clones_are_not_discarded():
    w = torch.randn(4, 4)
    params = [nn.Parameter(torch.randn(4))]
    opt = torch.optim.SGD(params, lr=0.1)
    with devcopy.observe() as obs:
        assert _build_and_drop() == (4, 4)  # a buffer, freed with its model
        model = KeepsInit()
        opt.state[params[0]]["copy"] = w.clone()  # optimizer state
        saved = [w.clone()]  # a list
        holder = Holder()
        holder.value = w.clone()  # an attribute of any object
        del model, saved, holder
        opt.state.clear()
    assert obs.report.findings_of("discarded-copy") == [], str(obs.report)


def test_a_dropped_clone_is_still_reported():
    w = torch.randn(4, 4)
    with devcopy.observe() as obs:
        w.clone()  # dropped
    (f,) = obs.report.findings_of("discarded-copy")
    assert f.location.endswith(f"{HERE}:{line_of(test_a_dropped_clone_is_still_reported, 'w.clone()  #')}")


def _copy_the_weight(model):
    model[0].weight.double()  # discarded, of a parameter


def test_a_parameter_copied_after_entry_is_named_once():
    model = nn.Sequential(nn.Linear(8, 8))
    with devcopy.observe(model) as obs:
        assert obs._native.name_walks == 0  # entry walks no model
        _copy_the_weight(model)
        _copy_the_weight(model)
    (f,) = obs.report.findings_of("discarded-copy")
    assert f.tensors == ("0.weight",) and f.count == 2, str(obs.report)
    assert f.location.endswith(f"{HERE}:{line_of(_copy_the_weight, 'weight.double()')}")
    assert obs._native.name_walks == 1  # at the first finding, not again


def test_a_parameter_replaced_after_entry_is_named_as_the_model_holds_it():
    model = nn.Sequential(nn.Linear(8, 8))
    old = model[0].weight
    with devcopy.observe(model) as obs:
        model[0].weight = nn.Parameter(torch.randn(8, 8, dtype=torch.float64))
        model[0].weight.float()  # the model's weight now
        old.double()  # no longer the model's: a tensor like any other
    found = obs.report.findings_of("discarded-copy")
    # The new weight's copy (8 x 8 floats) is named, the old one's (doubles) not.
    assert sorted((f.bytes, f.tensors) for f in found) == [(256, ("0.weight",)), (512, ())], \
        str(obs.report)


def test_nothing_is_named_without_a_finding():
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
    with devcopy.observe(model) as obs:
        model(torch.randn(2, 8)).sum().backward()
        kept = model[0].weight.double()  # a copy, kept: no finding
        used = model[0].bias.double().sum()  # a copy, read
    assert obs.report.findings == [] and obs._native.name_walks == 0, str(obs.report)
    assert kept.dtype == used.dtype == torch.float64
    x = torch.randn(4)
    with devcopy.observe(model) as obs:
        x.double()  # discarded: a finding, which could name its source
    assert obs._native.name_walks == 1


def test_a_model_that_cannot_be_named_says_so():
    model = nn.Sequential(nn.Linear(2, 2))
    model._modules["1"] = 42
    with devcopy.observe(model) as obs:  # entry does not walk the model
        model._modules["0"].weight.double()
    (f,) = obs.report.findings_of("discarded-copy")
    assert f.tensors == ()
    assert [s.reason for s in obs.report.skipped] == [
        "the model's tensors are not named in findings: "
        "devcopy: submodule 1 is an int, not a torch.nn.Module"]
