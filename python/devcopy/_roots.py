"""Roots: what holds memory on purpose, named. Tensors and modules take part
in duplicate detection (as in C++); optimizer state is reachable only."""
import torch

from ._report import Report  # noqa: F401  (keeps import order simple)


def _walk(name, obj, out, seen):
    if isinstance(obj, torch.Tensor):
        out.tensors.append((name, obj))
    elif isinstance(obj, torch.nn.Module):
        out.modules.append((name, obj))
    elif isinstance(obj, torch.optim.Optimizer):
        _optimizer(name, obj, out)
    elif isinstance(obj, dict):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        for k, v in obj.items():
            _walk(f"{name}.{k}", v, out, seen)
    elif isinstance(obj, (list, tuple)):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        for i, v in enumerate(obj):
            _walk(f"{name}.{i}", v, out, seen)
    elif obj is not None:
        raise TypeError(f"devcopy: root '{name}' is a {type(obj).__name__}; roots are tensors, "
                        "modules, optimizers, or dicts/lists/tuples of them")


def _optimizer(name, opt, out):
    """The optimizer's parameters and every tensor in its state, named by the
    parameter's name in the inspected model when it has one."""
    for g, group in enumerate(opt.param_groups):
        for p, param in enumerate(group["params"]):
            out.held.append((f"{name}.param_groups.{g}.{p}", param))
    for i, (param, state) in enumerate(opt.state.items()):
        label = out.param_names.get(id(param), str(i))
        for key, value in state.items():
            if isinstance(value, torch.Tensor):
                out.state.append((f"{name}.state.{label}.{key}", value))


class Roots:
    def __init__(self, model, roots):
        self.tensors, self.modules, self.held, self.state = [], [], [], []
        self.param_names = {}
        if roots is None:
            return
        if any(isinstance(v, torch.optim.Optimizer) for v in _values(roots)):
            self.param_names = {id(p): n for n, p in named_tensors(model, "_parameters")}
        items = roots.items() if isinstance(roots, dict) else roots
        seen = set()
        for item in items:
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
                raise TypeError("devcopy: roots must be a dict {name: object} or (name, object) "
                                f"pairs, got {type(item).__name__}")
            _walk(item[0], item[1], self, seen)


def _values(roots):
    if isinstance(roots, dict):
        return list(roots.values())
    return [item[1] for item in roots if isinstance(item, tuple) and len(item) == 2]


def _table(module, name):
    """A module's _parameters, _buffers or _modules, read as the extension
    reads them: from its instance dict first, so a subclass that overrides
    attribute access, or never ran Module.__init__ (no tables: empty), is
    walked like any other."""
    table = vars(module).get(name)
    if table is None:
        try:
            table = object.__getattribute__(module, name)
        except AttributeError:
            return {}
    return table if table is not None else {}


def named_modules(model):
    """(name, module) for `model` ("") and each submodule, pre-order, each
    module once, as torch's named_modules() gives them."""
    out, seen, todo = [], set(), [("", model)]
    while todo:
        name, m = todo.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        out.append((name, m))
        children = [(f"{name}.{k}" if name else k, c) for k, c in _table(m, "_modules").items()
                    if c is not None]
        todo.extend(reversed(children))
    return out


def named_tensors(model, table):
    """(name, tensor) of one table ("_parameters" or "_buffers") of every
    module in `model`."""
    return [(f"{name}.{k}" if name else k, t) for name, m in named_modules(model)
            for k, t in _table(m, table).items() if t is not None]
