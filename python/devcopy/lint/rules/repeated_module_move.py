"""devcopy-repeated-module-move: a Module moved in its own __init__ (or one
of its members moved there) and again by its owner or by the code that builds
it, through super().to(), an overridden to(), nn.Sequential/ModuleList
members and other files of the package; and a module moved twice in one
function."""
import ast
import types

from .._kinds import MODULE, dotted
from .._moves import (PLACED, builds_moved, module_kind, moved_value, placed_before, placed_by_builder,
                      target_text)

RULE = "devcopy-repeated-module-move"
MESSAGE = ("module '{name}' is moved {target} again; it was already moved at line {{line}}{{where}} "
           "in the constructor of '{{cls}}', so layers rebuilt in between are copied twice; move "
           "the model once, after it is fully built, and leave the device out of the constructor "
           "of '{{cls}}'")
_COPIES = frozenset(("copy.deepcopy", "deepcopy", "copy.copy"))
NOTE = "first moved here, in the constructor of '{cls}'"


def _esc(s):
    return s.replace("{", "{{").replace("}", "}}")


def receiver_key(node):
    """self, self.model, model: the module a move names; None for others."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super":
        return "self"
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = receiver_key(node.value)
        return base + "." + node.attr if base else None
    return None


def module_move(walk, call, meth, recv):
    """(key, target text, place) when `call` moves a Module to a device."""
    if meth not in ("to", "cuda") or not isinstance(call.func, ast.Attribute):
        return None
    node = call.func.value
    key = receiver_key(node)
    is_super = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    if meth == "to":
        kind, place = walk.move_target(call)
        if kind not in ("device", "tensor"):
            return None
    else:
        place = "dev"
    target = target_text(walk, call)
    if recv and recv[0] == MODULE or is_super:
        return key, target, place
    if recv is None and isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            builds_moved(walk, node.func.id, 0):
        return key, target, place  # get_model(...).to(device): a builder's moved module
    # An unknown member or local moved as a statement is a module: a
    # tensor's move would be dropped.
    stmt = walk.stmt
    if recv is None and key and (key.startswith("self.") or "." not in key) and isinstance(stmt, ast.Expr) \
            and stmt.value is call:
        return key, target, place
    return None


def on_call(walk, call, q, meth, recv):
    if meth in ("append", "extend", "insert") and call.args and isinstance(call.func.value, ast.Name):
        placed = moved_value(walk, call.args[-1])
        if placed is not None:  # layers.append(Block().to(device))
            walk.scope.premoved[call.func.value.id] = placed
        return
    found = module_move(walk, call, meth, recv)
    if found is None:
        return
    key, target, place = found
    scope, cls = walk.scope, walk.scope.cls
    fn = scope.func
    in_to_override = cls is not None and fn is not None and fn.name == "to"
    if place != "cpu" and cls is not None and fn is not None and \
            (fn.name == "__init__" or fn.name in cls.init_helpers) and key and \
            (key == "self" or key.startswith("self.")):
        cls.init_moves.append((call, target))
    if _every_iteration(walk, call, key, target, place):
        return
    _twice(walk, call, key, target, place)
    if key:
        scope.moved.add(key)
    if in_to_override or place == "cpu":
        return
    if key == "self" and cls is not None and cls.premoved and fn is not None:
        attr, first = next(iter(cls.premoved.items()))
        walk.report(RULE, call, f"module '{cls.node.name}' is moved to {target} again; its member "
                                f"'{attr}' was already moved at line {first.lineno}, so its layers are "
                                "copied twice; move the model once, after it is fully built",
                    notes=[(walk.path, first.lineno, first.col_offset, f"'{attr}' first moved here")])
        return
    refs, mode = [], "built"
    if key == "self" and cls is not None:
        refs, mode = [(walk.path, cls.node.name)], "owner"
    elif key and key.startswith("self.") and cls is not None and key.count(".") == 1:
        refs = cls.owned.get(key[5:], [])
    elif key and "." not in key:
        refs = scope.built.get(key) or []
    elif key is None:
        if _given_moved(walk, call, target) or _built_moved(walk, call, target):
            return
        refs = walk.built_from(call.func.value)
    if refs:
        name = cls.node.name if key == "self" else key or walk.segment(call.func.value)
        add_event(walk, call, refs, mode, MESSAGE.format(name=_esc(name), target=_esc(f"to {target}")),
                  NOTE)


def _built_moved(walk, call, target):
    """`get_model(...).to(device)` where get_model returns the module it
    already moved (`model = Net(cfg).to(device); return model`)."""
    built = call.func.value
    if not (isinstance(built, ast.Call) and isinstance(built.func, ast.Name) and
            builds_moved(walk, built.func.id, 0)):
        return False
    name = built.func.id
    walk.report(RULE, call, f"module returned by '{name}()' is moved to {target} again; '{name}()' already "
                            "moves it before returning it, so every parameter is walked twice and layers "
                            "rebuilt in between are copied twice; move it in one place")
    return True


def _given_moved(walk, call, target):
    """`Translator(model=load_model(...)).to(device)`: a module built around
    one already on the device is moved again."""
    built = call.func.value
    if not isinstance(built, ast.Call):
        return False
    if dotted(built.func) in _COPIES:
        return True  # copy.deepcopy(net): a new module, already where net is; moving it copies nothing
    for a in list(built.args) + [k.value for k in built.keywords]:
        if not module_kind(walk.kind_of(a)):
            continue  # nn.CrossEntropyLoss(weight=w.to(device)): a tensor argument
        first = moved_value(walk, a) or placed_by_builder(walk, a) or placed_before(walk, a)
        if first is None or _exclusive(walk, first, call):
            continue
        name = walk.segment(a)
        at = types.SimpleNamespace(lineno=call.func.end_lineno, end_lineno=call.end_lineno,  # the '.to(' line
                                   col_offset=call.func.end_col_offset - len(call.func.attr),
                                   end_col_offset=call.end_col_offset)
        walk.report(RULE, at, f"module '{walk.segment(built.func)}(...)' is moved to {target}, but '{name}' "
                              f"it is built around was already moved at line {first.lineno}, so its "
                              "layers are copied twice; move the model once, after it is fully built",
                    notes=[(walk.path, first.lineno, first.col_offset, f"'{name}' first moved here")])
        return True
    return False


def _exclusive(walk, a, b):
    """Whether two nodes lie in opposite branches of one `if` (`elif gpu:
    model = model.cuda(gpu)` / `else: model = DataParallel(model).cuda()`)."""
    def inside(node, body):
        return bool(body) and body[0].lineno <= node.lineno <= body[-1].end_lineno
    for n in ast.walk(walk.scope.func or walk.tree):
        if isinstance(n, ast.If) and (inside(a, n.body) and inside(b, n.orelse) or
                                      inside(b, n.body) and inside(a, n.orelse)):
            return True
    return False


def add_event(walk, node, refs, mode, message, note, moved_message=None, rule=RULE):
    walk.events.append({"rule": rule, "file": walk.path, "refs": [list(r) for r in refs], "mode": mode,
                        "line": node.lineno, "col": node.col_offset, "end_line": node.end_lineno,
                        "end_col": node.end_col_offset, "message": message, "note": note,
                        "moved_before": moved_message is not None, "moved_message": moved_message})


def _twice(walk, call, key, target, place):
    """The same module moved to the same target twice in one function."""
    if key is None:
        return
    scope = walk.scope
    for prev in reversed(scope.moves):
        pkey, ptarget, ppath, pnode = prev
        if pkey != key and not pkey.startswith(key + "."):
            continue
        if ptarget is None or pkey not in scope.moved:
            break  # reassigned since
        if ptarget == PLACED:
            _after_builder(walk, call, key, target, ppath)
            break
        if ptarget != target or opposite(ppath, walk.path_ifs) or _moved_between(walk, key, pnode, call):
            break
        walk.report(RULE, call, f"module '{key}' is moved to {target} again; it was already moved at "
                                f"line {pnode.lineno}, so any layer rebuilt in between is copied twice; "
                                "move it once, after it is fully built",
                    notes=[(walk.path, pnode.lineno, pnode.col_offset, f"first move of '{pkey}' here")])
        break
    scope.moves.append((key, target, walk.path_ifs, call))


def _after_builder(walk, call, key, target, path):
    """`net = net_factory(...)` then `model = net.cuda()`: a builder of the
    file or the package that returns its module moved, moved again."""
    first = walk.scope.moved_at.get(key)
    if not (isinstance(first, ast.Call) and isinstance(first.func, ast.Name) and
            builds_moved(walk, first.func.id, 0)) or opposite(path, walk.path_ifs):
        return
    name = first.func.id
    walk.report(RULE, call, f"module '{key}' returned by '{name}()' is moved to {target} again; '{name}()' "
                            "already moves it before returning it, so every parameter is walked twice and "
                            "layers rebuilt in between are copied twice; move it in one place",
                notes=[(walk.path, first.lineno, first.col_offset, f"'{key}' built and moved by '{name}()' here")])


def _moved_between(walk, key, first, call):
    """A move of `key` between two lines that the walk could not place
    (`discrim_net.to(torch.device('cpu'))` with torch from a star import):
    an offload between the two moves."""
    return any(first.lineno < n.lineno < call.lineno for n in _moves_of(walk.scope.func or walk.tree, key))


def _moves_of(root, key):
    """The `.to()`, `.cpu()` and `.cuda()` calls on `key` under `root`."""
    return (n for n in ast.walk(root) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
            n.func.attr in ("to", "cpu", "cuda") and receiver_key(n.func.value) == key)


def _every_iteration(walk, call, key, target, place):
    """A module that the loop does not change, moved on every iteration: after
    the first, each move walks every parameter again for nothing."""
    loop = walk.in_loop()
    if loop is None or key is None or place == "cpu" or not loop.runs_every_iteration():
        return False
    if not loop.invariant(call.func.value, rebinding=True):  # a module updated in place stays where it is
        return False
    if any(n is not call for n in _moves_of(loop.node, key)):
        return False  # an offload and reload in the loop is deliberate
    walk.report(RULE, call, f"module '{key}' is moved to {target} on every iteration of this loop, "
                            "though it does not change in it; move it once, before the loop",
                notes=[(walk.path, loop.node.lineno, loop.node.col_offset, "loop starts here")])
    return True


def opposite(a, b):
    """Whether two paths of branches (`walk.path_ifs`) part at an `if`: one
    runs its body, the other its `else`."""
    branches = dict(a)
    return any(branches.get(node, branch) != branch for node, branch in b)
