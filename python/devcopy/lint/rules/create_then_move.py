"""devcopy-create-then-move: a torch factory made on the host and moved at
once (`torch.zeros(n).to(device)`, `.cuda()`), also through casts, views,
scalar fills and `Variable(...)`, and through a local that holds the tensor
until its move; reported at the factory, where the fix names the device."""
import ast

from .._helpers import mover_of
from .._kinds import DTYPE_METHODS, NUMPY, TENSOR, const_str
from .._scopes import parameter_names
from ._advice import LEGACY, fix as _fix, suggest as _suggest
from ._factories import is_factory, made_elsewhere
from ._targets import host_batch_device, maybe_tensor
from .repeated_module_move import opposite

RULE = "devcopy-create-then-move"
# In-place fills and arithmetic from scalars: they run as well on the device.
_FILLS = frozenset("fill_ zero_ mul_ add_ sub_ div_ uniform_ normal_ clamp_".split())
# Casts and views that run as well on the device, between factory and move.
_BETWEEN = DTYPE_METHODS | _FILLS | frozenset(
    "unsqueeze squeeze view reshape repeat expand expand_as view_as t transpose permute flatten contiguous "
    "narrow select".split())
# Wrappers that hand back the same data: Variable(torch.zeros(n)) is a tensor since 0.4.
_WRAPPERS = frozenset(("torch.autograd.Variable", "torch.autograd.variable.Variable"))


class Held:
    """A local holding a factory's host tensor until its move: the factory,
    the local's name, the statement that bound it, the loop and the branches
    around the factory, the local's first read since, whether it was read
    again, the locals it was derived from (`r = torch.arange(n); e =
    r.unsqueeze(0)`: `r` must not be read later), and the receiver of a
    scalar fill, which is no read; and the factories the other branches of
    an `if` bound the local to, unread (`if a: h = torch.zeros(n)` / `else:
    h = torch.randn(n)`), which the same move copies."""
    __slots__ = ("factory", "q", "name", "stmt", "loop", "ifs", "first", "reread", "sources", "passed", "alts")

    def __init__(self, factory, q, name, stmt, loop, ifs, sources=()):
        self.factory, self.q, self.name, self.stmt, self.sources = factory, q, name, stmt, sources
        self.loop, self.ifs = loop, ifs
        self.first, self.reread, self.passed, self.alts = None, False, None, ()


def _param(walk, node):
    """A parameter of the function: a tensor as often as not."""
    fn = walk.scope.func
    return type(node) is ast.Name and fn is not None and \
        node.id in parameter_names(fn)


def _scalar(walk, node):
    """A fill's argument that is no tensor: a number, -a, 2 * a, a name the
    file does not know as a tensor or an array."""
    t = type(node)
    if t is ast.Constant:
        return isinstance(node.value, (int, float))
    if t is ast.UnaryOp:
        return _scalar(walk, node.operand)
    if t is ast.BinOp:
        return _scalar(walk, node.left) and _scalar(walk, node.right)
    if t is ast.Call and type(node.func) is ast.Name and node.func.id in ("float", "int") and \
            len(node.args) == 1 and not node.keywords:
        return type(node.args[0]) is ast.Constant or _scalar(walk, node.args[0])  # float('-inf')
    if t is ast.Name or t is ast.Attribute:
        k = walk.kind_of(node)
        return not k or k[0] not in (TENSOR, NUMPY, "TT")
    return False


def _type_target(walk, call):
    """Where `.type(T)` puts the tensor: 'host' for a dtype or a CPU tensor
    type, 'dev' for torch.cuda.*Tensor, None when the file does not say."""
    args = call.args or [k.value for k in call.keywords if k.arg == "dtype"]
    if not args:
        return None
    q = const_str(args[0]) or walk.imports.qual(args[0])
    if not q or not q.startswith("torch."):
        return None
    if q.startswith("torch.cuda.") and q.endswith("Tensor"):
        return "dev"
    parts = q.split(".")
    return "host" if len(parts) == 2 and (parts[1] in LEGACY or parts[1][:1].islower()) else None


def _inner(walk, call, q):
    """The tensor a cast, a view, a scalar fill or a wrapper is applied to;
    None for any other call."""
    if q is not None:
        return call.args[0] if q in _WRAPPERS and call.args else None
    f = call.func
    if type(f) is not ast.Attribute:
        return None
    a = f.attr
    if a == "to":
        return f.value if walk.move_target(call)[0] == "dtype" else None
    if a == "type":
        return f.value if _type_target(walk, call) == "host" else None
    if a not in _BETWEEN:
        return None
    if a in _FILLS and not _fill_value(walk, call, a):
        return None  # a fill from a tensor is not followed
    return f.value


def _fill_value(walk, call, meth):
    """Whether a fill's arguments are scalars; `fill_` takes one value
    whatever gives it (`fill_(tok.token_to_id(sos))`, `fill_(x.item())`):
    a number, or a tensor of one element on either device."""
    args = list(call.args) + [k.value for k in call.keywords]
    if meth == "fill_" and len(args) == 1 and type(args[0]) is ast.Call:
        return True
    return all(_scalar(walk, x) for x in args)


def _root(walk, node):
    """The factory call or the local at the bottom of `node`'s chain of casts,
    views, fills and wrappers; None when anything else is there."""
    for _ in range(32):
        if type(node) is ast.Name:
            return node
        if type(node) is ast.Subscript and _new_axes(node):
            node = node.value
            continue
        if type(node) is ast.BinOp and type(node.op) in (ast.Mult, ast.Div, ast.Add, ast.Sub, ast.Mod):
            # torch.ones(n) / L, torch.arange(n) % 2, std * torch.randn(n): still a new host tensor
            if type(node.left) is ast.Call and _scalar(walk, node.right) and not _param(walk, node.right):
                node = node.left
                continue
            if type(node.right) is ast.Call and _scalar(walk, node.left) and not _param(walk, node.left):
                node = node.right
                continue
            return None
        if type(node) is not ast.Call:
            return None
        q = walk.imports.qual(node.func)
        if q is not None and is_factory(q):
            return node
        node = _inner(walk, node, q)
    return None


def _new_axes(sub):
    """`t[None, :, :]`, `t[:, None]`: a view that only adds axes (an index
    picks elements: work that stays on the host)."""
    parts = sub.slice.elts if type(sub.slice) is ast.Tuple else [sub.slice]
    return any(type(p) is ast.Constant and p.value is None for p in parts) and all(
        type(p) is ast.Constant and p.value in (None, Ellipsis) or
        type(p) is ast.Slice and p.lower is None and p.upper is None and p.step is None for p in parts)


def _held(walk, name):
    """The factory result `name` holds, when this is its first read since and
    it sits in the loop the factory ran in (or none)."""
    held = walk.scope.fresh.get(name.id)
    if held is None or held.first is not name or held.loop is not walk.in_loop():
        return None
    return held


def _rebinds(stmt, name):
    return isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets)


def _hold(walk, call, name):
    """`x = Variable(torch.zeros(n)).long()`, `x = x.view(1, -1)`, `y =
    x.unsqueeze(0)`: the local now holds a factory's host tensor."""
    root = _root(walk, call)
    if root is None:
        return False
    if type(root) is ast.Call:
        q = walk.imports.qual(root.func)
        if made_elsewhere(walk, root, q, call):
            return False
        prev = walk.scope.fresh.get(name)
        held = walk.scope.fresh[name] = Held(root, q, name, walk.stmt, walk.in_loop(), walk.path_ifs)
        if prev is not None and prev.first is None and not prev.sources and prev.loop is held.loop and \
                opposite(prev.ifs, walk.path_ifs):
            held.alts = prev.alts + (prev,)
        return True
    held = _held(walk, root)
    if held is None:
        return False
    sources = held.sources if root.id == name else held.sources + (held,)
    walk.scope.fresh[name] = Held(held.factory, held.q, name, walk.stmt, held.loop, held.ifs, sources)
    return True


def _fill_in_place(walk, call):
    """`x.fill_(0.5)` as a statement on a held local: not a read on the host."""
    recv = call.func.value
    if type(recv) is not ast.Name:
        return
    held = walk.scope.fresh.get(recv.id)
    if held is not None and held.first is recv and _fill_value(walk, call, call.func.attr):
        held.first, held.passed = None, recv


def _target(walk, call, meth):
    """The written destination of a move off the host, or None."""
    if meth == "cuda":
        return "'cuda'"
    if meth == "type":
        return "'cuda'" if _type_target(walk, call) == "dev" else None
    if meth == "type_as":  # .type_as(enc): to enc's dtype and device, when enc may be on the device
        a = call.args[0] if len(call.args) == 1 and walk.facts.uses_device else None
        k = walk.kind_of(a) if a is not None and not _to_host(a) else ("",)
        return None if k is not None and (k[0] != TENSOR or k[1] == "cpu") else f"{walk.segment(a)}.device"
    kind, place = walk.move_target(call)
    if kind == "tensor" and place == "dev" and call.args:  # .to(gt): to a tensor known to be on the device
        return f"{walk.segment(call.args[0])}.device"
    if _to_tensor(walk, call, kind, place):
        return f"{walk.segment(call.args[0])}.device"  # .to(source): where a forward's input is
    if kind != "device" or place == "cpu" or (place is None and not walk.facts.uses_device):
        return None
    return walk.segment(call.args[0] if call.args else next(k.value for k in call.keywords if k.arg == "device"))


def _to_tensor(walk, call, kind, place):
    """`.to(source)` of a tensor not known to be on the host (a forward's
    input, a parameter, an element of an unpacked batch): to its dtype and
    device, in a file that uses a device."""
    if len(call.args) != 1 or call.keywords or not walk.facts.uses_device:
        return False
    if kind == "tensor" and place is None:
        return True
    if kind is not None:
        return False
    root = _root(walk, call.func.value)  # scan the function's bindings only for a factory's move
    return root is not None and (type(root) is not ast.Name or _held(walk, root) is not None) and \
        maybe_tensor(walk, call.args[0])


def _scaled(value, call):
    """`mask = torch.arange(n) % 2`, `z = std * torch.randn(n)`: the call
    scaled by what _root sees through."""
    return type(value) is ast.BinOp and (value.left is call or value.right is call)


def _to_host(node):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "cpu"


def on_call(walk, call, q, meth, recv):
    stmt = walk.stmt
    t = type(stmt)
    if t is ast.Expr and stmt.value is call and meth in _FILLS:
        _fill_in_place(walk, call)
        return
    if t is ast.Assign and (stmt.value is call or type(stmt.value) is ast.Subscript and stmt.value.value is call
                            and _new_axes(stmt.value) or _scaled(stmt.value, call)) \
            and len(stmt.targets) == 1 and type(stmt.targets[0]) is ast.Name and \
            _hold(walk, stmt.value if _scaled(stmt.value, call) else call, stmt.targets[0].id):
        return
    if meth is None and type(call.func) is ast.Name and call.args and not walk.facts.cpu_fixed:
        _through_helper(walk, call)
        return
    if meth not in ("to", "cuda", "type", "type_as") or walk.facts.cpu_fixed:
        return
    target = _target(walk, call, meth)
    if target is None:
        return
    made = _factory_method(walk, call.func.value)
    if made is not None:
        name, fname = made
        walk.report(RULE, call.func.value,
                    f"'{name}()' only returns a tensor that '{fname}()' makes on the host, and '{meth}()' then "
                    f"copies it to {target}; give the factory in '{name}' the device (device=...)")
        return
    root = _root(walk, call.func.value)
    if root is None:
        return
    if type(root) is ast.Name:
        _through_local(walk, call, meth, target, root)
        return
    fname = walk.imports.qual(root.func)
    if made_elsewhere(walk, root, fname, call.func.value) or call.args and host_batch_device(walk, call.args[0]):
        return
    suggestion, fixes = _suggest(root, fname, target), _fix(walk, call, root, target, meth)
    if meth == "to" and fname.split(".")[1] not in LEGACY and _to_tensor(walk, call, *walk.move_target(call)):
        # To the tensor's dtype too: say so, and leave the edit to the reader.
        suggestion, fixes = suggestion[:-1] + f", dtype={walk.segment(call.args[0])}.dtype)", []
    walk.report(RULE, root,
                f"'{fname.split('.')[1]}()' makes the tensor on the host and '{meth}()' then copies it to "
                f"{target}; create it there directly: {suggestion}", fixes=fixes)


def _factory_method(walk, node):
    """`self.schedule().to(device)`, `diffusion.sample_timesteps(n).to(device)`:
    a method of one of the file's classes (the only one of that name) whose
    body only returns a torch factory's result, made with no device."""
    if type(node) is not ast.Call or type(node.func) is not ast.Attribute or walk.imports.qual(node.func):
        return None
    name = node.func.attr
    defs = [f for c in walk.classes.values() for f in c.node.body
            if isinstance(f, ast.FunctionDef) and f.name == name]
    if len(defs) != 1:
        return None
    body = [s for s in defs[0].body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or type(body[0]) is not ast.Return or type(body[0].value) is not ast.Call:
        return None
    made = body[0].value
    q = walk.imports.qual(made.func)
    if q is None or not is_factory(q) or q.split(".")[1] in LEGACY or any(k.arg == "device" for k in made.keywords):
        return None
    return name, q


def _through_helper(walk, call):
    """`cuda(torch.rand(n), use_cuda)`: a function of the file or the package
    that hands back its first argument moved (`return t.cuda() if flag else t`)."""
    meth = mover_of(walk, call.func.id)
    if meth is None:
        return
    root = _root(walk, call.args[0])
    if root is None or type(root) is not ast.Call:
        return
    fname = walk.imports.qual(root.func)
    if made_elsewhere(walk, root, fname, call.args[0]):
        return
    walk.report(RULE, root,
                f"'{fname.split('.')[1]}()' makes the tensor on the host and '{call.func.id}()' then copies it "
                f"to the device with '{meth}()'; create it there directly: "
                f"{_suggest(root, fname, '<the device>')}")


def _through_local(walk, call, meth, target, name):
    """`x = torch.zeros(n)` ... `if cuda: x = x.cuda()`: decided at the file's
    end, once it is known that nothing read the host tensor afterwards."""
    held = _held(walk, name)
    if held is None or call.args and host_batch_device(walk, call.args[0]):
        return
    if _rebinds(walk.stmt, name.id):
        # The host tensor is gone after this statement; `x = x.cuda() if gpu
        # else x` reads it again only on the path that does not move it.
        del walk.scope.fresh[name.id]
    elif walk.in_loop() is not None or walk.scope.func is None:
        return  # kept beside the copy, where a later iteration or another function may read it
    moves = walk.pending.setdefault(RULE, {}).setdefault(id(held.factory), (held, []))[1]
    moves.append((call, meth, target, _condition(walk) if len(walk.path_ifs) > len(held.ifs) else None))


def _condition(walk):
    """The test of the innermost `if` around the move, as written (short and
    on one line), else a placeholder."""
    node, branch = walk.path_ifs[-1]
    test = node.test
    text = walk.segment(test) if test.lineno == test.end_lineno else ""
    if not text or len(text) > 60:
        return "<the move's condition>"
    return f"not ({text})" if branch == "else" else text


def on_file_end(walk):
    for held, moves in walk.pending.get(RULE, {}).values():
        if held.reread or any(s.reread for s in held.sources):
            continue  # the host tensor is read after the move: it is needed there
        call, meth, target, conditional = moves[0]
        names = [h.name for h in held.sources + (held,)]
        kept = "', then '".join(n for i, n in enumerate(names) if i == 0 or n != names[i - 1])
        # Moved only under `if self.gpu:`: the device the factory gets follows that test.
        where = f"{target} if {conditional} else 'cpu'" if conditional else target
        for one in (held,) + held.alts:
            factory, fname = one.factory, one.q
            walk.report(RULE, factory,
                        f"'{fname.split('.')[1]}()' makes the tensor on the host, kept in '{kept}' until "
                        f"'{meth}()' at line {call.lineno} copies it to {target} with nothing reading it before; "
                        f"create it there directly: {_suggest(factory, fname, where)}",
                        notes=[(walk.path, c.lineno, c.col_offset, f"copied to {t} here") for c, _, t, _ in moves])


def _inside(node, outer):
    return (outer.lineno, outer.col_offset) <= (node.lineno, node.col_offset) and \
        (node.end_lineno, node.end_col_offset) <= (outer.end_lineno, outer.end_col_offset)
