"""devcopy-redundant-chain: two copying calls in a row where one is cheaper:
round trips, the same target twice, a copy and a clone, a transfer and then
a narrowing cast, a temporary made only to feed copy_()."""
import ast

from .._kinds import MODULE, NARROW_DTYPES

RULE = "devcopy-redundant-chain"
_NARROW_METHODS = {"half": "float16", "bfloat16": "bfloat16", "byte": "uint8", "char": "int8",
                   "short": "int16", "bool": "bool"}


def _step(walk, call):
    """What one call in a chain does: ('host'|'dev'|'clone'|'cast'|None, detail)."""
    f = call.func
    if not isinstance(f, ast.Attribute):
        return None, None
    m = f.attr
    if m == "cpu" and not call.args:
        return "host", "cpu()"
    if m == "cuda":
        return "dev", "cuda()" if not call.args else walk.segment(call)
    if m == "clone":
        return "clone", None
    if m == "type" and call.args:  # .type(torch.FloatTensor): a CPU type, so also a move
        q = walk.imports.qual(call.args[0]) or ""
        if q.startswith("torch.cuda.") and q.endswith("Tensor"):
            return "dev", q
        if q.startswith("torch.") and q.endswith("Tensor") and q.count(".") == 1:
            return "host", q
    if m in _NARROW_METHODS:
        return "cast", _NARROW_METHODS[m]
    if m == "float" and not call.args:
        return "float", None  # narrowing only from a 64-bit tensor (_wide)
    if m == "to":
        kind, place = walk.move_target(call)
        if kind == "device":
            if place is None and walk.facts.names_accelerator:
                place = "dev"  # a device chosen at run time, in a program that uses one
            where = {"cpu": "host", "dev": "dev"}.get(place, "somewhere")
            return where, ast.unparse(call.args[0]) if call.args else walk.segment(call)
        if kind == "dtype":
            return "cast", place
    return None, None


def on_call(walk, call, q, meth, recv):
    if meth is None or walk.facts.cpu_fixed:
        return
    inner = call.func.value
    if meth == "copy_" and call.args:
        return _copy_into(walk, call)
    outer_kind, outer_detail = _step(walk, call)
    if outer_kind is None:
        return
    through_detach = False
    shared = _shared_view(inner)  # x.clone().detach().cpu(), x.clone().data.cpu(): the clone is still copied
    if shared is not None and (outer_kind == "clone" or outer_kind in ("host", "dev") and _is_clone(shared)):
        inner, through_detach = shared, True
    if not isinstance(inner, ast.Call):
        return
    inner_kind, inner_detail = _step(walk, inner)
    if inner_kind is None or not isinstance(inner.func, ast.Attribute):
        return
    base = inner.func.value
    base_kind = walk.kind_of(base)
    if base_kind and base_kind[0] == MODULE:
        return
    name = walk.segment(base)
    place = base_kind[1] if base_kind and base_kind[0] == "T" else None
    if {inner_kind, outer_kind} == {"host", "dev"} and not through_detach:
        if (inner_kind == "host" and place == "cpu") or (inner_kind == "dev" and place == "dev"):
            return  # the first call copies nothing: the tensor is already there
        there = "to the host" if inner_kind == "host" else "to the device"
        back = "back to the device" if outer_kind == "dev" else "back to the host"
        walk.report(RULE, call, f"round trip: '{name}' is copied {there} and at once {back}; if it "
                                "must end up where it started, drop both calls")
        return
    same = inner_detail == outer_detail or "cuda()" in (inner_detail, outer_detail)
    if inner_kind == outer_kind in ("host", "dev") and same:
        walk.report(RULE, call, f"'{name}' is sent {'to the host' if inner_kind == 'host' else 'to the device'} "
                                "twice in a row; the second call copies nothing and can go",
                    fixes=_drop_outer(walk, call))
        return
    if "clone" in (inner_kind, outer_kind) and {inner_kind, outer_kind} & {"host", "dev"}:
        moved = outer_kind if inner_kind == "clone" else inner_kind
        if inner_kind == "clone" and (moved == "host" and place == "cpu" or moved == "dev" and place == "dev"):
            return  # h.clone().cpu() of a host tensor: the clone is the only copy
        walk.report(RULE, call, f"'{name}' is copied twice: a clone and a transfer each make a "
                                "new tensor; one to(..., copy=True) copies once")
        return
    if inner_kind in ("host", "dev") and outer_kind == "float" and _wide(walk, base):
        outer_kind, outer_detail = "cast", "float32"  # from 64 bits: half the bytes if cast first
    narrow = outer_detail in NARROW_DTYPES or outer_detail == "float32"
    if inner_kind in ("host", "dev") and outer_kind == "cast" and narrow:
        walk.report(RULE, call, f"'{name}' is copied {'to the host' if inner_kind == 'host' else 'to the device'} "
                                f"at full width and then cast to {outer_detail}; cast first (or pass "
                                f"dtype= to the same to()) so fewer bytes cross the bus")


def _shared_view(node):
    """What `x.detach()` or `x.data` shares its storage with, or None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "detach" \
            and not node.args:
        return node.func.value
    if isinstance(node, ast.Attribute) and node.attr == "data":
        return node.value
    return None


def _is_clone(node):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "clone"


# What makes a 64-bit host tensor: NumPy's random draws and float arrays
# (float64), an integer arange or a long/double tensor (int64, float64).
_NUMPY_WIDE = ("numpy.random.", "numpy.linspace", "numpy.arange", "numpy.zeros", "numpy.ones")
_WIDE_METHODS = ("long", "double")


def _wide(walk, node, depth=0):
    """Whether `node` is a 64-bit host tensor by how it was made, through a
    local assigned once in the function (`mask = torch.arange(n) % 2`)."""
    if depth > 4:
        return False
    if type(node) is ast.BinOp:
        return _wide(walk, node.left, depth + 1)
    if type(node) is ast.Name:
        value = _assigned_before(walk, node.id, node.lineno)
        return value is not None and _wide(walk, value, depth + 1)
    if type(node) is not ast.Call:
        return False
    q = walk.imports.qual(node.func) or ""
    if any(k.arg == "dtype" for k in node.keywords):
        return False
    if q == "torch.from_numpy" and node.args:
        arg = node.args[0]
        if type(arg) is ast.Name:
            arg = _assigned_before(walk, arg.id, arg.lineno) or arg
        while type(arg) is ast.BinOp:
            arg = arg.left  # np.random.beta(...) / 2 + 0.5
        return type(arg) is ast.Call and (walk.imports.qual(arg.func) or "").startswith(_NUMPY_WIDE) and \
            not any(k.arg == "dtype" for k in arg.keywords)
    if q in ("torch.LongTensor", "torch.DoubleTensor"):
        return True
    if q == "torch.arange":
        return all(type(a) is ast.Constant and type(a.value) is int or type(a) is ast.Name for a in node.args) \
            and not any(type(a) is ast.Constant and type(a.value) is float for a in node.args)
    f = node.func
    return type(f) is ast.Attribute and f.attr in _WIDE_METHODS and not node.args


def _assigned_before(walk, name, line):
    """The value of the last `name = ...` of the current function (or the
    module's top level) above `line`, in the same block; None without one."""
    fn = walk.scope.func
    body = fn.body if fn is not None else walk.tree.body
    blocks = [b for b in _blocks(body) if any(s.lineno <= line <= s.end_lineno for s in b)]
    if not blocks:
        return None
    for s in reversed([s for s in blocks[-1] if s.end_lineno < line]):
        if type(s) is ast.Assign and len(s.targets) == 1 and type(s.targets[0]) is ast.Name \
                and s.targets[0].id == name:
            return s.value
        if any(type(n) is ast.Name and n.id == name and type(n.ctx) is ast.Store for n in ast.walk(s)):
            return None  # set some other way (a branch, a loop)
    return None


def _blocks(body):
    """The statement lists of a body, each before those nested in it."""
    yield body
    for s in body:
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(s, field, None)
            if inner and type(s) not in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
                yield from _blocks(inner)


def _copy_into(walk, call):
    arg = call.args[0]
    if not isinstance(arg, ast.Call) or not isinstance(arg.func, ast.Attribute):
        return
    kind, detail = _step(walk, arg)
    if kind == "clone" or (kind == "cast" and detail):
        walk.report(RULE, arg, f"'{walk.segment(arg)}' makes a temporary only to feed copy_(), "
                               "which converts and copies by itself; pass the source directly")


def _drop_outer(walk, call):
    if call.lineno != call.end_lineno:
        return []
    line = walk.lines[call.lineno - 1]
    enc = line.encode("utf-8")
    start = len(enc[:call.func.value.end_col_offset].decode("utf-8", "replace"))
    end = len(enc[:call.end_col_offset].decode("utf-8", "replace"))
    return [(call.lineno, start, end, "")]
