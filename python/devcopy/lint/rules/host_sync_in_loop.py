"""devcopy-host-sync-in-loop: `.item()`, `.cpu()`, `.tolist()`, `.numpy()`,
`float(t)`, `print(t)` on every iteration of a loop, judged as the C++ check
judges them: periodic guards are fine, so are values the host needs (control
flow, indexing, host results) and per-sample output outside training steps."""
import ast

from .._kinds import MODULE, NUMPY, TENSOR, dotted, returns_tensor
from .._scopes import parameter_names
from ._elements import per_element as _per_element, read_line as _read_line
from ._reads import LOGS as _LOGS, format_sync as _format_sync, formatted as _formatted, sync as _sync
from ._results import is_list as _is_list, read_targets, spelled_total
from ._totals import (METERS as _PROGRESS, appended_total, feeds_meter, flat as _flat, into_table, only_totals,
                      results_whole, returned_unreduced, written_after)

RULE = "devcopy-host-sync-in-loop"
_CONTAINERS = frozenset(("append", "extend", "add", "insert"))


def on_format(walk, node, value):
    """f"{loss:.3f}" and "%.3f" % loss of a device tensor."""
    loop = walk.in_loop() or walk.step_frame
    if loop is None or walk.facts.cpu_fixed or not walk.facts.uses_device or _in_dataset(walk):
        return
    found = _formatted(walk, value)
    if found is not None and loop.runs_every_iteration():
        _judge_read(walk, node, loop, found, None)


def on_call(walk, call, q, meth, recv):
    loop = walk.in_loop() or walk.step_frame
    if walk.facts.cpu_fixed or not walk.facts.uses_device:
        return
    if loop is None:
        fn = walk.scope.func
        if meth == "item" and fn is not None and walk.scope.cls is None and not hasattr(fn, "devcopy_reads") \
                and _sync(walk, call, meth, recv):
            fn.devcopy_reads = call  # a helper that reads a tensor on the host: judged where it is called
        return
    if isinstance(call.func, ast.Name) and hasattr(walk.functions.get(call.func.id), "devcopy_reads"):
        return _helper(walk, call, loop)
    if recv is not None and recv[0] in (MODULE, NUMPY) or _in_dataset(walk):
        return
    found = _format_sync(walk, call) if meth == "format" and (recv is None or recv[0] != TENSOR) \
        else _sync(walk, call, meth, recv)
    if found is None:
        return
    stmt = walk.stmt
    if isinstance(stmt, ast.Expr) and stmt.value is call and meth is not None and meth not in _LOGS:
        return  # devcopy-discarded-copy reports a dropped read
    # A second read of an unchanged tensor is redundant however often the
    # iteration runs (`if isinstance(m, nn.BatchNorm2d):` in a loop over
    # modules), unless a `%` guard makes it a periodic log.
    every = loop.runs_every_iteration()
    if loop is walk.in_loop() and (every or not _periodic_path(walk, loop)) and _read_again(walk, loop, call, found) \
            or not every:
        return
    _judge_read(walk, call, loop, found, meth)


def _periodic_path(walk, loop):
    """Whether an `if` around the call runs every N iterations."""
    return any(loop.periodic_test(node.test) for node, _ in walk.path_ifs)


def _read_again(walk, loop, call, found):
    """The same tensor, unchanged, read on the host a second time in one
    iteration (`ssim(hr.cpu().numpy(), ...)` after `psnr(hr.cpu().numpy(), ...)`)."""
    what, tensor = found
    if walk.uses and walk.uses[-1][0] == "need":
        return False  # a condition or an index: judged as such
    text = walk.segment(tensor)
    first = loop.host_reads.get(text)
    if first is not None:
        node, ifs, _ = first
        if walk.path_ifs == ifs:  # both reads run on every path through the iteration that reaches them
            _report(walk, call, loop, f"{what} a second time in this iteration: it was already read "
                                      f"at line {node.lineno} and has not changed since, so the device "
                                      "is waited for and the value copied twice; keep the first copy "
                                      "and reuse it")
            return True
        return False
    names = frozenset(n.id for n in ast.walk(tensor) if isinstance(n, ast.Name))
    loop.host_reads[text] = (call, walk.path_ifs, names)
    return False


def _judge_read(walk, call, loop, found, meth):
    """Reports a read made on every iteration unless the host needs it."""
    what, tensor = found
    source = _per_element(walk, loop, tensor, meth)
    if source is not None:
        name = walk.segment(source)
        return _report(walk, _read_line(call), loop, f"{what} and waits for the device on every iteration of "
                       f"this loop, one element at a time; copy '{name}' to the host once "
                       "before the loop (.tolist() or .cpu()) and read its elements there")
    if meth == "cpu" and _unchanged(walk, loop, tensor):
        name = walk.segment(tensor)
        return _report(walk, _read_line(call), loop, f"{what} and waits for the device on every iteration of "
                       f"this loop, though '{name}' does not change in it; copy it to the host once before "
                       "the loop and reuse the copy")
    training = _training_step(walk)
    logged = meth in _LOGS
    printed = isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "print"
    if logged:
        why = _OUTPUT if training else None  # logged from a rollout or an evaluation: its author's call
    else:
        why = (_OUTPUT if training else None) if printed else _judge(walk, call, loop, training)
    if why is not None:
        _report(walk, call, loop, f"{what} and waits for the device on every {why}")


def _unchanged(walk, loop, tensor):
    """A local the loop never rebinds nor changes, copied whole
    (`target.detach().cpu()` in a plotting loop): every iteration copies the
    same bytes. Not in a training loop, where an optimizer's step changes
    parameters in place."""
    while isinstance(tensor, ast.Call) and isinstance(tensor.func, ast.Attribute) and \
            tensor.func.attr in ("detach", "contiguous") and not tensor.args:
        tensor = tensor.func.value
    if not isinstance(tensor, ast.Name) or loop.training or loop.around_training or _training_step(walk):
        return False
    return loop.invariant(tensor) and tensor.id not in loop.targets


def _helper(walk, call, loop):
    """`loss, n_correct = cal_performance(...)` on every step, a function of
    the file that reads with item(), only to add a result to a host total."""
    stmt = walk.stmt
    if not isinstance(stmt, ast.Assign) or stmt.value is not call or not loop.runs_every_iteration():
        return
    fn, training = walk.functions[call.func.id], _training_step(walk)
    known = read_targets(fn, stmt.targets)  # the names the helper's reads go to, when its returns say
    names = known or [n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    whys = [_follow(walk, loop, stmt, name, training) or "" for name in names]
    if any("host total" in w for w in whys):
        why = "only to add the value to a host total"
    elif known and _OUTPUT in whys:  # logger.push(metrics) on every training step
        why = "only to report it"
    else:
        return
    _report(walk, call, loop, f"'{call.func.id}()' reads a tensor on the host (item() at line "
                              f"{fn.devcopy_reads.lineno}) and waits for the device on every iteration of "
                              f"this loop, {why}; return the tensor, accumulate on the device and read "
                              "the total once after the loop")


def on_comprehension(walk, node, gen):
    """`[i for i, w in enumerate(words) if w != end]` over a device tensor: each
    test of an element reads it on the host, one sync per element."""
    loop = walk.in_loop()
    if loop is None or walk.facts.cpu_fixed or not walk.facts.uses_device:
        return
    it = gen.iter
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" and it.args:
        it = it.args[0]
    k = walk.kind_of(it)
    if not k or k[0] != TENSOR or k[1] == "cpu" or not loop.runs_every_iteration():
        return
    names = {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
    if any(isinstance(n, ast.Name) and n.id in names for c in gen.ifs for n in ast.walk(c)):
        return _report(walk, node, loop, f"testing each element of '{walk.segment(it)}' in Python reads it on the "
                                         "host and waits for the device once per element, on every iteration of "
                                         "this loop; compare on the device (torch.nonzero(...)) or copy it once "
                                         "with .tolist()")
    elt = getattr(node, "elt", None)
    if elt is not None and _reads_number(elt, names):
        _report(walk, node, loop, f"reading each element of '{walk.segment(it)}' as a number reads it on the host "
                                  "and waits for the device once per element, on every iteration of this loop; "
                                  "copy it once with .tolist() and read the numbers there")


def _reads_number(elt, names):
    """`int(n)`, `float(n)`, `n.item()` of a comprehension's own element."""
    for n in ast.walk(elt):
        if isinstance(n, ast.Call) and len(n.args) == 1 and isinstance(n.func, ast.Name) and \
                n.func.id in ("int", "float") and isinstance(n.args[0], ast.Name) and n.args[0].id in names:
            return True
        if isinstance(n, ast.Call) and not n.args and isinstance(n.func, ast.Attribute) and n.func.attr == "item" \
                and isinstance(n.func.value, ast.Name) and n.func.value.id in names:
            return True
    return False


def _training_step(walk):
    """Whether this code runs on every step of a training loop: the innermost
    loop trains, or an inner loop (over metrics, heads) runs on every
    iteration of one that does."""
    for frame in reversed(walk.loops):
        if not frame.runs_every_iteration():
            return False
        if frame.training:
            return True
    step = walk.step_frame  # a function of the file that is one step of its caller's loop
    return step is not None and step.runs_every_iteration() and step.training


def _report(walk, call, loop, message):
    walk.report(RULE, call, message, notes=[(walk.path, loop.node.lineno, loop.node.col_offset, "loop starts here")])


_OUTPUT = ("training step, stalling the GPU queue each time, to report it; report every N "
           "steps, or accumulate on the device and read once after the loop")


_TOTALS = ("iteration of this loop, only to compute metric totals on the host; count on the "
           "device (torch.sum, torch.bincount) and read the totals once after the loop")


_OUTPUT_ANY = ("iteration of this loop only to report it (a meter, a progress bar, a log); "
               "accumulate on the device and read once after the loop, or every N steps")


def _judge(walk, call, loop, training):
    """Why the read is waste, or None when the host needs the value."""
    top = walk.uses[-1] if walk.uses else None
    if top is not None:
        kind, name, node = top
        if kind == "need":
            return None
        if name and name.startswith("torch.") and (name.count(".") == 1 and returns_tensor(name[6:])
                                                   or name.startswith("torch.nn.functional.")):
            return f"iteration of this loop, only to hand the value back to '{name}'; pass the tensor itself"
        if name in _CONTAINERS and isinstance(node.func, ast.Attribute):
            return _kept(walk, loop, node.func.value, training, call)
        if name in _GROWS and walk.stmt is not None and node is getattr(walk.stmt, "value", None):
            acc = _grown(walk, walk.stmt, None)
            if acc is not None and _only_after(walk, loop, acc):  # preds = np.append(preds, out.cpu().numpy())
                return (f"iteration of this loop, only to keep it in '{acc}' for after the loop; keep the "
                        "tensors and copy them to the host once after the loop (torch.cat(...).cpu())")
        if (name in _PROGRESS and isinstance(node.func, ast.Attribute) or _progress_bar(walk)) \
                and not loop.around_training:
            return _OUTPUT_ANY  # a meter or a progress bar, training or evaluating
        if not training and not loop.around_training and feeds_meter(walk, loop, node):
            return _OUTPUT_ANY  # a function's results computed from the read, fed to a meter
        if not loop.around_training and appended_total(walk, loop, node):
            return _TOTALS  # errors.append(compute_accuracy(gt, pred.cpu().numpy()))
        return _OUTPUT if training else None
    stmt = walk.stmt
    if isinstance(stmt, ast.AugAssign):
        if isinstance(stmt.target, ast.Name):
            if _is_list(walk.scope.func, stmt.target.id):  # results += t.tolist(): a container
                return _kept(walk, loop, stmt.target, training, call)
            return (f"iteration of this loop, only to add it to '{stmt.target.id}'; accumulate on "
                    "the device and read the total once after the loop")
        return _OUTPUT if training else None
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if len(targets) == 1 and isinstance(targets[0], ast.Subscript) and stmt.value is call and \
                into_table(walk, loop, targets[0]):
            return _TOTALS  # losses[k] = loss.item(), then losses.mean() after the loop
        if len(names) != len(targets):
            return _OUTPUT if training else None  # a field or element: host results
        why = _follow(walk, loop, stmt, names[0], training)
        if why is None and only_totals(walk, loop, stmt, names[0]):
            why = _TOTALS
        return why
    return None


def _progress_bar(walk):
    """Whether the read is formatted for a progress bar: a call of a function
    named for one (`printProgressBar(..., suffix='loss: {:.5f}'.format(...))`),
    or `add`/`update` of a bar (`progbar.add(n, values=...)`)."""
    return any(_bar_call(node) for _, _, node in walk.uses)


def _reporting(node):
    """A call that reports what it is given: a meter's, a bar's or a
    logger's method (`meter.update(v)`, `pbar.set_postfix(...)`), or a bar."""
    f = getattr(node, "func", None)
    return isinstance(f, ast.Attribute) and f.attr in _PROGRESS or _bar_call(node)


def _bar_call(node):
    """A call of a function named for a progress bar, or a bar's `add`/`update`."""
    f = getattr(node, "func", None)
    if isinstance(f, ast.Name):
        return "progress" in f.id.lower()
    return isinstance(f, ast.Attribute) and f.attr in ("add", "update") and isinstance(f.value, ast.Name) and \
        ("progress" in f.value.id.lower() or f.value.id.lower().endswith("bar"))


def _only_reported(loop, name):
    """A local list the loop fills only to hand it to a meter or a progress
    bar (`logs.append(('psnr', psnr.item()))` then `progbar.add(n,
    values=logs)`), also through lists joined from it (`logs = e_logs +
    i_logs`, `logs = [("it", i)] + logs`)."""
    body = list(_flat(loop.node.body))
    names, joined = {name}, set()
    for s in body:  # the lists joined from it, in order
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) and \
                isinstance(s.value, ast.BinOp) and any(isinstance(n, ast.Name) and n.id in names
                                                       for n in ast.walk(s.value)):
            names.add(s.targets[0].id)
            joined.add(id(s))
    skip = {id(n) for s in body if id(s) in joined for n in ast.walk(s)}
    reported = False
    for c in (n for s in loop.node.body for n in ast.walk(s)):
        if isinstance(c, ast.Call) and id(c) not in skip and \
                any(isinstance(a, ast.Name) and a.id in names for a in c.args + [k.value for k in c.keywords]):
            if not _reporting(c):
                return False
            reported = True
    return reported


def _kept(walk, loop, container, training, call):
    """A value appended to a container: a local the loop only fills is read
    after the loop (waste); a member, parameter or returned list holds results.
    From a training loop, a returned list of arrays (each batch's predictions)
    is results too, while one of numbers (`losses.append(loss.item())`) is a
    per-step history, read on every step."""
    if not isinstance(container, ast.Name):
        return _OUTPUT if training else None
    name = container.id
    fn = walk.scope.func
    params = parameter_names(fn)
    f = getattr(call, "func", None)  # a formatted value (f"{loss:.3f}") is a number too
    number = not isinstance(f, ast.Attribute) or f.attr == "item"
    if results_whole(fn, loop, name) and (not training or not number and returned_unreduced(fn, loop, name)):
        return None
    if name in params or _read_in(loop.node.body, name, exclude=_CONTAINERS):
        if not loop.around_training and _only_reported(loop, name):
            return _OUTPUT_ANY
        return _OUTPUT if training else None
    return (f"iteration of this loop, only to keep it in '{name}' for after the loop; keep the "
            "tensors and copy them to the host once after the loop (torch.stack(...).cpu())")


def _in_dataset(walk):
    """A method of a Dataset: it reads and prepares host data for a loader."""
    cls = walk.scope.cls
    return cls is not None and not cls.is_module and \
        any((dotted(b) or "").endswith("Dataset") for b in cls.node.bases)


def _read_in(body, name, exclude=()):
    """Whether the loop reads `name` other than through the calls in exclude."""
    receivers, loads = set(), []
    for s in body:
        for n in ast.walk(s):
            if isinstance(n, ast.Attribute) and n.attr in exclude and isinstance(n.value, ast.Name):
                receivers.add(id(n.value))
            elif isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load):
                loads.append(n)
    return any(id(n) not in receivers for n in loads)


def _follow(walk, loop, stmt, name, training):
    """A read kept in a variable: judged by the variable's uses in the loop.
    Uses before it count too (the next iteration reads what this one kept),
    except for a loop variable, which the next iteration rebinds first."""
    uses = []
    after, seen, top = name not in loop.targets, False, {id(s) for s in loop.node.body}
    for s in _flat(loop.node.body):
        if s is stmt:
            after = seen = True
        elif not seen and id(s) in top and isinstance(s, ast.Assign) and \
                any(isinstance(t, ast.Name) and t.id == name for t in s.targets):
            after = False  # rebound before the read: what the last iteration kept is dropped
        elif after:
            uses.extend(_uses_of(walk, s, name))
    if not uses:
        return (f"iteration of this loop, only to keep it in '{name}' for after the loop; keep "
                "the tensor and read it once after the loop")
    if "need" in uses:
        return None
    if "accumulate" in uses:
        return ("iteration of this loop, only to add it to a host total; accumulate on the "
                "device and read the total once after the loop")
    # Only a number fed to a meter; a dict or list built around the read
    # (`res = {t['id'].item(): out ...}`, then `evaluator.update(res)`) holds results.
    if all(u == "report" for u in uses) and not loop.around_training and \
            isinstance(stmt.value, (ast.Call, ast.BinOp, ast.UnaryOp)):
        return _OUTPUT_ANY  # `acc = (pred == y).sum().item() / n` then `meter.update(acc, n)`
    kept = {u[5:] for u in uses if u.startswith("keep:")}
    if len(kept) == 1 and all(u.startswith("keep:") for u in uses):
        acc = kept.pop()
        fn = walk.scope.func
        params = parameter_names(fn)
        if acc not in params and not results_whole(fn, loop, acc):
            return (f"iteration of this loop, only to keep it in '{acc}' for after the loop; keep the "
                    "tensors and copy them to the host once after the loop (torch.cat(...).cpu())")
    return _OUTPUT if training else None


# NumPy calls that grow an array: `acc = np.append(acc, x)` keeps x in acc.
_GROWS = frozenset(("numpy.append", "numpy.concatenate", "numpy.hstack", "numpy.vstack"))


def _grown(walk, stmt, name):
    """`acc = np.append(acc, name)`: the name of the array it grows, or None."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Call) and walk.imports.qual(stmt.value.func) in _GROWS):
        return None
    acc = stmt.targets[0].id
    names = {n.id for a in stmt.value.args for n in ast.walk(a) if isinstance(n, ast.Name)}
    return acc if acc in names and (name is None or name in names) else None


def _only_after(walk, loop, acc):
    """An array the function neither was given, returns nor saves: what the
    loop grows it with is read only after the loop."""
    fn = walk.scope.func
    params = parameter_names(fn)
    return acc not in params and not results_whole(fn, loop, acc) and \
        not written_after(fn, loop, acc)


# What a tensor's metadata says without reading its data.
_METADATA = frozenset(("shape", "size", "ndim", "dim", "numel", "dtype", "device"))


def _sizes_read(node, name):
    """The loads of `name` in `node` that only ask its size (`total +=
    clean.shape[0]`, `len(x)`, `x.numel()`): no value of the read."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and n.attr in _METADATA:
            inner = n.value
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len" and len(n.args) == 1:
            inner = n.args[0]
        else:
            continue
        if isinstance(inner, ast.Name) and inner.id == name:
            out.add(id(inner))
    return out


def _uses_of(walk, stmt, name):
    """How one statement uses `name`: 'need' (a condition or index),
    'accumulate' (+= into a total), 'report' (fed to a meter or a logger),
    'keep:<array>' (grows a NumPy array), 'other'."""
    acc = _grown(walk, stmt, name)
    if acc is not None:
        return ["keep:" + acc]
    if spelled_total(stmt, name):
        return ["accumulate"]
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
            isinstance(stmt.value.func, ast.Attribute) and stmt.value.func.attr in _PROGRESS and \
            any(isinstance(a, ast.Name) and a.id == name
                for a in stmt.value.args + [k.value for k in stmt.value.keywords]):
        return ["report"]  # meter.update(acc, n)
    out = []
    tests = []
    if isinstance(stmt, (ast.If, ast.While)):
        tests.append(stmt.test)
    elif isinstance(stmt, ast.Assert):
        tests.append(stmt.test)
    for t in tests:
        if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(t)):
            out.append("need")
    own = [stmt] if not isinstance(stmt, (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.Try)) else []
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        own = [stmt.iter]  # `for top in zip(names, codes)`: its body is flattened on its own
    elif isinstance(stmt, ast.With):
        own = [i.context_expr for i in stmt.items]
    for s in own:
        sizes = _sizes_read(s, name)
        for n in ast.walk(s):
            if id(n) in sizes:
                continue
            if isinstance(n, (ast.Subscript, ast.Compare)):
                inner = n.slice if isinstance(n, ast.Subscript) else n
                if any(isinstance(m, ast.Name) and m.id == name for m in ast.walk(inner)):
                    out.append("need")
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load):
                out.append("accumulate" if isinstance(s, ast.AugAssign) else "other")
    return out
