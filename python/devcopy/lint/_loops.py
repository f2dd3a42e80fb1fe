"""Loops as the loop rules see them: what changes in a loop, whether it is a
training step, and which iterations run a branch (LoopGuards in C++)."""
import ast

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
TRAIN_METHODS = frozenset(("backward", "zero_grad"))
# Methods that change the object they are called on (running statistics, containers).
_MUTATORS = ("update", "append", "extend", "insert", "pop", "clear", "remove", "reset", "setdefault",
             "push", "load_state_dict")
# Builtins that do not change what they are given.
_PURE = frozenset("len print float int str bool abs round min max sum sorted list tuple range enumerate zip".split())


def _store_key(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.value.id + "." + node.attr
    if isinstance(node, ast.Subscript):
        return _store_key(node.value)
    if isinstance(node, ast.Starred):
        return _store_key(node.value)
    return None


def trains(call, train_names):
    """A call that runs a training step: backward(), an optimizer's step(), or
    a function or method of the file whose body does."""
    f = call.func
    if isinstance(f, ast.Attribute):
        if f.attr in TRAIN_METHODS:
            return True
        if f.attr == "step" and not call.args:
            recv = _store_key(f.value) or ""
            return "sched" not in recv.lower()
        return isinstance(f.value, ast.Name) and f.value.id == "self" and f.attr in train_names
    return isinstance(f, ast.Name) and f.id in train_names


class Loop:
    """One loop being walked: what its body changes, and the guards inside."""

    def __init__(self, node, walk):
        self.node, self.guards = node, []
        self.changed, self.carried, self.targets = set(), set(), set()
        self.rebound = set()  # names and fields assigned in the loop (not only changed in place)
        self.host_reads = {}  # tensor text -> (read, branches, names): reads so far in this iteration
        self.mutated = set()  # receivers of in-place methods (x.add_(1), meter.update(v))
        self.training = self.around_training = False
        self.moved_names = set()  # names the loop moves to a device (`x = x.cuda()`)
        self.stored = set()  # names and fields its body assigns
        before = walk.scope.env
        if not isinstance(node, ast.While):
            for n in ast.walk(node.target):
                key = _store_key(n)
                if key:
                    self.targets.add(key)
                    self.changed.add(key)
                    self.rebound.add(key)
        inner_trains = False
        errors, others, assigned = set(), set(), {}
        stack = [(s, 0) for s in node.body]
        if isinstance(node, ast.While):
            stack.append((node.test, 0))
        while stack:
            n, depth = stack.pop()
            t = type(n)
            if t in _SCOPES:
                continue
            if t in (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.With,
                     ast.NamedExpr if hasattr(ast, "NamedExpr") else ast.Assign):
                targets = n.targets if t is ast.Assign else \
                    [i.optional_vars for i in n.items if i.optional_vars] if t is ast.With else [n.target]
                test = t is ast.Assign and _error_test(n.value)
                if t is ast.Assign and len(targets) == 1 and isinstance(targets[0], ast.Name):
                    assigned.setdefault(targets[0].id, []).append(n.value)
                for target in targets:
                    for m in ast.walk(target):
                        key = _store_key(m) if isinstance(m, (ast.Name, ast.Attribute, ast.Subscript)) else None
                        if key and isinstance(getattr(m, "ctx", None), (ast.Store, ast.Del)):
                            self.changed.add(key)
                            self.rebound.add(key)
                            self.stored.add(key)
                            (errors if test and m is target else others).add(key)
                            if t is ast.AugAssign or key in before:
                                self.carried.add(key)
            elif t is ast.Call:
                f = n.func
                if isinstance(f, ast.Attribute) and f.attr in ("cuda", "to") and isinstance(f.value, ast.Name) and \
                        (f.attr == "cuda" or walk.move_target(n)[0] == "device"):
                    self.moved_names.add(f.value.id)  # for host_parts
                if isinstance(f, ast.Attribute) and (f.attr.endswith("_") and not f.attr.startswith("_")
                                                     or f.attr.startswith(_MUTATORS)):
                    key = _store_key(f.value)  # x.add_(1), obs_rms.update(batch)
                    if key:
                        self.changed.add(key)
                        self.mutated.add(key)
                if trains(n, walk.train_names):
                    if depth == 0:
                        self.training = True
                    else:
                        inner_trains = True
                library = walk.imports.qual(f) is not None or isinstance(f, ast.Name) and f.id in _PURE
                for a in () if library else n.args:
                    key = _store_key(a)  # passed to user code: may be changed in place
                    if key and not isinstance(a, ast.Name):
                        self.changed.add(key)
            child_depth = depth + 1 if t in _LOOPS else depth
            for c in ast.iter_child_nodes(n):
                stack.append((c, child_depth))
        # A per-epoch (per-update) loop around the training steps: what it
        # reports, it reports once per epoch.
        self.around_training = inner_trains and not self.training
        # The fields a guard may count or flag with: assigned or changed in
        # place. One only passed to a call (`validate(..., hp.distributed)`)
        # is not rebound by it, so a branch on it runs on every iteration.
        self.flag_keys = self.rebound | self.mutated
        # Flags only ever set from a NaN/overflow test (`is_overflow =
        # math.isnan(grad_norm)`): false on a typical step.
        self.error_flags = errors - others
        self.periodic = _periodic(assigned)
        self.assigned = assigned  # local -> the values the loop assigns it (plain `name = value`)
        # Locals the loop sets to True and to False (`skip = False`, then
        # `if ...: skip = True`): a branch on one depends on the data.
        self.flags = {k for k, vs in assigned.items()
                      if all(type(v) is ast.Constant and type(v.value) is bool for v in vs)
                      and len({v.value for v in vs}) == 2}
        if inner_trains:
            self.training = False

    def periodic_test(self, test):
        """Whether a condition runs every N iterations: it takes a `%`, or
        names a local set only from one (`early_phase = batch_idx % freq ==
        0 ...; if early_phase or late_phase:`)."""
        return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) or
                   isinstance(n, ast.Name) and n.id in self.periodic for n in ast.walk(test))

    def runs_every_iteration(self):
        return all(self.guards)

    def invariant(self, node, rebinding=False):
        """True when nothing `node` names changes in the loop (with rebinding:
        is assigned anew; `ema.update()` changes the values, not the object)."""
        changed = self.rebound if rebinding else self.changed
        for n in ast.walk(node):
            if isinstance(n, ast.Call):
                return False
            key = _store_key(n) if isinstance(n, (ast.Name, ast.Attribute)) else None
            if key and (key in changed or key.split(".")[0] in changed):
                return False
        return True


def leaves_loop(body):
    """A branch that ends in break, return or raise runs at most once."""
    return bool(body) and isinstance(body[-1], (ast.Break, ast.Return, ast.Raise))


def guard_counts(walk, test, branch, body):
    """Whether a branch runs on a typical iteration of the innermost loop."""
    loop = walk.in_loop() or walk.step_frame
    if loop is None:
        return True
    if leaves_loop(body):
        return False
    clear = _cleared_flags(test, branch) & loop.error_flags  # the branch taken when no error was seen
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, branch = test.operand, "else" if branch == "then" else "then"
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and \
            not all(_steady(loop, x) for x in [test.left] + test.comparators):
        # `if i == 0:` picks one iteration; `if task == last:` on what the
        # loop never changes is taken on all of them or none.
        op = type(test.ops[0])
        if op in (ast.Eq, ast.Is):
            return branch == "else"
        if op in (ast.NotEq, ast.IsNot):
            return branch == "then"
    if loop.periodic_test(test):
        return False
    for n in ast.walk(test):
        if isinstance(n, ast.Call) and not _rank_test(n) and not _same_answer(loop, n):
            return False
        if isinstance(n, ast.Attribute) and _store_key(n) in loop.flag_keys:
            return False  # a field the loop updates: a counter or a flag
        if isinstance(n, ast.Name) and (n.id in loop.carried or n.id in loop.flags) and n.id not in clear:
            return False
    return True


# Calls that answer the same for the same arguments: on what the loop does
# not change, the branch is taken on every iteration or on none.
_PURE_BUILTINS = frozenset(("int", "float", "str", "bool", "len", "isinstance", "hasattr", "abs", "min", "max"))
_SHAPE_METHODS = frozenset(("size", "dim", "numel"))


def _same_answer(loop, call):
    """`int(version[0]) > 0`, `len(x.size()) == 3`: a builtin or a shape
    query of what the loop does not change, not a call that may count."""
    f = call.func
    if isinstance(f, ast.Name) and f.id in _PURE_BUILTINS:
        parts = call.args
    elif isinstance(f, ast.Attribute) and f.attr in _SHAPE_METHODS and not call.args:
        parts = [f.value]
    else:
        return False
    if call.keywords:
        return False
    return all(_steady(loop, a) for a in parts)


def _steady(loop, node):
    """What the loop does not change, through calls that answer the same."""
    return _same_answer(loop, node) if isinstance(node, ast.Call) else loop.invariant(node)


def _periodic(assigned):
    """Locals the loop sets only from a `%` test, or from other such locals
    (`late = step % 2000 == 0`): a branch on one runs every N iterations."""
    out, grew = set(), True
    while grew:
        grew = False
        for name, values in assigned.items():
            if name not in out and all(
                    any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) and not isinstance(n.left, ast.Constant)
                        or isinstance(n, ast.Name) and n.id in out for n in ast.walk(v)) for v in values):
                out.add(name)
                grew = True
    return out


# Tests of the process's rank: what they answer does not change in a loop.
_RANK_TESTS = frozenset(("is_main_process", "is_master", "is_main", "is_rank_zero", "is_rank_0",
                         "is_primary", "is_local_master"))


def _rank_test(call):
    """`is_main_process()`: a call with no arguments that asks for the rank."""
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return name in _RANK_TESTS and not call.args and not call.keywords


def _error_test(value):
    """math.isnan(x), torch.isinf(x).any(): a test for a rare failure."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in ("any", "item"):
        value = value.func.value
    if not isinstance(value, ast.Call):
        return False
    f = value.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return name in ("isnan", "isinf")


def _cleared_flags(test, branch):
    """Names the branch requires false: `not flag` (alone or in an `and`)
    for the then-branch, `flag` for the else-branch."""
    if branch == "else":
        return {test.id} if isinstance(test, ast.Name) else set()
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    return {p.operand.id for p in parts if isinstance(p, ast.UnaryOp) and isinstance(p.op, ast.Not)
            and isinstance(p.operand, ast.Name)}


class Guard:
    """Marks a branch as taken on few iterations of the innermost loop."""

    def __init__(self, walk, counts):
        self.walk, self.counts = walk, counts

    def __enter__(self):
        # Kept: an error raised in the body unwinds past loops the walk has
        # already left; popping from the current one hid that error.
        self.loop = self.walk.in_loop() or self.walk.step_frame
        if self.loop is not None:
            self.loop.guards.append(self.counts)

    def __exit__(self, *exc):
        if self.loop is not None:
            self.loop.guards.pop()


def step_loops(tree, functions, train_names):
    """{function: loop} for the file's functions that run one training step
    (backward() or step() outside any loop of theirs: `def train(epoch)` of
    a full-graph model) and are called on every iteration of a loop of the
    file: their reads happen once per step of that loop."""
    steps = {name for name in train_names if name in functions and _one_step(functions[name].body, train_names)}
    out = {}
    if not steps:
        return out
    for n in ast.walk(tree):
        if type(n) in _LOOPS:
            for s in n.body:  # statements of every iteration, not under an `if`
                if isinstance(s, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign)):
                    for c in ast.walk(s):
                        if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in steps:
                            out.setdefault(c.func.id, n)
    return out


def _one_step(body, train_names):
    stack = list(body)
    while stack:
        n = stack.pop()
        if type(n) in _LOOPS or isinstance(n, _SCOPES):
            continue
        if isinstance(n, ast.Call) and trains(n, train_names) and not (
                isinstance(n.func, ast.Name) and n.func.id in train_names):
            return True
        stack.extend(ast.iter_child_nodes(n))
    return False


def host_parts(frame):
    """The parts of a batch a loop over a loader never moves, while it moves
    others (`for x, y in loader: x = x.cuda()`): the loader yields host
    tensors, so `y` stays on the host (`y.cpu()` copies nothing). A part
    rebound in the loop is judged by what it is bound to."""
    target = frame.node.target
    if not isinstance(target, ast.Tuple) or not frame.moved_names:
        return ()
    names = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}  # `for i, (x, y) in enumerate(...)`
    if not names & frame.moved_names:
        return ()
    return sorted(n for n in names - frame.moved_names if n not in frame.stored)
