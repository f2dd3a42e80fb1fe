"""Whether a value read on the host in a loop only feeds metric totals, for
devcopy-host-sync-in-loop: `pred = out.cpu().numpy()` followed by NumPy
work whose results are only added to running sums or kept in local lists
(a confusion count, an EPE, an IoU, HR/NDCG). Then the download serves
nothing the host needs on that iteration: the counts can be taken on the
device and read once."""
import ast

from .._kinds import MODULE
from .._scopes import parameter_names
from ._results import returned, saved

# Builtins that compute from their arguments and hand the result back.
_PURE_BUILTINS = frozenset("float int len sum max min abs round range enumerate zip list tuple sorted "
                           "bool set reversed any all".split())
# Methods of a tensor or an array that compute a new value from it.
_PURE_METHODS = frozenset((
    "astype sum mean max min argmax argmin item tolist numpy reshape view squeeze unsqueeze transpose "
    "flatten ravel copy clone float long int double half bool eq ne ge gt le lt all any nonzero std var "
    "cumsum sort argsort round abs sqrt detach cpu contiguous permute sub add mul div pow norm index "
    "count prod exp log clip clamp keys values items get").split())
_CONTAINERS = frozenset(("append", "extend", "add", "insert"))
_PURE_MODULES = ("numpy.", "math.", "torch.")
_JUMPS = (ast.Break, ast.Continue, ast.Return, ast.Raise, ast.Yield)


def only_totals(walk, loop, stmt, name):
    """True when every value derived from `name` (bound by `stmt` in `loop`)
    ends in a host total or a local list kept for after the loop, and
    nothing derived from it is written out, returned, tested to leave the
    loop or handed to a call that is not a computation."""
    fn = walk.scope.func
    if fn is None:
        return False
    params = parameter_names(fn)
    body = list(_after(loop.node.body, stmt))
    tainted = {name}
    changed = True
    while changed:  # names derived from the read, to a fixed point
        changed = False
        for s in body:
            for t in _derived_targets(walk, s, tainted):
                if t not in tainted:
                    tainted.add(t)
                    changed = True
    totals = False
    for s in body:
        verdict = _terminal(walk, loop, fn, params, s, tainted)
        if verdict == "stop":
            return False
        totals = totals or verdict == "total"
    return totals


def _after(body, stmt):
    """The statements of the loop body that run after `stmt`, nested ones
    included (their compound parents are yielded too)."""
    seen = False
    for s in flat(body):
        if s is stmt:
            seen = True
        elif seen:
            yield s


def flat(body):
    for s in body:
        yield s
        for field in ("body", "orelse", "finalbody"):
            yield from flat(getattr(s, field, []) or [])
        for h in getattr(s, "handlers", []) or []:
            yield from flat(h.body)


def _uses(node, tainted):
    """Whether an expression computes from a tainted name. An index into a
    container that is not derived (`label_to_cat[target[i, 0]]`) looks a
    host value up: what it yields is not derived from the read; nor is a size."""
    if isinstance(node, ast.Name):
        return node.id in tainted and isinstance(node.ctx, ast.Load)
    if isinstance(node, ast.Subscript):
        return _uses(node.value, tainted)
    if isinstance(node, ast.Attribute) and node.attr in ("shape", "size") or \
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len":
        return False  # a size: no value of the read
    return any(_uses(c, tainted) for c in ast.iter_child_nodes(node))


def _derived_targets(walk, s, tainted):
    if isinstance(s, ast.Assign) and _uses(s.value, tainted):
        return [n for t in s.targets for n in _stored(t)]
    if isinstance(s, (ast.For, ast.AsyncFor)) and _uses(s.iter, tainted):
        return _stored(s.target)
    return []


def _stored(target):
    """Names an assignment target binds or fills (`a[i, :] = v` fills a)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Subscript):
        base = target.value
        while isinstance(base, ast.Subscript):
            base = base.value
        return [base.id] if isinstance(base, ast.Name) else []
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _stored(e)]
    if isinstance(target, ast.Starred):
        return _stored(target.value)
    return []


def _terminal(walk, loop, fn, params, s, tainted):
    """'total', 'stop' (the value is needed or leaves the loop) or None for
    one statement."""
    if isinstance(s, (ast.If, ast.While)):
        if _uses(s.test, tainted) and any(isinstance(n, _JUMPS) for b in s.body + s.orelse for n in ast.walk(b)):
            return "stop"  # a test that leaves the loop: the host needs the value
        return None
    if isinstance(s, (ast.For, ast.AsyncFor, ast.With, ast.Try)):
        return None
    if isinstance(s, (ast.Return, ast.Expr)) and isinstance(getattr(s, "value", None), (ast.Yield, ast.Await)):
        return "stop" if _uses(s.value, tainted) else None
    if isinstance(s, ast.Return):
        return "stop" if s.value is not None and _uses(s.value, tainted) else None
    value = getattr(s, "value", None)
    if value is None or not _uses(value, tainted):
        return None
    if not _computes(walk, value, tainted):
        return "stop"  # written out, logged, drawn: the host needs it
    if isinstance(s, ast.AugAssign):
        return "total" if isinstance(s.target, (ast.Name, ast.Subscript)) else "stop"
    if isinstance(s, ast.Assign):
        if any(isinstance(t, ast.Attribute) for t in s.targets):
            return "stop"  # a field: host results
        if len(s.targets) == 1 and isinstance(s.targets[0], ast.Subscript):
            return _table(walk, loop, fn, params, s.targets[0])
        return None
    if isinstance(s, ast.Expr) and isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
            and value.func.attr in _CONTAINERS:
        base = value.func.value
        while isinstance(base, ast.Subscript):
            base = base.value
        if not isinstance(base, ast.Name) or base.id in params or _kept_whole(walk, fn, loop, base.id):
            return "stop"
        if any(isinstance(a, ast.Dict) for a in value.args):
            return "stop"  # rows.append({'segment': s, 'output': out[j]}): a record of results
        return "total"
    return "stop"


def into_table(walk, loop, target):
    """`losses[k] = loss.item()` into a local table of the function that it
    only reduces after the loop (`losses.mean()`): a metric total."""
    fn = walk.scope.func
    if fn is None:
        return False
    params = parameter_names(fn)
    return _table(walk, loop, fn, params, target) == "total"


def _table(walk, loop, fn, params, target):
    """`ret[ind] = tp / denom` into a local table the function only reduces
    after the loop (`return ret.mean()`): a total; one returned, saved or
    handed on whole holds results."""
    base = target.value
    while isinstance(base, ast.Subscript):
        base = base.value
    if not isinstance(base, ast.Name) or base.id in params or _kept_whole(walk, fn, loop, base.id):
        return "stop"
    return "total"


def _kept_whole(walk, fn, loop, name):
    """A list returned, saved or handed on whole after the loop, joined
    into one array or not: per-sample results, not material for a total."""
    return any(_returned_whole(fn, n) or saved(fn, loop, n) or _handed_on(walk, fn, loop, n)
               for n in joined(fn, loop, name))


def _handed_on(walk, fn, loop, name):
    """A list that, after the loop, goes to a call that is not a computation
    (`corpus_bleu(references, hypotheses)`): per-sample results, not totals."""
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and n.lineno > loop.node.end_lineno and \
                any(isinstance(a, ast.Name) and a.id == name for a in n.args) and not _computes(walk, n, {name}):
            return True
    return False


_REDUCERS = frozenset("mean sum average median nanmean nansum std var max min len float".split())
# Calls that join a list of batches into one array, every value kept.
_JOINS = frozenset("concatenate concat vstack hstack stack cat array asarray list".split())


def joined(fn, loop, name):
    """`name` and the names bound after the loop to it joined whole
    (`res = np.vstack(results)`, `y = torch.cat(ys)`), transitively."""
    names, grew = {name}, True
    after = [n for n in ast.walk(fn) if isinstance(n, ast.Assign) and n.lineno > loop.node.end_lineno]
    while grew:
        grew = False
        for n in after:
            v = n.value
            if isinstance(v, (ast.ListComp, ast.GeneratorExp)) and len(v.generators) == 1:
                v = _walked(v.generators[0].iter)  # [np.vstack(r) for r in results.values()]: each kept whole
            if isinstance(v, ast.Call) and v.args:
                f = v.func
                callee = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                v = v.args[0] if callee in _JOINS else None
            if not (isinstance(v, ast.Name) and v.id in names):
                continue
            for t in n.targets:
                if isinstance(t, ast.Name) and t.id not in names:
                    names.add(t.id)
                    grew = True
    return names


def _walked(it):
    """What a comprehension walks: `results` of `results.values()` too."""
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr in ("values", "items") \
            and not it.args:
        return it.func.value
    return it


def results_whole(fn, loop, name):
    """A list filled in the loop that, joined or not, is returned or saved
    (`res = np.vstack(results)`, then `return self.predict_func(res)`): the
    per-sample results themselves, which the host needs. One only handed to
    a metric after the loop is not: the batches could be joined on the
    device and read once."""
    if fn is None:
        return False
    return any(returned(fn, n) or saved(fn, loop, n) for n in joined(fn, loop, name))


def returned_unreduced(fn, loop, name):
    """A list filled in the loop that is returned, joined or not, without a
    reduction (`return np.concatenate(preds)`, not `return np.mean(losses)`)."""
    return fn is not None and any(_returned_whole(fn, n) for n in joined(fn, loop, name))


def _returned_whole(fn, name):
    """`return preds`, `return np.concatenate(preds)`: per-sample results
    handed back; `return np.mean(hr)` returns a total."""
    return any(isinstance(n, (ast.Return, ast.Yield)) and n.value is not None and _unreduced(n.value, name)
               for n in ast.walk(fn))


def _unreduced(node, name):
    if isinstance(node, ast.Name):
        return node.id == name
    if isinstance(node, ast.Call):
        f = node.func
        callee = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if callee in _REDUCERS:
            return False
    return any(_unreduced(c, name) for c in ast.iter_child_nodes(node))


def _computes(walk, node, tainted):
    """Whether every call fed a derived value only computes (NumPy, math,
    torch ops, builtins, a tensor's or an array's own methods, a function of
    the file that only computes), a container's append aside."""
    for n in ast.walk(node):
        if not isinstance(n, ast.Call):
            continue
        if not any(_uses(a, tainted) for a in list(n.args) + [k.value for k in n.keywords]) and \
                not (isinstance(n.func, ast.Attribute) and _uses(n.func.value, tainted)):
            continue
        q = walk.imports.qual(n.func) or ""
        if q.startswith(_PURE_MODULES) and q not in ("torch.save", "numpy.save", "numpy.savetxt"):
            continue
        f = n.func
        if isinstance(f, ast.Name) and (f.id in _PURE_BUILTINS and walk.lookup(f.id) is None or
                                        _computing_function(walk, f.id)):
            continue
        if isinstance(f, ast.Attribute) and (f.attr in _PURE_METHODS or f.attr in _CONTAINERS and n is node):
            continue
        kind = walk.kind_of(f) if isinstance(f, (ast.Name, ast.Attribute)) else None
        if kind and kind[0] == MODULE:
            continue  # criterion(pred, true): a module's forward computes
        return False
    return True


def _computing_function(walk, name):
    """A function of the file whose calls only compute (`hit(gt, preds)`)."""
    fn = walk.functions.get(name)
    if fn is None:
        return False
    cached = getattr(fn, "devcopy_computes", None)
    if cached is None:
        fn.devcopy_computes = cached = True  # while it is being decided: a recursive call computes
        params = parameter_names(fn)  # filling one of them is output
        for n in ast.walk(fn):
            if isinstance(n, ast.Call):
                q = walk.imports.qual(n.func) or ""
                f = n.func
                ok = q.startswith(_PURE_MODULES) and not q.endswith("save") or \
                    isinstance(f, ast.Name) and (f.id in _PURE_BUILTINS or f.id != name and
                                                 _computing_function(walk, f.id)) or \
                    isinstance(f, ast.Attribute) and (f.attr in _PURE_METHODS or f.attr in _CONTAINERS and
                                                      isinstance(f.value, ast.Name) and f.value.id not in params)
                if not ok:
                    cached = False
                    break
            elif isinstance(n, (ast.Global, ast.Nonlocal, ast.Yield)):
                cached = False
                break
        fn.devcopy_computes = cached
    return cached


def appended_total(walk, loop, call):
    """`errors.append(compute_accuracy(gt, pred.cpu().numpy()))`: a read
    handed to a function of the file that only computes, whose result goes
    into a local list the function only reduces after the loop."""
    stmt, fn = walk.stmt, walk.scope.func
    outer = getattr(stmt, "value", None) if isinstance(stmt, ast.Expr) else None
    f = getattr(outer, "func", None)
    if fn is None or not (isinstance(f, ast.Attribute) and f.attr in _CONTAINERS and outer.args and
                          outer.args[0] is call and isinstance(f.value, ast.Name)):
        return False
    if not (isinstance(call.func, ast.Name) and _computing_function(walk, call.func.id)):
        return False
    name = f.value.id
    return name not in parameter_names(fn) and \
        not _kept_whole(walk, fn, loop, name)


# Methods of meters, progress bars and loggers: per-step reporting.
METERS = frozenset(("update", "set_postfix", "set_description", "add_scalar", "add_scalars", "log_metrics"))


def feeds_meter(walk, loop, call):
    """`_, acc, n, pred = accuracy(out.cpu().numpy(), ...)` then
    `meter.update(acc, n)`: the results of a function of the file or the
    package, computed from the read, fed to a meter or a logger in the loop."""
    stmt = walk.stmt
    if not isinstance(stmt, ast.Assign) or stmt.value is not call or not isinstance(call.func, ast.Name) or \
            call.func.id not in walk.functions and not walk.imports.names.get(call.func.id):
        return False  # a library's metric (skimage's PSNR) takes host arrays: its author's call
    names = {n for t in stmt.targets for n in _stored(t) if n != "_"}
    return any(isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Attribute)
               and s.value.func.attr in METERS and any(isinstance(a, ast.Name) and a.id in names
                                                       for a in s.value.args)
               for s in flat(loop.node.body))


# Calls that write what they are given to a file (logging a metric is not one).
_WRITERS = frozenset(("write", "writelines", "dump", "save", "savetxt", "writerow", "writerows", "to_csv"))


def written_after(fn, loop, name):
    """Whether a value derived from `name` after the loop (through
    assignments, loops over it and lists filled from it) is written to a
    file: per-sample output, not material for a metric."""
    if fn is None:
        return False
    after = [n for n in ast.walk(fn) if getattr(n, "lineno", 0) > loop.node.end_lineno]
    tainted, grew = {name}, True

    def uses(node):
        return any(isinstance(m, ast.Name) and m.id in tainted for m in ast.walk(node))

    while grew:
        grew = False
        for n in after:
            new = []
            if isinstance(n, (ast.Assign, ast.AugAssign)) and uses(n.value):
                new = n.targets if isinstance(n, ast.Assign) else [n.target]
            elif isinstance(n, (ast.For, ast.comprehension)) and uses(n.iter):
                new = [n.target]
            elif isinstance(n, ast.If) and uses(n.test):  # a mask deciding what is kept
                new = [c.func.value for b in n.body for c in ast.walk(b) if isinstance(c, ast.Call) and
                       isinstance(c.func, ast.Attribute) and c.func.attr in ("append", "extend")]
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                    n.func.attr in ("append", "extend") and any(uses(a) for a in n.args):
                new = [n.func.value]
            for t in new:
                for m in ast.walk(t):
                    if isinstance(m, ast.Name) and m.id not in tainted:
                        tainted.add(m.id)
                        grew = True
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _WRITERS and
               any(uses(a) for a in n.args) for n in after)
