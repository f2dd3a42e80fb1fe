"""What makes the host wait for the device, for devcopy-host-sync-in-loop:
`.item()`, `.cpu()`, `.tolist()`, `float(t)`, `print(t)`, a tensor formatted
(`'{:.4f}'.format(t)`, `f"{t:.3f}"`) or handed to a logger. Each helper
answers (what, tensor expression) for one call or value, or None."""
import ast

from .._helpers import reads_argument
from .._kinds import TENSOR

READS = frozenset(("item", "tolist", "numpy", "cpu"))
CASTS = frozenset(("float", "int", "bool", "print"))
# Loggers given a tensor: they read it on the host themselves.
LOGS = frozenset(("add_scalar",))


def chained_copy(node):
    """`x.cpu().numpy()`, `x.detach().cpu().item()`: the copy reports it."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in ("cpu", "numpy", "tolist", "to"):
            return True
        node = node.func.value
    return False


def sync(walk, call, meth, recv):
    """(what, tensor expression) when this call makes the host wait."""
    f = call.func
    if isinstance(f, ast.Attribute) and f.attr in LOGS and len(call.args) >= 2:
        k = walk.kind_of(call.args[1])  # writer.add_scalar(tag, t, step) reads t on the host
        if k is None and isinstance(call.args[1], ast.Name) and named_tensor(walk, call.args[1].id):
            k = (TENSOR, None)
        if k and k[0] == TENSOR and k[1] != "cpu" and not chained_copy(call.args[1]):
            return f"'{f.attr}()' reads '{walk.segment(call.args[1])}' on the host", call.args[1]
        return None
    if meth is not None:
        target = call.func.value
        if meth == "to":
            kind, place = walk.move_target(call)
            if kind != "device" or place != "cpu":
                return None
        elif meth not in READS or meth == "numpy":
            return None  # numpy() works only on a tensor already on the host
        if chained_copy(target):
            return None
        if recv is None:
            if meth == "tolist" or meth == "to":
                return None
        elif recv[0] != TENSOR or recv[1] == "cpu":
            return None
        if recv is None and isinstance(target, ast.Name) and walk.lookup(target.id) is not None:
            return None
        name = walk.segment(target)
        if meth == "item":
            return f"'item()' reads '{name}' on the host", target
        return f"'{meth}()' copies '{name}' to the host", target
    f = call.func
    if isinstance(f, ast.Name) and len(call.args) == 1 and f.id not in CASTS and walk.lookup(f.id) is None and \
            not hasattr(walk.functions.get(f.id), "devcopy_reads") and reads_argument(walk, f.id):
        a = call.args[0]  # to_python_float(loss): returns loss.item()
        k = walk.kind_of(a)
        if k and k[0] == TENSOR and k[1] != "cpu" and not chained_copy(a):
            return f"'{f.id}()' reads '{walk.segment(a)}' on the host (its item())", a
        return None
    if isinstance(f, ast.Name) and f.id in CASTS and walk.lookup(f.id) is None and \
            (len(call.args) == 1 or f.id == "print"):
        for a in call.args:  # print(loss, warm_up) prints each of its arguments
            k = walk.kind_of(a)
            if k is None and isinstance(a, ast.Name) and named_tensor(walk, a.id):
                k = (TENSOR, None)
            if k and k[0] == TENSOR and k[1] != "cpu" and not chained_copy(a):
                verb = "prints" if f.id == "print" else "reads"
                return f"'{f.id}()' {verb} '{walk.segment(a)}' on the host", a
    return None


def named_tensor(walk, name):
    """A local of unknown kind that the innermost loop calls `backward()` or
    `item()` on (`print(loss, warm_up)` before `loss.backward()`,
    `add_scalar("loss", loss)` before `loss.item()`): a tensor."""
    loop = walk.in_loop()
    if loop is None:
        return False
    for n in ast.walk(loop.node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("backward", "item") \
                and isinstance(n.func.value, ast.Name) and n.func.value.id == name:
            return True
    return False


def format_sync(walk, call):
    """`'{:.4f}'.format(t)`: str.format formats a tensor through its
    __format__, which reads it on the host (a tensor has no format method)."""
    for a in list(call.args) + [k.value for k in call.keywords]:
        found = formatted(walk, a)
        if found:
            return found
    return None


def formatted(walk, value):
    k = walk.kind_of(value)
    if k and k[0] == TENSOR and k[1] != "cpu" and not chained_copy(value):
        return f"formatting '{walk.segment(value)}' reads it on the host", value
    return None
