"""Where a value read on the host ends up, for devcopy-host-sync-in-loop:
a list the function starts, returns or writes out (host results)."""
import ast


def is_list(fn, name):
    """Whether the function starts `name` as a list (`preds = []`, `preds,
    refs = [], []`): `+=` then extends a container rather than summing a total."""
    if fn is None:
        return False
    for n in ast.walk(fn):
        if not isinstance(n, ast.Assign):
            continue
        for t in n.targets:
            pairs = zip(t.elts, n.value.elts) if isinstance(t, ast.Tuple) and isinstance(n.value, ast.Tuple) \
                else [(t, n.value)]
            if any(isinstance(a, ast.Name) and a.id == name and isinstance(v, (ast.List, ast.ListComp))
                   for a, v in pairs):
                return True
    return False


# Calls that write what they are given to a file or a stream.
SAVES = ("save", "dump", "write", "savez", "save_file", "safe_save", "to_csv")


def saved(fn, loop, name):
    """`torch.save(weights, path)` after the loop fills `weights`: an export
    that needs every value on the host."""
    if fn is None:
        return False
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and n.lineno > loop.node.end_lineno:
            f = n.func
            callee = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if callee.lower().endswith(SAVES) and \
                    any(isinstance(a, ast.Name) and a.id == name for a in n.args):
                return True
    return False


def returned(fn, name):
    if fn is None:
        return False
    for n in ast.walk(fn):
        if isinstance(n, (ast.Return, ast.Yield)) and n.value is not None:
            if any(isinstance(m, ast.Name) and m.id == name for m in ast.walk(n.value)):
                return True
    return False


def read_targets(fn, targets):
    """The names of `loss, metrics = helper(...)` that receive what `helper`
    read on the host with item() (`metrics = {'epe': epe.mean().item()}`;
    `return loss, metrics`); [] when its returns do not say."""
    if len(targets) != 1 or not isinstance(targets[0], ast.Tuple):
        return []
    elts = targets[0].elts
    kept = {t.id for n in ast.walk(fn) if isinstance(n, ast.Assign) and _reads(n.value)
            for t in n.targets if isinstance(t, ast.Name)}
    for n in ast.walk(fn):
        if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple) and len(n.value.elts) == len(elts):
            return [e.id for e, v in zip(elts, n.value.elts) if isinstance(e, ast.Name) and
                    (_reads(v) or isinstance(v, ast.Name) and v.id in kept)]
    return []


def _reads(node):
    return any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "item"
               for c in ast.walk(node))


def spelled_total(stmt, name):
    """`corrects[k] = corrects[k] + correct`: `+=` written out."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ast.BinOp)
            and isinstance(stmt.value.op, ast.Add) and isinstance(stmt.targets[0], (ast.Name, ast.Subscript))):
        return False
    v = stmt.value
    return ast.unparse(v.left) == ast.unparse(stmt.targets[0]) and \
        any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(v.right))
