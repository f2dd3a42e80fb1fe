"""Who holds it: referrer chains from a name the user can delete down to
tensors nothing reachable from the model holds (CPU stands in for CUDA)."""
import sys

import torch
from torch import nn

import devcopy


class Owner(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.old = torch.randn(333)  # a plain attribute: neither parameter nor buffer


def chains_for(holders, numel):
    return [c for h in holders if h.tensor.endswith(f"[{numel}] on cpu") for c in h.chains]


def test_module_attribute_is_named_from_the_model():
    model = Owner()
    chains = chains_for(devcopy.holders(model, device="cpu"), 333)
    assert "model.old (an attribute, not a parameter or buffer)" in chains


def test_list_in_a_live_frame():
    model = Owner()
    stash = [torch.randn(7), torch.randn(341)]
    chains = chains_for(devcopy.holders(model, device="cpu"), 341)
    assert any(c.startswith("local stash[1] of test_list_in_a_live_frame()") for c in chains), chains
    del stash


def test_closure_variable():
    model = Owner()

    def make():
        kept = torch.randn(347)

        def step():
            return kept.sum()
        return step

    step = make()
    chains = chains_for(devcopy.holders(model, device="cpu"), 347)
    assert any(c.startswith("closure variable of test_closure_variable.<locals>.make.<locals>.step()")
               for c in chains), chains
    del step


def test_exception_traceback_keeps_locals():
    model = Owner()

    def fails():
        big = torch.randn(349)  # noqa: F841  (kept alive by the traceback)
        raise RuntimeError("boom")

    try:
        fails()
    except RuntimeError as e:
        saved = e
    chains = chains_for(devcopy.holders(model, device="cpu"), 349)
    assert any(c.startswith("an exception's traceback: local big of fails()") for c in chains), chains
    del saved


def test_global():
    model = Owner()
    mod = sys.modules[__name__]
    mod.GLOBAL_STASH = {"w": torch.randn(353)}
    try:
        chains = chains_for(devcopy.holders(model, device="cpu"), 353)
        assert f"global {__name__}.GLOBAL_STASH.w" in chains, chains
    finally:
        del mod.GLOBAL_STASH


def test_reachable_tensors_and_roots_are_not_listed():
    model = Owner()
    keep = torch.randn(359)
    found = devcopy.holders(model, roots={"keep": keep}, device="cpu")
    assert chains_for(found, 359) == []
    chains = [c for h in found for c in h.chains]
    assert not any(c.startswith("model.fc") for c in chains)  # parameters are reachable
    assert "model.old (an attribute, not a parameter or buffer)" in chains
