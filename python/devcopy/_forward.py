"""Which watched module is running: global forward hooks push a module's
name (and, with native locations, the probe's scope of that name) on the
calling thread's stack when its forward starts, and pop it when it ends,
also when it raises.

A forward that raises runs no forward hook in torch before 2.1; there the
pre-hook hands forward its own arguments in a tuple subclass (`_Args`, the
same items) whose finalizer pops the entry once the call's frame has ended:
when the exception is handled, or the traceback dropped. Where a later
pre-hook replaced the arguments, the tuple goes while the call still runs;
the entry then waits for the next hook to see its frame gone. From torch
2.1 the hook is registered with always_call and pops it at once.
"""
import inspect
import sys
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

    def __init__(self, owner, name, native, frame=None):
        self.owner, self.name = owner, name
        self.thread = threading.get_ident()
        # The module call's frame (torch < 2.1), by id: a reference would keep
        # the frame, and so the _Args, alive after an exception.
        self.frame = id(frame) if frame is not None else None
        self.stale = False  # to close on its thread's next hook
        self.orphan = False  # its _Args went while the call ran
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
                self.frame = None
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
        running = None
        for entry in self.entries.values():
            if entry.thread == threading.get_ident() and entry.frame is not None:
                running = _running() if running is None else running
                if entry.frame in running:
                    entry.orphan = True
                    continue
            entry.close()


def _running():
    """The ids of the frames running on this thread."""
    ids, f = set(), sys._getframe(1)
    while f is not None:
        ids.add(id(f))
        f = f.f_back
    return ids


def _prune():
    """Closes this thread's entries marked from another thread, and those
    whose call ended without a forward hook (see the module's docstring)."""
    entries = stack()
    if not any(e.stale or e.orphan for e in entries):
        return
    running = _running()
    for entry in [e for e in entries if e.stale or (e.orphan and e.frame not in running)]:
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
        if _ALWAYS_CALL:
            _Entry(owner, name, native)
            return None
        entry = _Entry(owner, name, native, sys._getframe(1))  # _call_impl's
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
