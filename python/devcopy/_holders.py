"""Who holds it: for device memory nothing reachable from the model holds,
the Python objects that keep the stale tensors alive, as referrer chains
(gc.get_referrers) from an anchor the user can name and delete: a module
attribute, a global, a local of a live frame, a closure cell, an exception's
traceback, or a list/dict reached from one of them."""
import gc
import os
import sys
import types
import warnings
from dataclasses import dataclass
from typing import List, Tuple

import torch

from . import _C
from ._roots import Roots, named_modules, named_tensors

_HERE = os.path.dirname(os.path.abspath(__file__))
_MAX_DEPTH = 8
_MAX_NODES = 20000


@dataclass(frozen=True)
class Holder:
    """A tensor nothing reachable holds, and the chains that keep it alive."""
    tensor: str        # "float [4096, 4096] on cuda:0"
    bytes: int
    device: str
    chains: Tuple[str, ...]  # "module global __main__.stash -> [3]"


def _storage(t):
    try:
        s = t.untyped_storage()
    except AttributeError:  # torch 1.x
        s = t.storage()
    return s.data_ptr(), s.nbytes()


def _describe(t):
    return f"{str(t.dtype).replace('torch.', '')} {list(t.shape)} on {t.device}"


def _reachable(model, roots):
    ptrs = set()

    def add(t):
        if isinstance(t, torch.Tensor) and t.layout == torch.strided and t.device.type != "meta":
            ptrs.add(_storage(t)[0])
            if t.grad is not None:
                ptrs.add(_storage(t.grad)[0])

    for m in [model] + [m for _, m in roots.modules]:
        for _, t in named_tensors(m, "_parameters") + named_tensors(m, "_buffers"):
            add(t)
    for _, t in roots.tensors + roots.held + roots.state:
        add(t)
    return ptrs


def _ours(obj):
    return isinstance(obj, types.FrameType) and obj.f_code.co_filename.startswith(_HERE)


def _function_of(cell):
    for tup in gc.get_referrers(cell):
        if isinstance(tup, tuple):
            for fn in gc.get_referrers(tup):
                if isinstance(fn, types.FunctionType) and fn.__closure__ is tup:
                    return fn
    return None


def _live_frames():
    """Ids of the frames running now, and their locals by the id of the
    value: a running frame does not show its locals to the garbage collector
    (CPython 3.11+), so they are looked up here."""
    live, local = set(), {}
    for f in sys._current_frames().values():
        while f is not None:
            live.add(id(f))
            if not f.f_code.co_filename.startswith(_HERE):
                for name, value in f.f_locals.items():
                    local.setdefault(id(value), (f, name))
            f = f.f_back
    return live, local


def _anchor(obj, path, names, live):
    """`path` (".cache[3]") named from `obj` when `obj` is something a user
    can point at and delete, else None. A finished frame is no anchor: what
    holds it (a traceback) is."""
    if isinstance(obj, types.FrameType) and id(obj) in live:
        code = obj.f_code
        return f"local {path.lstrip('.')} of {code.co_name}() at {code.co_filename}:{obj.f_lineno}"
    if isinstance(obj, types.TracebackType):
        code = obj.tb_frame.f_code
        return (f"an exception's traceback: local {path.lstrip('.')} of {code.co_name}() at "
                f"{code.co_filename}:{obj.tb_lineno} (the exception is still referenced: "
                "sys.last_traceback, a stored exception, or a logger)")
    if isinstance(obj, types.CellType):
        fn = _function_of(obj)
        where = f" of {fn.__qualname__}()" if fn is not None else ""
        return f"closure variable{where} {path}"
    if isinstance(obj, torch.nn.Module):
        if id(obj) in names:
            return f"{names[id(obj)]}{path} (an attribute, not a parameter or buffer)"
        return f"a {type(obj).__name__} module's {path.lstrip('.')}"
    if isinstance(obj, dict):
        for name, mod in list(sys.modules.items()):
            if getattr(mod, "__dict__", None) is obj:
                return f"global {name}{path}"
    return None


def _edge(parent, child):
    """How `parent` refers to `child`: ".attr", "[key]", "[i]", or ""."""
    if isinstance(parent, types.FrameType):
        items = parent.f_locals.items()
    elif isinstance(parent, dict):
        items = parent.items()
    elif isinstance(parent, (list, tuple)):
        items = enumerate(parent)
    elif isinstance(parent, types.CellType):
        return ""
    elif hasattr(parent, "__dict__") and not isinstance(parent, type):
        if vars(parent) is child:
            return ""
        items = vars(parent).items()
    else:
        return ""
    for k, v in items:
        if v is child:
            if isinstance(k, int) and isinstance(parent, (list, tuple)):
                return f"[{k}]"
            return f".{k}" if isinstance(k, str) and k.isidentifier() else f"[{k!r}]"
    return ""


def _chains(target, names, limit=3):
    """Up to `limit` referrer chains from an anchor down to `target`,
    breadth first (the shortest first)."""
    found, frontier, seen = [], [(target, "")], {id(target)}
    nodes = 0
    live, local = _live_frames()
    for _ in range(_MAX_DEPTH):
        nxt = []
        own = {id(found), id(frontier), id(seen), id(nxt)}
        for obj, path in frontier:
            if id(obj) in local:
                frame, name = local[id(obj)]
                found.append(_anchor(frame, f".{name}{path}", names, live))
                if len(found) >= limit:
                    return found
            for ref in gc.get_referrers(obj):
                if id(ref) in seen or id(ref) in own or _ours(ref):
                    continue
                seen.add(id(ref))
                nodes += 1
                step = _edge(ref, obj) + path
                name = _anchor(ref, step, names, live)
                if name is not None:
                    found.append(name)
                    if len(found) >= limit:
                        return found
                elif isinstance(ref, (dict, list, tuple, set, types.CellType, types.TracebackType, types.FrameType)) \
                        or (hasattr(ref, "__dict__") and not isinstance(ref, (type, types.ModuleType))):
                    nxt.append((ref, step))
                if nodes > _MAX_NODES:
                    return found
        frontier = nxt
    return found


def holders(model, roots=None, device=None) -> List[Holder]:
    """The tensors Python holds on `device` (all devices when None) that are
    not reachable from `model` and `roots`, largest first, each with the
    chains of objects that keep it alive.

    Args:
        model: the torch.nn.Module whose tensors are reachable.
        roots: what else is kept on purpose, as for devcopy.inspect().
        device: a torch.device or its name ("cuda:0"); None for all.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"devcopy.holders: expected a torch.nn.Module, got {type(model).__name__}")
    r = roots if isinstance(roots, Roots) else Roots(model, roots)
    try:
        want = torch.device(device) if device is not None else None
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"devcopy.holders: device={device!r} is not a device ({e})") from None
    reachable = _reachable(model, r)
    names = {id(m): ("model." + n if n else "model") for n, m in named_modules(model)}
    stale = {}
    with warnings.catch_warnings():
        # isinstance() on every live object touches deprecated module
        # attributes (torch.distributed.reduce_op) that warn when read.
        warnings.simplefilter("ignore")
        objects = [o for o in gc.get_objects() if isinstance(o, torch.Tensor)]
    for obj in objects:
        if not isinstance(obj, torch.Tensor) or obj.layout != torch.strided or obj.device.type == "meta":
            continue
        if want is not None and (obj.device.type != want.type or
                                 (want.index is not None and obj.device.index != want.index)):
            continue
        ptr, nbytes = _storage(obj)
        if ptr == 0 or ptr in reachable or ptr in stale:
            continue
        stale[ptr] = (obj, nbytes)
    out = []
    for obj, nbytes in sorted(stale.values(), key=lambda x: -x[1]):
        chains = _chains(obj, names)
        if chains:
            out.append(Holder(_describe(obj), nbytes, str(obj.device), tuple(chains)))
    return out


def annotate_unreachable(native, model, roots, per_finding=8):
    """Adds "held by" lines to each unreachable-allocation finding."""
    extra = {}
    for i, f in enumerate(native.findings):
        if f.kind != "unreachable-allocation" or not f.devices:
            continue
        found = holders(model, roots, f.devices[0])
        lines = []
        for h in found[:per_finding]:
            lines.append(f"held by Python: {h.tensor} ({_C.format_bytes(h.bytes)}) through "
                         + "; ".join(h.chains))
        if len(found) > per_finding:
            lines.append(f"... and {len(found) - per_finding} more tensors held from Python")
        if lines:
            extra[i] = lines
    return native.with_details(extra)
