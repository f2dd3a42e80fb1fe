"""devcopy-discarded-copy: a copy or other new-tensor op of a tensor used as a
statement. A Module's to() works in place and is never flagged."""
import ast

from .._kinds import (DTYPE_METHODS, MOVE_METHODS, NEW_TENSOR_METHODS, NON_TENSOR_METHODS, TENSOR, is_tensor,
                      returns_tensor)

RULE = "devcopy-discarded-copy"
_NO_RESULT = NON_TENSOR_METHODS - {"item"} | {"print", "fill_diagonal_", "apply_"}
_TRANSFERS = frozenset(("to", "cpu", "cuda", "pin_memory"))
# Methods with an in-place twin (x.clamp_ for x.clamp), to suggest it.
_IN_PLACE = frozenset(
    "abs add addcdiv addcmul addmm bernoulli ceil clamp clamp_max clamp_min clip copysign cos cumsum "
    "detach div exp expm1 fill fill_diagonal floor fmod frac index_add index_copy index_fill "
    "index_put lerp log log1p log2 logical_not masked_fill masked_scatter mul nan_to_num neg pow "
    "reciprocal relu remainder renorm round rsqrt scatter scatter_add sigmoid sign sin sqrt square "
    "squeeze sub t tanh transpose tril triu true_divide trunc unsqueeze uniform normal zero".split())
_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.MatMult: "@",
        ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|"}


def _where(walk, call):
    if call.func.attr == "cpu":
        return "to the host"
    if call.func.attr == "cuda":
        return "to the GPU"
    if call.func.attr in DTYPE_METHODS or call.func.attr == "type_as":
        return "to another dtype"
    if call.func.attr == "to":
        kind, place = walk.move_target(call)
        if kind == "device":
            return {"cpu": "to the host", "dev": "to the device"}.get(place, "to another device")
        if kind == "dtype":
            return "to another dtype"
    return "to a new tensor"


def on_expr_stmt(walk, stmt, kind):
    v = stmt.value
    if isinstance(v, ast.BinOp):
        if is_tensor(walk.kind_of(v.left)) or is_tensor(walk.kind_of(v.right)):
            op = _OPS.get(type(v.op), "op")
            walk.report(RULE, v, f"result of '{walk.segment(v)}' is discarded: it makes a new tensor "
                                 "and drops it at once, its operands unchanged; use an augmented "
                                 f"assignment ('{op}=') or assign the result")
        return
    if not isinstance(v, ast.Call):
        return
    f = v.func
    q = walk.imports.qual(f)
    if q is not None:
        _torch_function(walk, v, q)
        return
    if not isinstance(f, ast.Attribute):
        return
    meth = f.attr
    recv = walk.kind_of(f.value)
    if recv is None and meth == "detach" and not v.args and not v.keywords:
        recv = (TENSOR, None)  # only tensors have detach(): x.detach() meant x = x.detach()
    if not is_tensor(recv) or meth.endswith("_") or meth in _NO_RESULT or meth.startswith("register"):
        return
    name = walk.segment(f.value)
    if meth == "item":
        walk.report(RULE, v, f"result of 'item()' is discarded: it copies '{name}' to the host and "
                             "waits for the device, then drops the value; use the value (a missing "
                             "'return'?) or remove the call")
        return
    if meth in _TRANSFERS and walk.facts.cpu_fixed:
        return  # a move on a CPU-only program copies nothing
    if meth in _TRANSFERS and recv[1] == "cpu" and _where(walk, v) == "to the host":
        return  # already on the host: to('cpu') returns the tensor itself
    if meth in MOVE_METHODS or meth in ("clone", "pin_memory"):
        extra = ""
        if meth in _TRANSFERS and _where(walk, v) == "to the host":
            extra = (" (to offload activations saved for backward, use "
                     "torch.autograd.graph.save_on_cpu; this call frees nothing)")
        walk.report(RULE, v, f"result of '{meth}()' is discarded: '{name}' is copied {_where(walk, v)} "
                             f"and the copy is dropped at once, '{name}' itself is unchanged{extra}; "
                             f"assign the result ({name} = {name}.{meth}(...)) or remove the call")
        return
    if meth not in NEW_TENSOR_METHODS:
        return  # a method not known to make a tensor: called for its effect
    instead = f"use the in-place '{meth}_()' or assign the result" if meth in _IN_PLACE else \
        "assign the result or remove the call"
    walk.report(RULE, v, f"result of '{meth}()' is discarded: it makes a new tensor and drops it at "
                         f"once, '{name}' itself is unchanged; {instead}")


def _torch_function(walk, call, q):
    parts = q.split(".")
    if len(parts) != 2 or not returns_tensor(parts[1]) or parts[1].endswith("_") or not call.args:
        return
    if not is_tensor(walk.kind_of(call.args[0])):
        return
    if any(k.arg == "out" for k in call.keywords):
        return
    walk.report(RULE, call, f"result of '{q}()' is discarded: it makes a new tensor and drops it "
                            f"at once, '{walk.segment(call.args[0])}' itself is unchanged; assign "
                            "the result or use the in-place form")
