"""Which watched module made a copy: read from the copying thread's frames
when the copy happens, never from hooks on module calls.

A copy made inside `model.blocks[3].forward` has that module as `self` of one
of the running frames (its own method, or torch's `_call_impl`). Only copies
that may become findings ask (the probe calls `copy_module` through its scope
hook), so modules cost nothing while they run, an exception inside `forward`
leaves nothing behind (the frame is simply gone), and entering `observe(model)`
does not walk the model: its module names are built at the first question.
"""
import sys
import threading

_lock = threading.Lock()
_watched = []  # the running observations that name modules: [_Names]


class _Names:
    """One observation's model: {id(module): (module, name)}, built when
    first asked. The module is kept beside its id so a reused id (a module
    freed during the block) is never mistaken for it."""

    def __init__(self, model):
        self._model = model
        self._names = None

    def get(self, module):
        if self._names is None:
            from ._roots import named_modules
            self._names = {id(m): (m, n) for n, m in named_modules(self._model) if n}
        found = self._names.get(id(module))
        return found[1] if found is not None and found[0] is module else None


def watch(model):
    """Starts naming `model`'s modules in copies; returns the token that
    `unwatch` takes."""
    names = _Names(model)
    with _lock:
        _watched.append(names)
    return names


def unwatch(token):
    """Stops naming the modules `watch` registered for `token`."""
    with _lock:
        if token in _watched:
            _watched.remove(token)


def module_at(frame):
    """The name of the innermost watched module running at `frame` or above
    it, or None.

    Args:
        frame: the innermost frame to look at (a frame object or None).
    """
    watched = list(_watched)
    if not watched:
        return None
    f = frame
    while f is not None:
        code = f.f_code
        if code.co_argcount and code.co_varnames[0] == "self":
            owner = f.f_locals.get("self")
            if owner is not None:
                for names in reversed(watched):  # the latest observation first
                    name = names.get(owner)
                    if name is not None:
                        return name
        f = f.f_back
    return None


def copy_module():
    """The probe's scope hook: the module running on the calling thread."""
    return module_at(sys._getframe(1))
