"""One element of an unchanged tensor read per iteration, for
devcopy-host-sync-in-loop: `out[i].item()`, `images[i].mul(255).cpu()`,
the element a loop over a device tensor yields."""
import ast
import types

from .._kinds import TENSOR
from .._scopes import parameter_names

# Element-wise views and casts before a per-element copy: still one element.
_ELEMENT_VIEWS = frozenset("mul clamp byte float permute detach contiguous".split())


def read_line(call):
    """Where a read split over a chained call is: the line of its `.cpu()`."""
    f = getattr(call, "func", None)  # f"{v:.4f}" has none
    if not isinstance(f, ast.Attribute) or f.end_lineno == call.lineno:
        return call
    return types.SimpleNamespace(lineno=f.end_lineno, end_lineno=call.end_lineno, end_col_offset=call.end_col_offset,
                                 col_offset=f.end_col_offset - len(f.attr))


def per_element(walk, loop, tensor, meth):
    """One element of a tensor that does not change, per iteration: `out[i]
    .item()` (a parameter of a Module's method counts as a tensor, as
    forward's do), or the element a loop over a device tensor yields. The
    tensor whose elements are read, or None."""
    while meth != "item" and isinstance(tensor, ast.Call) and isinstance(tensor.func, ast.Attribute) and \
            tensor.func.attr in _ELEMENT_VIEWS:
        tensor = tensor.func.value  # images[i].mul(255).byte().permute(1, 2, 0).cpu(): still one element
    if isinstance(tensor, ast.Name) and tensor.id not in loop.targets:
        values = loop.assigned.get(tensor.id, ())
        if len(values) == 1 and isinstance(values[0], ast.Subscript):
            tensor = values[0]  # `row = tokens[k, begin:]` then `row.tolist()`: still one row
    slices = []
    while isinstance(tensor, ast.Subscript) and isinstance(tensor.value, ast.Subscript):
        slices.append(tensor.slice)  # pred[i][j]: one element all the same
        tensor = tensor.value
    if slices and meth not in (None, "item"):
        return None  # gifs[i][j].cpu(): a slice for its own output, not a number
    if isinstance(tensor, ast.Subscript) and isinstance(tensor.value, ast.Name):
        base = tensor.value.id
        kind = walk.lookup(base)
        # Of unknown kind: `seq[i].item()`, or `x[m, 0].cpu()` (a list takes no
        # tuple index; `images[i].cpu()` may walk a list of tensors).
        unknown = meth == "item" or meth == "cpu" and isinstance(tensor.slice, ast.Tuple)
        if not (kind and kind[0] == TENSOR or kind is None and unknown and not slices and
                not _over_keys(loop) and _unknown_tensor(walk, tensor.value)):  # preds[8][i]: a tuple's member
            return None
        slices.append(tensor.slice)
        if loop.invariant(tensor.value):
            return tensor.value if not all(loop.invariant(s) for s in slices) else None
        if len(slices) > 1 or not loop.invariant(tensor.slice):
            return None
        tensor = tensor.value  # `for pred in preds: pred[0].cpu()`: a part of the element the loop yields
    elif slices:
        return None
    if not isinstance(tensor, ast.Name) or isinstance(loop.node, ast.While) or tensor.id not in loop.targets:
        return None
    it, target = loop.node.iter, loop.node.target
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" and it.args:
        it = it.args[0]  # for j, v in enumerate(t): v is the element
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2 and _binds(target.elts[1], tensor.id)):
            return None
    elif isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "zip":
        # for suffix, v in zip(names, t): v is an element of t
        if not (isinstance(target, ast.Tuple) and len(target.elts) == len(it.args)):
            return None
        at = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Name) and e.id == tensor.id]
        if len(at) != 1:
            return None
        it = it.args[at[0]]
    elif not _binds(target, tensor.id):  # for v in t, for (start, end) in t: rows of t
        return None
    k = walk.kind_of(it)
    if not (k and k[0] == TENSOR and k[1] != "cpu" or k is None and meth == "item" and _unknown_tensor(walk, it)):
        return None
    # A for loop iterates what `it` was when it began: rebinding the name or
    # writing the element just read (`labels[i] = lookup[lbl.item()]`) does
    # not change what it yields.
    return it


def _binds(target, name):
    """Whether a loop target binds `name` to an element of what it iterates,
    or to a part of one (`(start, end)`: the two numbers of a row)."""
    if isinstance(target, ast.Name):
        return target.id == name
    return isinstance(target, (ast.Tuple, ast.List)) and any(_binds(e, name) for e in target.elts)


def _unknown_tensor(walk, it):
    """What a loop iterates, of a kind the file does not say, whose elements
    the loop reads with `.item()`: only a tensor's (or an array's, known from
    its constructor) elements have one, so it is taken for a tensor when it
    is the function's own input: a parameter, a field of `self`, a slice of
    either (`orig_y = buffer_y[ind]`) or arithmetic on them. Not what a call
    handed back: the call may have copied it to the host."""
    while isinstance(it, (ast.Attribute, ast.Subscript)):
        it = it.value
    fn = walk.scope.func
    if not isinstance(it, ast.Name) or fn is None:
        return False
    if it.id == "self":
        return True
    values = [n.value for n in ast.walk(fn) if isinstance(n, ast.Assign)
              for t in n.targets if isinstance(t, ast.Name) and t.id == it.id]
    if not values:
        return it.id in parameter_names(fn)
    if len(values) != 1:
        return False
    value = values[0]
    if isinstance(value, ast.BinOp):  # sample_dif = noisy - clean
        return all(_unknown_tensor(walk, v) for v in (value.left, value.right))
    return isinstance(value, ast.Subscript) and _unknown_tensor(walk, value)


def _over_keys(loop):
    """A loop over a mapping's keys (`for k in list(state_dict.keys())`): what
    it indexes with them is a dict, not a tensor."""
    it = getattr(loop.node, "iter", None)
    return it is not None and any(isinstance(n, ast.Attribute) and n.attr in ("keys", "items")
                                  for n in ast.walk(it))
