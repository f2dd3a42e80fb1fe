"""Where `.to(x)` sends a factory's tensor when the file does not say what
`x` is: a parameter or a name unpacked from a tuple (a batch, a sample) is a
tensor as often as not, a name spelt like a dtype is not."""
import ast
import re

# dtype, torch_dtype, ttype, precision, dt, fp16, half, float_type, int_dtype
_DTYPE_NAME = re.compile(r"dtype|type|prec|^dt$|^fp|half|float|double|^int|bf16|^bool|^long|^kind$|^mode$")


def maybe_tensor(walk, node):
    """A name of unknown kind that `.to(name)` may take as a tensor: a
    parameter with no annotation and no default but None, or a name bound
    only as an element of a tuple (`state, action, reward = batch`); not one
    named for a dtype."""
    fn = walk.scope.func
    if type(node) is not ast.Name or fn is None or _DTYPE_NAME.search(node.id.lower()):
        return False
    a = fn.args
    params = a.posonlyargs + a.args
    defaults = [None] * (len(params) - len(a.defaults)) + list(a.defaults)
    for p, d in zip(params + a.kwonlyargs, defaults + list(a.kw_defaults)):
        if p.arg == node.id:
            return p.annotation is None and (d is None or type(d) is ast.Constant and d.value is None)
    unpacked, plain = _bindings(fn)
    return node.id in unpacked and node.id not in plain


def _bindings(fn):
    """(names bound only as elements of a tuple target, names bound otherwise)
    in the function, once per function."""
    found = getattr(fn, "devcopy_tuple_names", None)
    if found is None:
        unpacked, plain = set(), set()
        for n in ast.walk(fn):
            t = type(n)
            targets = n.targets if t is ast.Assign else [n.target] if t in (ast.For, ast.AugAssign, ast.AnnAssign) \
                else [n.target] if t is ast.NamedExpr else []
            for target in targets:
                if type(target) in (ast.Tuple, ast.List):
                    unpacked.update(e.id for e in target.elts if type(e) is ast.Name)
                elif type(target) is ast.Name:
                    plain.add(target.id)
        found = fn.devcopy_tuple_names = (frozenset(unpacked), frozenset(plain))
    return found


# Casts and views a batch element may go through and still be the loader's host tensor.
_KEEPS_PLACE = frozenset("float double half long int bool byte contiguous view reshape squeeze unsqueeze".split())


def host_batch_device(walk, node):
    """`.to(batch_y.device)` of a name the function binds only as the target
    of its loop over a loader, and by casts of itself (`batch_y =
    batch_y.float()`), never moved: the host, so nothing is copied."""
    if not (type(node) is ast.Attribute and node.attr == "device" and type(node.value) is ast.Name):
        return False
    fn, name, looped = walk.scope.func, node.value.id, False
    if fn is None:
        return False
    for n in ast.walk(fn):
        t = type(n)
        if t in (ast.For, ast.AsyncFor):
            if any(type(e) is ast.Name and e.id == name for e in ast.walk(n.target)):
                if (walk.kind_of(n.iter) or ("",))[0] in ("T", "TT"):
                    return False  # the rows of a tensor, wherever it is
                looped = True
        elif t is ast.Assign or t is ast.AugAssign or t is ast.AnnAssign:
            for target in n.targets if t is ast.Assign else [n.target]:
                if any(type(e) is ast.Name and e.id == name for e in ast.walk(target)) and \
                        not (type(target) is ast.Name and _self_cast(n.value, name)):
                    return False
    return looped


def _self_cast(value, name):
    """`x.float()`, `x.long().view(-1)`: `x` cast or viewed, not moved."""
    while type(value) is ast.Call and type(value.func) is ast.Attribute and value.func.attr in _KEEPS_PLACE:
        value = value.func.value
    return type(value) is ast.Name and value.id == name
