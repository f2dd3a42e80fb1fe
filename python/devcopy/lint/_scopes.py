"""What the walk keeps per class and per function: a class's members and
the moves its constructor makes, a scope's names, kinds and module moves."""
import ast


class ClassFacts:
    """What one class says about itself: bases, members, moves in __init__."""

    def __init__(self, node, is_module):
        self.node, self.is_module = node, is_module
        self.members = {}       # attr -> kind
        self.owned = {}         # attr -> list of class refs built into it
        self.init_moves = []    # (node, target text): moves of self or members in __init__
        self.init_helpers = set()  # methods __init__ calls (`self.build_model()`): part of it
        self.registered = set()  # parameters and buffers: an optimizer changes them
        self.premoved = {}  # member -> the move of a module before it became the member
        self.stateful = False  # holds layers or tensors (else a move copies nothing)
        self.bases = []  # refs of base classes of the file or the package


def init_helpers(methods):
    """The methods `__init__` calls on `self`, and those they call in turn:
    `self.build_model()` moving `self.unet` builds the instance as
    `__init__` does."""
    by_name = {m.name: m for m in methods}
    found, todo = set(), [by_name["__init__"]] if "__init__" in by_name else []
    while todo:
        for n in ast.walk(todo.pop()):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                    isinstance(n.func.value, ast.Name) and n.func.value.id == "self" and \
                    n.func.attr in by_name and n.func.attr not in found and n.func.attr != "__init__":
                found.add(n.func.attr)
                todo.append(by_name[n.func.attr])
    return found


class Scope:
    """What the walk knows inside one function (or at module level): the
    kinds of its names and the module moves made so far, in order."""

    def __init__(self, func, cls, outer=None):
        self.func, self.cls = func, cls
        self.env = dict(outer.env) if outer else {}
        self.built = dict(outer.built) if outer else {}  # name -> class refs it was built from
        self.moves = []   # (key, target, path, node): module moves and rebindings, in order
        self.moved = set()  # receivers moved so far (keys)
        self.moved_at = {}  # name -> the node that put its module on the device
        self.maybe_moved = {}  # name -> `get_model(...).cuda()`: moved, if it is a module
        self.premoved = {}  # local list -> a module moved before it was put there
        self.fresh = {}  # local -> create_then_move.Held: a factory's host tensor until its move
        self.defs = dict(outer.defs) if outer else {}  # functions defined inside, walked: `def create_model():`
        self.returns = None
        self.moved_returned = None  # the move of the module it returns


def parameter_names(fn):
    """The names of a function's parameters (none for the module's top level)."""
    if fn is None:
        return frozenset()
    a = fn.args
    return frozenset(p.arg for p in a.posonlyargs + a.args + a.kwonlyargs)
