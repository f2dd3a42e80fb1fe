"""observe(): the probe's CopyObserver for a `with` block, with the Python
file and line of each copy and the module it ran in.

Where a copy was made: when the probe has the observer's location hook, the
extension installs a provider that reads the copying thread's innermost
Python frame outside torch and devcopy (any thread, only for copies).
Without the hook, a TorchFunctionMode (torch.overrides) sees each copy
call (to, cpu, cuda, clone, contiguous, conversions) as Python makes it and
opens a devcopy ModuleScope named "<module> at <file>:<line>" (or
"<file>:<line>") around it, so
the C++ observer's finding carries the user's own line. Only the copy calls
pay for the frame lookup; every torch call in the block pays the mode's
dispatch (a few microseconds), and nothing outside the block does.
Which module: the frames of the copying thread say, when the copy is made
(_forward.py); nothing runs on module calls. Which parameter or buffer: the
extension walks the model when a finding first needs a name (a discarded
copy, when it is freed in its statement; a move), never at entry, so a block
whose copies are used or kept never walks it, and the names are the model's
at that moment.
"""
import os
import sys

import torch
from torch.overrides import TorchFunctionMode

from . import _C, _forward
from ._report import Report

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_COPY_CALLS = frozenset({
    "to", "cpu", "cuda", "clone", "contiguous", "type", "type_as", "double", "float", "half",
    "bfloat16", "int", "long", "short", "char", "byte", "bool", "pin_memory", "copy_",
    "to_dense", "to_sparse",
})
# True when the C++ observer asks Python for each copy's location itself
# (any thread); otherwise the TorchFunctionMode below names it (its thread).
NATIVE_LOCATIONS = _C.install_location_provider([_TORCH_DIR, _HERE])
# The module of a copy, from the copying thread's frames (also any thread).
NATIVE_SCOPES = _C.install_scope_provider(_forward.copy_module)


def user_frame(depth=1):
    """The innermost frame outside torch and devcopy: the user's code."""
    f = sys._getframe(depth)
    while f is not None:
        name = f.f_code.co_filename
        if not (name.startswith(_TORCH_DIR) or name.startswith(_HERE) or name.startswith("<frozen")):
            return f
        f = f.f_back
    return None


def _short(path):
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


class _Where(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        __tracebackhide__ = True  # an error in the call shows the user's line
        kwargs = kwargs or {}
        if getattr(func, "__name__", None) not in _COPY_CALLS:
            return func(*args, **kwargs)
        f = user_frame(2)
        if f is None:
            return func(*args, **kwargs)
        module = None if NATIVE_SCOPES else _forward.module_at(f)
        where = f"{_short(f.f_code.co_filename)}:{f.f_lineno}"
        scope = _C.Scope(f"{module} at {where}" if module else where)
        scope.enter()
        try:
            return func(*args, **kwargs)
        finally:
            scope.exit()


class Observation:
    """The copies made while the `with` block runs, on every thread.
    `report` (a devcopy.Report) holds the findings: discarded-copy,
    ineffective-non-blocking, stale-after-move, transient-device-copy;
    copies by route; syncs."""

    def __init__(self, model=None, locations=True):
        if model is not None and not isinstance(model, torch.nn.Module):
            raise TypeError(f"devcopy.observe: expected a torch.nn.Module, got {type(model).__name__}")
        self._model = model
        self._locations = locations
        self._native = None
        self._names = None
        self._mode = None
        self._final = None

    def __enter__(self):
        if self._final is not None:
            raise RuntimeError("devcopy.observe: this observation is finished and cannot be "
                               "re-entered; start a new one with devcopy.observe()")
        if self._native is not None:
            raise RuntimeError("devcopy.observe: this observation is already running")
        self._native = _C.Observer()
        if self._model is not None:
            self._native.watch(self._model)
            self._names = _forward.watch(self._model)
        if self._locations and not NATIVE_LOCATIONS:
            self._mode = _Where()
            self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        if self._mode is not None:
            self._mode.__exit__(*exc)
            self._mode = None
        if self._names is not None:
            _forward.unwatch(self._names)
            self._names = None
        self._final = Report(self._native.close())
        return False

    @property
    def report(self) -> Report:
        if self._final is not None:
            return self._final
        if self._native is None:
            raise RuntimeError("devcopy.observe: use it as `with devcopy.observe() as obs:`")
        return Report(self._native.report())

    @property
    def findings(self):
        return self.report.findings


def observe(model=None, locations=True) -> Observation:
    """`with devcopy.observe(model) as obs:` watches the copies made in the
    block; `model` (optional) names parameters and modules in findings, as
    the model holds them when the first finding needs a name."""
    return Observation(model, locations)


class scope:
    """`with devcopy.scope("decoder"):` attributes the copies made inside to
    that name (the probe's ModuleScope)."""

    def __init__(self, name: str):
        self._scope = _C.Scope(str(name))

    def __enter__(self):
        self._scope.enter()
        return self

    def __exit__(self, *exc):
        self._scope.exit()
        return False


def mark_read(tensor) -> None:
    """Says a copy's result was read outside torch ops (numpy(), data_ptr()),
    which the observer cannot see, so it is not a discarded copy."""
    _C.mark_read(tensor)
