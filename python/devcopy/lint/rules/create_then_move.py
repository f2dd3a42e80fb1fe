"""devcopy-create-then-move: a torch factory made on the host and moved at
once (`torch.zeros(n).to(device)`, `.cuda()`); the fix names the device in
the factory."""
import ast

from .._kinds import DTYPE_METHODS, FACTORIES, LIKE_FACTORIES, place_of

RULE = "devcopy-create-then-move"
# Casts and views that run as well on the device, between factory and move.
# The legacy constructors: a size or a constant, made on the host.
LEGACY = frozenset(t + "Tensor" for t in ("", "Float", "Double", "Half", "BFloat16", "Long", "Int",
                                          "Short", "Char", "Byte", "Bool"))
_BETWEEN = DTYPE_METHODS | frozenset(
    "unsqueeze squeeze view reshape repeat expand expand_as view_as t transpose permute flatten contiguous "
    "narrow select fill_ zero_ mul_ add_ sub_ div_ uniform_ normal_ clamp_".split())


def _factory(walk, node):
    """The factory call at the bottom of `node`'s chain of casts and views."""
    steps = 0
    while isinstance(node, (ast.Call, ast.Name)):
        if isinstance(node, ast.Name):  # x = torch.zeros(n) ... x = x.cuda(), nothing reading x before
            entry = walk.scope.fresh.get(node.id)
            if entry is None or entry[1] is not node or not _rebinds(walk.stmt, node.id):
                return None  # read before, or kept beside the copy (y = x.cuda())
            return entry[0], entry[3], steps
        q = walk.imports.qual(node.func)
        if q is not None:
            parts = q.split(".")
            if len(parts) == 2 and parts[0] == "torch" and \
                    (parts[1] in FACTORIES or parts[1] in LIKE_FACTORIES or parts[1] in LEGACY):
                return node, q, steps
            return None
        f = node.func
        if not isinstance(f, ast.Attribute):
            return None
        if f.attr == "to":
            if walk.move_target(node)[0] != "dtype":
                return None
        elif f.attr not in _BETWEEN:
            return None
        elif f.attr.endswith("_") and any(not isinstance(a, ast.Constant) for a in node.args):
            return None  # a fill from a tensor is not followed
        node, steps = f.value, steps + 1
    return None


def _rebinds(stmt, name):
    return isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets)


def _shape_arg(node):
    """An argument that reads as a size: an int, len(...), n * 2, range(n)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in ("len", "sum", "int", "max", "min", "range")
    if isinstance(node, ast.BinOp):  # n * 2, not [[start]] * k
        return not any(isinstance(n, (ast.List, ast.Tuple, ast.ListComp)) for n in ast.walk(node))
    return False


def _legacy_uploads(factory):
    """torch.Tensor(3, 4) and torch.FloatTensor([0.]) make a tensor from
    nothing; torch.Tensor(obs) uploads data."""
    args = factory.args
    if len(args) >= 2 or (len(args) == 1 and _shape_arg(args[0])):
        return False
    if len(args) == 1 and isinstance(args[0], (ast.List, ast.Tuple)):
        elts = args[0].elts
        return len(elts) > 1 or not all(isinstance(e, ast.Constant) for e in elts)
    return True


def _uploads_data(walk, factory, q):
    """torch.tensor(values) of real host data: uploading it is the point."""
    if q.split(".")[1] in LEGACY:
        return _legacy_uploads(factory)
    if q.endswith("_like"):
        k = walk.kind_of(factory.args[0]) if factory.args else None
        return place_of(k) != "cpu"  # made where its argument is
    if q not in ("torch.tensor",):
        return False
    if not factory.args:
        return True
    data = factory.args[0]
    if isinstance(data, (ast.List, ast.Tuple)):
        return len(data.elts) >= 2 or any(not isinstance(e, ast.Constant) for e in data.elts)
    return not isinstance(data, ast.Constant)


def _remember(walk, call, q):
    """`x = torch.zeros(n)`: a factory's result held in a local, moved later."""
    stmt = walk.stmt
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
        return
    found = _factory(walk, stmt.value)
    if found is None or found[0] is not call:
        return
    if any(k.arg == "device" for k in call.keywords) or _uploads_data(walk, call, q):
        return
    walk.scope.fresh[stmt.targets[0].id] = [call, None, stmt, q]


def on_call(walk, call, q, meth, recv):
    if q is not None and q.startswith("torch.") and q.count(".") == 1:
        _remember(walk, call, q)
        return
    if meth not in ("to", "cuda") or walk.facts.cpu_fixed:
        return
    if meth == "to":
        kind, place = walk.move_target(call)
        if kind != "device" or place == "cpu":
            return
        if place is None and not walk.facts.uses_device:
            return
    found = _factory(walk, call.func.value)
    if found is None:
        return
    factory, fname, _ = found
    if any(k.arg == "device" for k in factory.keywords) or _uploads_data(walk, factory, fname):
        return
    target = "'cuda'" if meth == "cuda" else walk.segment(call.args[0] if call.args else call.keywords[0].value)
    short = fname.split(".")[1]
    if factory.lineno < call.lineno and not _inside(factory, call):  # through a local
        walk.report(RULE, call, f"'{short}()' at line {factory.lineno} makes the tensor on the host and "
                                f"'{meth}()' then copies it to {target}; create it there directly: "
                                f"{fname}(..., device={target})",
                    notes=[(walk.path, factory.lineno, factory.col_offset, "made on the host here")])
        return
    walk.report(RULE, factory,
                f"'{short}()' makes the tensor on the host and '{meth}()' then copies it to "
                f"{target}; create it there directly: {fname}(..., device={target})",
                fixes=_fix(walk, call, factory, target, meth))


def _inside(node, outer):
    return (outer.lineno, outer.col_offset) <= (node.lineno, node.col_offset) and \
        (node.end_lineno, node.end_col_offset) <= (outer.end_lineno, outer.end_col_offset)


def _fix(walk, call, factory, target, meth):
    """device= into the factory's call, and the move dropped: only for a
    plain .to(device) / .cuda() with nothing else in it."""
    if meth == "to" and len(call.args) + len(call.keywords) != 1:
        return []
    if call.keywords and call.keywords[0].arg != "device":
        return []
    if meth == "cuda" and (call.args or call.keywords):
        return []
    name = factory.func.attr if isinstance(factory.func, ast.Attribute) else factory.func.id
    if name in LEGACY:
        return []  # the legacy constructors take no device=
    if factory.end_lineno != factory.lineno or call.end_lineno != factory.end_lineno:
        return []
    line = walk.lines[factory.lineno - 1]
    close = _utf8_col(line, factory.end_col_offset) - 1  # the factory's ')'
    if close < 0 or line[close] != ")":
        return []
    sep = ", " if factory.args or factory.keywords else ""
    receiver_end = _utf8_col(line, call.func.value.end_col_offset)
    call_end = _utf8_col(line, call.end_col_offset)
    # Two edits on one line, as (line, start, end, text) in characters.
    return [(factory.lineno, receiver_end, call_end, ""),
            (factory.lineno, close, close, f"{sep}device={target}")]


def _utf8_col(line, byte_col):
    """ast's byte offset within a line -> character index."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))
