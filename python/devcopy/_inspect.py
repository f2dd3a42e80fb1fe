"""inspect(), check() and available_memory(): the probe's own functions on
Python models."""
import math
import numbers
import sys

import torch

from . import _C
from ._holders import annotate_unreachable
from ._report import ProbeFailure, Report
from ._roots import Roots


def _number(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _count(v):
    return math.isfinite(v) and v >= 0 and v == int(v)


def _ratio(v):
    return math.isfinite(v) and v >= 0


# InspectOptions' fields: the type each takes (a TypeError otherwise), the
# values it accepts (a ValueError otherwise), the conversion, and in words.
_FLAG = (lambda v: isinstance(v, bool), lambda v: True, bool, "True or False")
_BYTES = (_number, _count, int, "a number of bytes, an int >= 0")
_OPTIONS = {
    "gradients": _FLAG,
    "allocator": _FLAG,
    "unreachable_threshold": _BYTES,
    "cached_threshold": _BYTES,
    "cached_ratio": (_number, _ratio, float, "a finite number >= 0"),
    "block_details": (_number, _count, int, "a number of blocks, an int >= 0"),
}


_MAX_TIMEOUT = 1e9  # seconds: as milliseconds past now, it must fit a clock's int64


def _a(name):
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def _options(fn, options):
    """`options` checked against InspectOptions, converted to its types."""
    out = {}
    for name, value in options.items():
        if name not in _OPTIONS:
            raise TypeError(f"devcopy.{fn}: unknown option '{name}' (options: {', '.join(_OPTIONS)})")
        is_type, accepts, convert, words = _OPTIONS[name]
        if not is_type(value) or not accepts(value):
            error = TypeError if not is_type(value) else ValueError
            raise error(f"devcopy.{fn}: option {name}={value!r}: expected {words}")
        out[name] = convert(value)
    return out


def inspect(model, roots=None, **options) -> Report:
    """Inspects `model` (a torch.nn.Module): its parameters, buffers and
    gradients, plus `roots` ({name: tensor | module | optimizer | dict/list
    of them}) kept on purpose. Options are InspectOptions' (gradients,
    allocator, unreachable_threshold, cached_threshold, cached_ratio,
    block_details). Reads only: the model is not changed."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"devcopy.inspect: expected a torch.nn.Module, got {type(model).__name__}")
    r = Roots(model, roots)
    native = _C.inspect(model, r.tensors, r.modules, r.held, r.state, _options("inspect", options))
    if any(f.kind == "unreachable-allocation" for f in native.findings):
        native = annotate_unreachable(native, model, r)
    return Report(native)


def mode() -> str:
    """The mode DEVCOPY_PROBE names: off, warn (the default) or fail."""
    return _C.mode_from_env("warn")


def check(model, roots=None, **options) -> Report:
    """inspect() under DEVCOPY_PROBE: off skips (an empty report), warn
    prints findings to stderr, fail raises devcopy.ProbeFailure."""
    m = mode()
    if m == "off":
        return Report()
    report = inspect(model, roots, **options)
    enforce(report, m)
    return report


def enforce(report: Report, mode: str) -> None:
    if mode == "off" or not report.has_findings:
        return
    if mode == "fail":
        raise ProbeFailure(report)
    sys.stderr.write(str(report))
    sys.stderr.flush()


def available_memory(device="cuda") -> int:
    """Bytes a loader can still place on `device`: for CUDA the driver's free
    memory plus the caching allocator's reserved-but-unused bytes; for the
    CPU the kernel's MemAvailable. -1 when unknown."""
    try:
        d = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"devcopy.available_memory: not a device: {device!r} ({e})") from None
    if d.type == "cuda" and d.index is None:
        d = torch.device("cuda", torch.cuda.current_device() if torch.cuda.is_available() else 0)
    return _C.available_memory(str(d))


def inspect_distributed(model, group=None, roots=None, timeout=120.0, **options) -> Report:
    """inspect() across the ranks of a torch.distributed process group (the
    default group when None): each rank fingerprints its own storages, and
    every rank gets one report with misplaced-rank-memory,
    replicated-across-ranks and the per-rank memory table (to_json()'s
    "ranks", "replicated", "rank_skew"). A collective: every rank must call
    it. Each of its two all-gathers gives up after `timeout` seconds with a
    ValueError naming the rank and the step.

    Args:
        model: the torch.nn.Module each rank holds.
        group: a torch.distributed.ProcessGroup; None for the default one.
        roots: what else is kept on purpose, as for inspect().
        timeout: seconds each all-gather waits, a finite number > 0.
        options: InspectOptions' fields, as for inspect().
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError("devcopy.inspect_distributed: expected a torch.nn.Module, "
                        f"got {type(model).__name__}")
    if not _number(timeout):
        raise TypeError(f"devcopy.inspect_distributed: timeout={timeout!r}: expected a number of "
                        "seconds")
    if not (math.isfinite(timeout) and 0 < timeout <= _MAX_TIMEOUT):
        raise ValueError(f"devcopy.inspect_distributed: timeout={timeout!r}: expected a number of "
                         f"seconds > 0 and at most {_MAX_TIMEOUT:g}")
    options = _options("inspect_distributed", options)
    if not hasattr(_C, "inspect_distributed"):
        raise RuntimeError("devcopy.inspect_distributed: this build's LibTorch has no c10d headers")
    import torch.distributed as dist
    if group is None:
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError("devcopy.inspect_distributed: torch.distributed is not initialized; "
                               "call init_process_group() first or pass group=")
        group = dist.distributed_c10d._get_default_group()
    elif not isinstance(group, dist.ProcessGroup):
        raise TypeError(f"devcopy.inspect_distributed: group is {_a(type(group).__name__)}; "
                        "expected a torch.distributed.ProcessGroup (new_group()), or None for "
                        "the default group")
    r = Roots(model, roots)
    return Report(_C.inspect_distributed(model, r.tensors, r.modules, r.held, r.state, options,
                                         group, float(timeout)))
