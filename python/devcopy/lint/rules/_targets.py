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
