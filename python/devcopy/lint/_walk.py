"""The one pass over a file's AST: statements in order, the kind of every
expression (_kinds), the loops and guards around it, and the rule hooks fired
at each call and expression statement."""
import ast

from . import _imports
from ._kinds import (CKPT, DEVICE, DTYPE_METHODS, FACTORIES, LIKE_FACTORIES, MODULE,
                     MODULE_ONLY_METHODS, MODULE_SELF_METHODS, NON_TENSOR_METHODS, NUMPY,
                     TENSOR, TENSOR_ATTRS, TORCH_NON_TENSOR, const_str, is_device_name,
                     place_of, string_place)
from ._loops import Loop, guard_counts, leaves_loop

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Calls that pass a value through unchanged, for how a read value is used.
TRANSPARENT = frozenset("float int bool round abs str repr format len".split())


class ClassFacts:
    """What one class says about itself: bases, members, moves in __init__."""

    def __init__(self, node, is_module):
        self.node, self.is_module = node, is_module
        self.members = {}       # attr -> kind
        self.owned = {}         # attr -> list of class refs built into it
        self.init_moves = []    # (node, target text): moves of self or members in __init__
        self.registered = set()  # parameters and buffers: an optimizer changes them
        self.overrides_to = any(isinstance(s, _FUNCS) and s.name == "to" for s in node.body)


class Scope:
    def __init__(self, func, cls, outer=None):
        self.func, self.cls = func, cls
        self.env = dict(outer.env) if outer else {}
        self.built = dict(outer.built) if outer else {}  # name -> class refs it was built from
        self.moves = []   # (key, target, path, node): module moves, for twice-in-a-function
        self.moved = set()  # receivers moved so far (keys)
        self.returns = None


class Walk:
    """Walks one parsed file; rules read its facts through the hooks they get."""

    def __init__(self, path, source, tree, rules, facts):
        self.path, self.source, self.tree = path, source, tree
        self.facts = facts  # _facts.FileFacts: the file's device use and import table
        self.imports = _imports.Imports(path)
        self.rules = rules
        self.call_hooks = [r.on_call for r in rules if hasattr(r, "on_call")]
        self.stmt_hooks = [r.on_expr_stmt for r in rules if hasattr(r, "on_expr_stmt")]
        self.findings, self.events = [], []
        self.classes, self.functions = {}, {}
        self.loops, self.uses, self.path_ifs = [], [], ()
        self.scope = Scope(None, None)
        self.module_env = self.scope.env
        self.stmt = None
        self.lines = source.splitlines()
        self.train_names = set()

    # --- driving -----------------------------------------------------------
    def run(self):
        body = self.tree.body
        for s in body:
            if isinstance(s, (ast.Import, ast.ImportFrom)):
                self.imports.add(s)
        for s in body:
            if isinstance(s, ast.ClassDef):
                self.classes[s.name] = ClassFacts(s, self.imports.is_module_class(s, self.classes))
                for m in s.body:
                    if isinstance(m, _FUNCS) and self.trains(m):
                        self.train_names.add(m.name)
            elif isinstance(s, _FUNCS):
                self.functions[s.name] = s
                if self.trains(s):
                    self.train_names.add(s.name)
        self.block([s for s in body if not isinstance(s, (ast.ClassDef,) + _FUNCS)])
        for s in body:
            if isinstance(s, ast.ClassDef):
                self.class_def(s)
        for s in body:
            if isinstance(s, _FUNCS):
                self.function(s, None)
        for r in self.rules:
            if hasattr(r, "on_file_end"):
                r.on_file_end(self)

    def trains(self, fn):
        """A function whose body runs a training step (by its text: cheap)."""
        text = "\n".join(self.lines[fn.lineno - 1:fn.end_lineno])
        return ".backward(" in text or ".zero_grad(" in text

    def class_def(self, node):
        facts = self.classes.get(node.name)
        if facts is None:  # a nested class
            facts = self.classes[node.name] = ClassFacts(node, self.imports.is_module_class(node, self.classes))
        methods = [s for s in node.body if isinstance(s, _FUNCS)]
        methods.sort(key=lambda m: m.name != "__init__")
        for m in methods:
            self.function(m, facts)

    def function(self, node, cls):
        outer = self.scope
        self.scope = Scope(node, cls, outer if cls is None and outer.func else None)
        if cls is None and not outer.func:
            self.scope.env = dict(self.module_env)
        saved = self.loops, self.path_ifs
        self.loops, self.path_ifs = [], ()
        self.parameters(node, cls)
        self.block(node.body)
        if cls is None and outer.func is None:
            self.functions[node.name] = node
        node.devcopy_returns = self.scope.returns
        self.scope = outer
        self.loops, self.path_ifs = saved

    def parameters(self, node, cls):
        a = node.args
        params = a.posonlyargs + a.args + a.kwonlyargs
        defaults = [None] * (len(a.posonlyargs + a.args) - len(a.defaults)) + list(a.defaults)
        defaults += list(a.kw_defaults)
        env = self.scope.env
        for i, (p, d) in enumerate(zip(params, defaults)):
            if i == 0 and cls is not None and p.arg == "self":
                env["self"] = (MODULE, cls.node.name) if cls.is_module else None
                continue
            kind = self.annotation(p.annotation)
            if kind is None and is_device_name(p.arg):
                kind = (DEVICE, None)
            if kind is None and node.name == "forward" and cls is not None and cls.is_module:
                if d is None or (isinstance(d, ast.Constant) and d.value is None):
                    kind = (TENSOR, None)
            if kind is None and d is not None:
                kind = self.expr(d)
                if kind and kind[0] != DEVICE:
                    kind = None
            if kind is None and is_device_name(p.arg):
                kind = (DEVICE, None)
            env[p.arg] = kind

    def annotation(self, node):
        if node is None:
            return None
        q = self.imports.qual(node) or ""
        if q in ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor"):
            return (TENSOR, None)
        if q == "torch.device":
            return (DEVICE, None)
        if q.startswith("torch.nn.") and q.rsplit(".", 1)[1][:1].isupper():
            return (MODULE, q.rsplit(".", 1)[1])
        if isinstance(node, ast.Name) and node.id in self.classes and self.classes[node.id].is_module:
            return (MODULE, node.id)
        return None

    # --- statements --------------------------------------------------------
    def block(self, stmts):
        for s in stmts:
            self.statement(s)

    def statement(self, s):
        prev, self.stmt = self.stmt, s
        t = type(s)
        if t is ast.Expr:
            kind = self.expr(s.value)
            for h in self.stmt_hooks:
                h(self, s, kind)
        elif t is ast.Assign:
            kind = self.expr(s.value)
            for target in s.targets:
                self.bind(target, kind, s.value)
        elif t is ast.AnnAssign:
            kind = self.expr(s.value) if s.value is not None else None
            self.bind(s.target, kind or self.annotation(s.annotation), s.value)
        elif t is ast.AugAssign:
            kind = self.expr(s.value)
            self.expr(s.target)
            if isinstance(s.target, ast.Name) and kind and kind[0] == TENSOR:
                self.scope.env[s.target.id] = kind
        elif t is ast.If:
            self.branches(s)
        elif t in _LOOPS:
            self.loop(s)
        elif t in (ast.With, ast.AsyncWith):
            for item in s.items:
                self.expr(item.context_expr)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, None, None)
            self.block(s.body)
        elif t is ast.Try or t.__name__ == "TryStar":
            self.block(s.body)
            with _Guard(self, False):
                for h in s.handlers:
                    self.block(h.body)
            self.block(s.orelse)
            self.block(s.finalbody)
        elif t is ast.Return:
            if s.value is not None:
                kind = self.expr(s.value)
                if self.scope.returns is None:
                    self.scope.returns = kind
        elif t in _FUNCS:
            self.function(s, None)
            self.scope.env[s.name] = None
        elif t is ast.ClassDef:
            self.class_def(s)
        elif t in (ast.Import, ast.ImportFrom):
            self.imports.add(s)
        elif t is ast.Assert:
            self.need(s.test)
        elif t is ast.Delete:
            for target in s.targets:
                self.expr(target)
        elif t is ast.Match if hasattr(ast, "Match") else False:
            self.expr(s.subject)
            for case in s.cases:
                with _Guard(self, False):
                    self.block(case.body)
        elif t is ast.Raise and s.exc is not None:
            self.expr(s.exc)
        self.stmt = prev

    def branches(self, s):
        self.need(s.test)
        saved = self.path_ifs
        for branch, body in (("then", s.body), ("else", s.orelse)):
            if not body:
                continue
            self.path_ifs = saved + ((id(s), branch),)
            with _Guard(self, guard_counts(self, s.test, branch, body)):
                self.block(body)
        self.path_ifs = saved

    def loop(self, s):
        if isinstance(s, ast.While):
            frame = Loop(s, self)
            if leaves_loop(s.body[-1:]):  # cannot start a second iteration
                self.block(s.body)
                return
            self.loops.append(frame)
            self.need(s.test)
        else:
            self.expr(s.iter)
            frame = Loop(s, self)
            self.bind(s.target, self.element_kind(s.iter), None)
            self.loops.append(frame)
        self.block(s.body)
        self.loops.pop()
        self.block(s.orelse)

    def element_kind(self, it):
        """What iterating `it` yields, for `for layer in self.layers`."""
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" and it.args:
            return ("E", self.element_kind(it.args[0]))
        kind = self.kind_of(it)
        if kind and kind[0] == MODULE:
            return kind
        if kind and kind[0] == TENSOR:
            return kind
        return None

    def bind(self, target, kind, value):
        t = type(target)
        if t is ast.Name:
            self.scope.env[target.id] = kind
            self.scope.built[target.id] = self.built_from(value)
            self.scope.moved.discard(target.id)
            if kind and kind[0] == MODULE and isinstance(value, ast.Call) and \
                    isinstance(value.func, ast.Attribute) and value.func.attr in ("to", "cuda"):
                self.scope.moved.add(target.id)  # model = Net().to(device)
        elif t is ast.Attribute:
            self.expr(target.value)
            if isinstance(target.value, ast.Name) and target.value.id == "self" and self.scope.cls:
                cls = self.scope.cls
                cls.members[target.attr] = kind
                if isinstance(value, ast.Call) and (self.imports.qual(value.func) or "").endswith("Parameter"):
                    cls.registered.add(target.attr)
                refs = self.built_from(value)
                if refs:
                    cls.owned.setdefault(target.attr, []).extend(refs)
                self.scope.moved.discard("self." + target.attr)
        elif t in (ast.Tuple, ast.List):
            elts = target.elts
            sub = [None] * len(elts)
            if kind and kind[0] == "TT":
                sub = [(TENSOR, kind[1])] * len(elts)
            elif kind and kind[0] == "E" and len(elts) == 2:
                sub = [None, kind[1]]
            elif isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(elts):
                sub = [self.kind_of(v) for v in value.elts]
            for e, k in zip(elts, sub):
                self.bind(e, k, None)
        elif t is ast.Starred:
            self.bind(target.value, None, None)
        else:
            self.expr(target)

    def built_from(self, value):
        """The module classes an expression constructs: refs for _facts."""
        if not isinstance(value, ast.Call):
            return []
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
                value.func.attr in MODULE_SELF_METHODS and self.imports.qual(value.func) is None:
            value = value.func.value  # Net().to(d), Net().eval()
        if not isinstance(value, ast.Call):
            return []
        q = self.imports.qual(value.func)
        if q in ("torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict"):
            refs = []
            for a in value.args:
                for n in ast.walk(a):
                    if isinstance(n, ast.Call):
                        refs.extend(self.class_ref(n))
            return refs
        return self.class_ref(value)

    def class_ref(self, call):
        f = call.func
        if isinstance(f, ast.Name):
            if f.id in self.classes:
                return [(self.path, f.id)] if self.classes[f.id].is_module else []
            ref = self.imports.package_ref(f.id)
            return [ref] if ref else []
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            ref = self.imports.package_ref(f.value.id, f.attr)
            return [ref] if ref else []
        return []

    # --- expressions -------------------------------------------------------
    def need(self, node):
        """Evaluates an expression whose value the host needs (a condition)."""
        self.uses.append(("need", None, None))
        self.expr(node)
        self.uses.pop()

    def kind_of(self, node):
        """The kind of an expression already walked (no hooks fire)."""
        saved, self.call_hooks = self.call_hooks, ()
        try:
            return self.expr(node)
        finally:
            self.call_hooks = saved

    def lookup(self, name):
        env = self.scope.env
        if name in env:
            return env[name]
        if name in self.module_env:
            return self.module_env[name]
        return (DEVICE, None) if is_device_name(name) else None

    def expr(self, n):
        t = type(n)
        if t is ast.Name:
            return self.lookup(n.id)
        if t is ast.Call:
            return self.call(n)
        if t is ast.Attribute:
            return self.attribute(n)
        if t is ast.Constant:
            p = string_place(n.value)
            return (DEVICE, p) if p else None
        if t is ast.Subscript:
            base = self.expr(n.value)
            self.need(n.slice)
            if base and base[0] in (TENSOR, "TT"):
                return (TENSOR, base[1])
            return base if base and base[0] in (CKPT, MODULE) else None
        if t is ast.BinOp:
            left, right = self.expr(n.left), self.expr(n.right)
            for k in (left, right):
                if k and k[0] == TENSOR:
                    return k
            return None
        if t is ast.UnaryOp:
            k = self.expr(n.operand)
            return k if k and k[0] == TENSOR else None
        if t is ast.Compare:
            self.uses.append(("need", None, None))
            kinds = [self.expr(n.left)] + [self.expr(c) for c in n.comparators]
            self.uses.pop()
            return next((k for k in kinds if k and k[0] == TENSOR), None)
        if t is ast.IfExp:
            self.need(n.test)
            a, b = self.expr(n.body), self.expr(n.orelse)
            if a and b and a[0] == b[0]:
                return a if a == b else (a[0], None)
            return (DEVICE, None) if DEVICE in (a and a[0], b and b[0]) else None
        if t in (ast.Lambda, ast.FunctionDef):
            return None
        for child in ast.iter_child_nodes(n):
            if isinstance(child, ast.expr):
                self.expr(child)
            elif isinstance(child, ast.comprehension):
                self.expr(child.iter)
                for c in child.ifs:
                    self.expr(c)
        return None

    def attribute(self, n):
        q = self.imports.qual(n)
        if q is not None:
            return (DEVICE, None) if q.endswith(".device") and "cuda" not in q else None
        base = self.expr(n.value)
        if n.attr == "device":
            return (DEVICE, place_of(base))
        if base and base[0] == TENSOR and n.attr in TENSOR_ATTRS:
            return base
        if isinstance(n.value, ast.Name) and n.value.id == "self" and self.scope.cls:
            members = self.scope.cls.members
            if n.attr in members:
                return members[n.attr]
        return (DEVICE, None) if is_device_name(n.attr) else None

    def call(self, n):
        f = n.func
        q = self.imports.qual(f)
        meth, recv = None, None
        if q is None:
            if isinstance(f, ast.Attribute):
                meth = f.attr
                recv = self.expr(f.value)
                if meth in MODULE_ONLY_METHODS and recv is None:
                    recv = self.mark_module(f.value)
                if meth == "register_buffer" and self.scope.cls and len(n.args) >= 2:
                    buf = const_str(n.args[0])
                    if buf:
                        self.scope.cls.registered.add(buf)
                        self.scope.cls.members[buf] = self.kind_of(n.args[1])
            else:
                recv = self.expr(f)
        name = q or meth or (f.id if isinstance(f, ast.Name) else None)
        transparent = isinstance(f, ast.Name) and f.id in TRANSPARENT
        if not transparent:
            self.uses.append(("call", name, n))
        for a in n.args:
            self.expr(a)
        for k in n.keywords:
            self.expr(k.value)
        if not transparent:
            self.uses.pop()
        kind = self.result(n, q, meth, recv)
        for h in self.call_hooks:
            h(self, n, q, meth, recv)
        return kind

    def mark_module(self, node):
        """`x.eval()` says x is a Module: remember it for later moves."""
        kind = (MODULE, None)
        if isinstance(node, ast.Name):
            self.scope.env[node.id] = kind
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "self" and self.scope.cls:
            self.scope.cls.members.setdefault(node.attr, kind)
        return kind

    def device_arg(self, n):
        """The place a device argument names: 'cpu', 'dev', or None."""
        for k in n.keywords:
            if k.arg == "device":
                return self.kind_of_device(k.value)
        return "cpu"

    def kind_of_device(self, node):
        s = const_str(node)
        if s is not None:
            return string_place(s)
        k = self.kind_of(node)
        return k[1] if k and k[0] in (DEVICE, TENSOR) else None

    def result(self, n, q, meth, recv):
        if q is not None:
            return self.qualified_result(n, q)
        if meth is None:
            if recv and recv[0] == MODULE:
                return (TENSOR, None)  # calling a module runs forward
            f = n.func
            if isinstance(f, ast.Name):
                if f.id in self.classes and self.classes[f.id].is_module:
                    return (MODULE, f.id)
                fn = self.functions.get(f.id)
                if fn is not None:
                    return getattr(fn, "devcopy_returns", None)
                if self.imports.package_ref(f.id):
                    return (MODULE, f.id)
            return None
        if recv is None:
            return None
        kind = recv[0]
        if kind == MODULE and isinstance(n.func.value, ast.Name) and n.func.value.id == "self" \
                and self.scope.cls:
            member = self.scope.cls.members.get(meth)
            if member and member[0] == MODULE:
                return (TENSOR, None)  # self.fc(x) runs the member's forward
        if kind == MODULE:
            return recv if meth in MODULE_SELF_METHODS else ((TENSOR, None) if meth == "forward" else None)
        if kind == CKPT:
            return recv if meth in ("get", "pop", "copy") else None
        if kind != TENSOR:
            return None
        place = recv[1]
        if meth == "to":
            target = self.move_target(n)
            return (TENSOR, target[1] if target[0] == "device" else place)
        if meth == "cuda":
            return (TENSOR, "dev")
        if meth == "cpu":
            return (TENSOR, "cpu")
        if meth == "numpy":
            return (NUMPY,)
        if meth in ("chunk", "split", "unbind", "sort", "max", "min", "topk", "split_with_sizes"):
            return ("TT", place)
        if meth in NON_TENSOR_METHODS:
            return None
        return (TENSOR, place)

    def qualified_result(self, n, q):
        parts = q.split(".")
        last = parts[-1]
        if parts[0] == "numpy":
            return (NUMPY,)
        if parts[0] != "torch":
            return None
        if q == "torch.device":
            if n.args:
                s = const_str(n.args[0])
                return (DEVICE, string_place(s) if s else None)
            return (DEVICE, None)
        if q == "torch.load":
            return (CKPT, self.map_location(n), n)
        if len(parts) == 2 and last in FACTORIES:
            return (TENSOR, self.device_arg(n))
        if len(parts) == 2 and last in LIKE_FACTORIES:
            k = self.kind_of(n.args[0]) if n.args else None
            return (TENSOR, place_of(k))
        if q.startswith("torch.nn.functional."):
            return (TENSOR, None)
        if last in ("Parameter", "Buffer"):
            return (TENSOR, None)
        if q.startswith("torch.nn.") and last[:1].isupper():
            return (MODULE, last)
        if len(parts) == 2 and last[:1].islower() and last not in TORCH_NON_TENSOR:
            if last in ("from_numpy", "as_tensor"):
                return (TENSOR, "cpu" if last == "from_numpy" else self.device_arg(n))
            for a in n.args:
                k = self.kind_of(a)
                if k and k[0] == TENSOR:
                    return (TENSOR, k[1])
            return (TENSOR, None)
        return None

    def map_location(self, n):
        for k in n.keywords:
            if k.arg == "map_location":
                if isinstance(k.value, ast.Constant) and k.value.value is None:
                    return "none"
                place = self.kind_of_device(k.value)
                if place is None and (self.kind_of(k.value) or ("",))[0] == DEVICE and self.facts.uses_device:
                    place = "dev"  # a device variable in a file that uses an accelerator
                return place or "?"
        return "none" if len(n.args) < 2 else "?"

    def move_target(self, n):
        """('device', place) for a device move, ('dtype', None) for a cast, (None, None)."""
        args = list(n.args)
        for k in n.keywords:
            if k.arg == "device":
                return ("device", self.kind_of_device(k.value))
            if k.arg == "dtype" and not args:
                return ("dtype", None)
        if not args:
            return (None, None)
        a = args[0]
        s = const_str(a)
        if s is not None:
            return ("device", string_place(s))
        q = self.imports.qual(a)
        if q and q.startswith("torch.") and q != "torch.device" and not q.endswith("device"):
            return ("dtype", q[6:])
        k = self.kind_of(a)
        if k and k[0] == DEVICE:
            return ("device", k[1])
        if k and k[0] == TENSOR:
            return ("tensor", k[1])
        return (None, None)

    # --- for rules ---------------------------------------------------------
    def report(self, rule, node, message, notes=(), fixes=()):
        self.findings.append((rule, node.lineno, node.col_offset, getattr(node, "end_lineno", node.lineno),
                              getattr(node, "end_col_offset", node.col_offset), message,
                              list(notes), list(fixes)))

    def segment(self, node):
        return ast.get_source_segment(self.source, node) or ast.unparse(node)

    def in_loop(self):
        return self.loops[-1] if self.loops else None

    def dtype_methods(self):
        return DTYPE_METHODS


class _Guard:
    """Marks a branch as taken on few iterations of the innermost loop."""

    def __init__(self, walk, counts):
        self.walk, self.counts = walk, counts

    def __enter__(self):
        loop = self.walk.in_loop()
        if loop is not None:
            loop.guards.append(self.counts)

    def __exit__(self, *exc):
        loop = self.walk.in_loop()
        if loop is not None:
            loop.guards.pop()
