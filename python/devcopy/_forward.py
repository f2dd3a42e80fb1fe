"""Which watched module is running: global forward hooks push a module's
name (and, with native locations, the probe's scope of that name) on the
calling thread's stack when its forward starts, and pop it when it ends,
also when it raises.

A forward that raises runs no forward hook in torch before 2.1; there the
pre-hook hands forward its own arguments in a tuple subclass (`_Args`, the
same items) whose finalizer pops the entry when the call's frame is freed:
when the exception is handled, or the traceback dropped. From torch 2.1
the hook is registered with always_call and pops it at once.
"""
import inspect
import threading

from torch.nn.modules import module as _M

from . import _C

_local = threading.local()
_ALWAYS_CALL = "always_call" in inspect.signature(_M.register_module_forward_hook).parameters


def stack():
    """This thread's entered modules, innermost last."""
    entries = getattr(_local, "entries", None)
    if entries is None:
        entries = _local.entries = []
    return entries


def innermost():
    """The name of the innermost watched module running on this thread, or
    None."""
    return next((e.name for e in reversed(stack()) if not e.stale), None)


class _Entry:
    """One watched module's forward running on one thread."""

    def __init__(self, owner, name, native):
        self.owner, self.name = owner, name
        self.thread = threading.get_ident()
        self.stale = False
        self.scope = _C.Scope(name) if native else None
        if self.scope is not None:
            self.scope.enter()
        stack().append(self)

    def close(self):
        """Pops the entry; from another thread (a finalizer run by the
        garbage collector there) it is only marked, and its own thread pops
        it at its next hook: a probe scope must end on its thread."""
        if self.thread != threading.get_ident():
            self.stale = True
            return
        entries = stack()
        for i in range(len(entries) - 1, -1, -1):
            if entries[i] is self:
                del entries[i]
                if self.scope is not None:
                    self.scope.exit()
                return


class _Args(tuple):
    """A module call's positional arguments, unchanged, carrying the entries
    its pre-hooks pushed; freed with the call's frame."""

    def __new__(cls, args):
        self = super().__new__(cls, args)
        self.entries = {}
        return self

    def __del__(self):
        for entry in self.entries.values():
            entry.close()


def _prune():
    for entry in [e for e in stack() if e.stale]:
        entry.stale = False
        entry.close()


def close_all(owner):
    """Pops every entry `owner` pushed on this thread (its observation
    ends)."""
    for entry in [e for e in reversed(stack()) if e.owner is owner]:
        entry.close()


def hook(owner, names, native):
    """Registers the global hooks for the modules in `names` ({id: name});
    returns their handles."""

    def pre(mod, args):
        name = names.get(id(mod))
        if name is None:
            return None
        _prune()
        entry = _Entry(owner, name, native)
        if _ALWAYS_CALL:
            return None
        args = args if isinstance(args, _Args) else _Args(args)
        args.entries[owner] = entry
        return args

    def post(mod, args, _output):
        name = names.get(id(mod))
        if name is None:
            return
        _prune()
        entry = args.entries.pop(owner, None) if isinstance(args, _Args) else None
        if entry is None:  # always_call, or a later pre-hook replaced the arguments
            entry = next((e for e in reversed(stack()) if e.owner is owner and e.name == name), None)
        if entry is not None:
            entry.close()

    if _ALWAYS_CALL:
        return [_M.register_module_forward_pre_hook(pre),
                _M.register_module_forward_hook(post, always_call=True)]
    return [_M.register_module_forward_pre_hook(pre), _M.register_module_forward_hook(post)]
