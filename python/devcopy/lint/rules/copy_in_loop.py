"""devcopy-copy-in-loop: a device or dtype copy, run on every iteration, of a
tensor that does not change in the loop, to a target that does not either."""
import ast

from .._kinds import DTYPE_METHODS, TENSOR

RULE = "devcopy-copy-in-loop"
_COPIES = DTYPE_METHODS | {"to", "cuda", "type_as"}


_WRAPS = frozenset(("torch.from_numpy", "torch.as_tensor", "torch.tensor", "torch.Tensor"))


def _receiver_ok(walk, node):
    """A variable or member known to hold a tensor (not a parameter or buffer
    an optimizer updates), an element of one, or a wrap of host data that
    does not change (`torch.from_numpy(obs_rms.mean)`)."""
    if isinstance(node, ast.Call) and walk.imports.qual(node.func) in _WRAPS and node.args:
        loop = walk.in_loop()
        return all(isinstance(a, (ast.Name, ast.Attribute)) and loop.invariant(a) for a in node.args)
    if isinstance(node, ast.Subscript):
        return _receiver_ok(walk, node.value) and walk.in_loop().invariant(node.slice)
    if isinstance(node, ast.Name):
        k = walk.lookup(node.id)
        return bool(k) and k[0] == TENSOR
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        cls = walk.scope.cls
        k = cls.members.get(node.attr) if cls else None
        return bool(k) and k[0] == TENSOR and node.attr not in getattr(cls, "registered", ())
    return False


def _per_forward(walk, call, meth):
    """`x + self.pe.to(self.device)` in forward: a host tensor member (not a
    buffer, so model.to() leaves it behind) uploaded again on every call."""
    fn, cls = walk.scope.func, walk.scope.cls
    if fn is None or fn.name != "forward" or cls is None or not cls.is_module or walk.facts.cpu_fixed:
        return
    kind, place = walk.move_target(call) if meth == "to" else ("device", "dev")
    if kind != "device" or place == "cpu" or place is None and not walk.facts.uses_device:
        return
    node = call.func.value
    if isinstance(node, ast.Call) and (walk.imports.qual(node.func) or "").endswith(("Parameter", "Variable")) \
            and node.args:
        node = node.args[0]  # nn.Parameter(self.pe, requires_grad=False).to(device)
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"):
        return
    k = cls.members.get(node.attr)
    if not k or k[0] != TENSOR or k[1] != "cpu" or node.attr in cls.registered:
        return
    for n in ast.walk(fn):
        if isinstance(n, ast.Attribute) and n.attr == node.attr and isinstance(n.ctx, ast.Store):
            return  # forward rebinds it: a cache
    walk.report(RULE, call, f"'self.{node.attr}', a host tensor that forward does not change, is copied to "
                            "the device on every call of forward (every step); register it as a buffer "
                            f"(self.register_buffer('{node.attr}', ...)) so that moving the model moves it once")


def on_call(walk, call, q, meth, recv):
    loop = walk.in_loop()
    if loop is None and meth in ("to", "cuda") and not (isinstance(walk.stmt, ast.Expr) and walk.stmt.value is call):
        return _per_forward(walk, call, meth)
    if loop is None or meth not in _COPIES or not recv or recv[0] != TENSOR:
        return
    if walk.stmt is not None and isinstance(walk.stmt, ast.Expr) and walk.stmt.value is call:
        return  # dropped: devcopy-discarded-copy reports it
    if not loop.runs_every_iteration():
        return
    what = "to another dtype"
    if meth in ("to", "cuda"):
        kind, place = walk.move_target(call) if meth == "to" else ("device", "dev")
        if kind == "device" and place == "cpu":
            return  # a copy to the host is devcopy-host-sync-in-loop's
        if kind == "device":
            if walk.facts.cpu_fixed or recv[1] == place == "dev" and meth == "cuda":
                return
            what = "to the device"
        elif kind != "dtype":
            return
    receiver = call.func.value
    if not _receiver_ok(walk, receiver):
        return
    if not isinstance(receiver, ast.Call) and not loop.invariant(receiver):
        return
    if not all(loop.invariant(a) for a in call.args) or \
            not all(loop.invariant(k.value) for k in call.keywords):
        return
    name = walk.segment(receiver)
    walk.report(RULE, call, f"'{name}' is copied {what} on every iteration of this loop, yet neither "
                            "it nor the target changes in the loop: every byte is copied again each "
                            "time; hoist the copy before the loop and reuse the result",
                notes=[(walk.path, loop.node.lineno, loop.node.col_offset, "loop starts here")])
