"""What a function of the file is given, from its calls in the file: a
parameter that every call passes a tensor (on a device, or of unknown
place) is such a tensor (`visualization(..., pred, seg, ...)` with `pred`
the model's output), and one that every call passes a module already moved
to the device is such a module (`evaluate(model, ...)` after
`model.to(device)`). The function is walked again with those kinds once
the whole file has been walked, since its calls may come after it."""
import ast

from ._kinds import MODULE, TENSOR

# The kind given to a parameter that every call passes a moved module.
MOVED_MODULE = (MODULE, None, "moved")


def record(walk, call, kinds):
    """Notes the kinds a call of a plain function of the file passes."""
    f = call.func
    if type(f) is not ast.Name or f.id not in walk.functions or walk.lookup(f.id) is not None:
        return
    if any(type(a) is ast.Starred for a in call.args) or any(k.arg is None for k in call.keywords):
        return  # f(*args), f(**kw): positions unknown
    moved = walk.scope.moved
    kinds = [MOVED_MODULE if type(a) is ast.Name and a.id in moved else k for a, k in zip(call.args, kinds)]
    walk.calls_of.setdefault(f.id, []).append((kinds, {k.arg: walk.kind_of(k.value) for k in call.keywords}))


def parameter_kinds(walk, fn):
    """{parameter: tensor kind} for the parameters of `fn` whose kind the
    file does not say and that every call of it passes a tensor not on the
    host; {} when its calls say nothing new."""
    calls = walk.calls_of.get(fn.name)
    if not calls:
        return {}
    params = fn.args.posonlyargs + fn.args.args
    out = {}
    for i, p in enumerate(params):
        if p.annotation is not None:
            continue
        seen = [pos[i] if i < len(pos) else kw.get(p.arg) for pos, kw in calls]
        if seen and all(k == MOVED_MODULE for k in seen):
            out[p.arg] = MOVED_MODULE
        elif seen and all(k and k[0] == TENSOR and k[1] != "cpu" for k in seen):
            places = {k[1] for k in seen}
            out[p.arg] = (TENSOR, places.pop() if len(places) == 1 else None)
    return out


def walk_again(walk, body):
    """Walks again, for their new findings only, the top-level functions
    whose calls in the file say what some parameter holds."""
    for s in body:
        if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        kinds = parameter_kinds(walk, s)
        if not kinds:
            continue
        seen = {f[:3] for f in walk.findings}
        found, events, walk.findings = walk.findings, walk.events, []
        walk.given = (s, kinds)
        walk.function(s, None)
        walk.given = None
        walk.findings = found + [f for f in walk.findings if f[:3] not in seen]
        # The facts other files read were given the first time; a checkpoint
        # loaded into a moved module the callers give is new.
        known = {(e["rule"], e["line"], e["col"]) for e in events}
        walk.events = events + [e for e in walk.events if e["moved_before"] and
                                (e["rule"], e["line"], e["col"]) not in known]
