"""inspect(), check() and available_memory(): the probe's own functions on
Python models."""
import sys

import torch

from . import _C
from ._holders import annotate_unreachable
from ._report import ProbeFailure, Report
from ._roots import Roots


def inspect(model, roots=None, **options) -> Report:
    """Inspects `model` (a torch.nn.Module): its parameters, buffers and
    gradients, plus `roots` ({name: tensor | module | optimizer | dict/list
    of them}) kept on purpose. Options are InspectOptions' (gradients,
    allocator, unreachable_threshold, cached_threshold, cached_ratio,
    block_details). Reads only: the model is not changed."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"devcopy.inspect: expected a torch.nn.Module, got {type(model).__name__}")
    r = Roots(model, roots)
    native = _C.inspect(model, r.tensors, r.modules, r.held, options)
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
