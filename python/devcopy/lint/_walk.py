"""The one pass over a file's AST: statements in order, the kind of every
expression (_kinds), the loops and guards around it, and the rule hooks fired
at each call and expression statement."""
import ast

from . import _imports
from ._callers import MOVED_MODULE, walk_again
from ._exprs import Expressions
from ._kinds import (DEVICE, MODULE, MODULE_SELF_METHODS, TENSOR, dotted, is_device_name, join_places,
                     source_lines)
from ._loops import Guard as _Guard, Loop, guard_counts, host_parts, leaves_loop, step_loops
from ._moves import (PLACED, builds_moved, is_stateless, moved_unknown, moved_value, placed_before, placed_by_builder,
                     target_text)
from ._scopes import ClassFacts, Scope, init_helpers

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


class Walk(Expressions):
    """Walks one parsed file; rules read its facts through the hooks they get."""

    def __init__(self, path, source, tree, rules, facts):
        self.path, self.source, self.tree = path, source, tree
        self.facts = facts  # _facts.FileFacts: the file's device use and import table
        self.imports = _imports.Imports(path)
        self.rules = rules
        self.call_hooks = [r.on_call for r in rules if hasattr(r, "on_call")]
        self.stmt_hooks = [r.on_expr_stmt for r in rules if hasattr(r, "on_expr_stmt")]
        self.comprehension_hooks = [r.on_comprehension for r in rules if hasattr(r, "on_comprehension")]
        self.format_hooks = [r.on_format for r in rules if hasattr(r, "on_format")]
        self.findings, self.events = [], []
        self.pending = {}  # findings a rule decides at the file's end (create-then-move through locals)
        self.classes, self.functions = {}, {}
        self.loops, self.uses, self.path_ifs = [], [], ()
        self.scope = self.module_scope = Scope(None, None)
        self.module_env = self.scope.env
        self.stmt = None
        self.lines = source_lines(source)
        self.train_names = set()
        self.step_loops = {}  # function -> the loop of the file that calls it once per iteration
        self.step_frame = None  # that loop, while walking a function that is one training step
        self.builders = None  # functions of the file that return a moved module (_moves)
        self.returns = None  # function -> kind it returns, by the file's text (_imports)
        self.loaders = None  # function -> the torch.load it returns, by the file's text (_imports)
        self.movers = None  # function -> the move it hands its first argument back through (_imports)
        self.readers = None  # functions that hand back their first argument's item() (_imports)
        self.calls_of = {}  # function of the file -> the kinds each call passes (_callers)
        self.given = None  # (function, {parameter: kind}) its callers give, while walking it again

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
        if self.train_names:
            self.step_loops = step_loops(self.tree, self.functions, self.train_names)
        self.block([s for s in body if not isinstance(s, (ast.ClassDef,) + _FUNCS)])
        for s in body:
            if isinstance(s, ast.ClassDef):
                self.class_def(s)
        for s in body:
            if isinstance(s, _FUNCS):
                self.function(s, None)
        walk_again(self, body)  # what the calls after a function say of its parameters
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
        facts.bases = [ref for b in node.bases for ref in self.base_ref(b)]
        plain = all((self.imports.qual(b) or dotted(b)) in ("torch.nn.Module", "nn.Module", "Module")
                    for b in node.bases)
        facts.stateful = facts.stateful or not plain  # a subclass of a layer holds its weights
        methods = [s for s in node.body if isinstance(s, _FUNCS)]
        facts.init_helpers = init_helpers(methods)
        methods.sort(key=lambda m: (m.name != "__init__", m.name not in facts.init_helpers))
        for m in methods:
            self.function(m, facts)
        for s in node.body:
            if isinstance(s, ast.ClassDef):  # class Hash(torch.autograd.Function) inside a model
                self.class_def(s)

    def function(self, node, cls):
        outer = self.scope
        self.scope = Scope(node, cls, outer if cls is None and outer.func else None)
        if cls is None and not outer.func:
            self.scope.env = dict(self.module_env)
        saved = self.loops, self.path_ifs, self.step_frame
        self.loops, self.path_ifs = [], ()
        self.parameters(node, cls)
        caller = self.step_loops.get(node.name) if cls is None and outer.func is None else None
        self.step_frame = Loop(caller, self) if caller is not None else None
        self.block(node.body)
        if cls is None and outer.func is None:
            self.functions[node.name] = node
        node.devcopy_returns = self.scope.returns
        node.devcopy_moved = self.scope.moved_returned  # model = Net().to(device); return model
        self.scope = outer
        self.loops, self.path_ifs, self.step_frame = saved

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
            if kind is None and self.given is not None and self.given[0] is node:
                kind = self.given[1].get(p.arg)
                if kind == MOVED_MODULE:  # every call passes a module already on the device
                    kind = (MODULE, None)
                    self.scope.moved.add(p.arg)
                    self.scope.moves.append((p.arg, PLACED, (), None))
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
                if kind and kind[0] == MODULE and self.scope.moved_returned is None:
                    self.scope.moved_returned = moved_value(self, s.value) or placed_before(self, s.value)
        elif t in _FUNCS:
            self.function(s, None)
            self.scope.env[s.name] = None
            if self.scope.func is not None:
                self.scope.defs[s.name] = s
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
        env = self.scope.env
        before = dict(env)
        for branch, body in (("then", s.body), ("else", s.orelse)):
            if not body:
                continue
            self.path_ifs = saved + ((s, branch),)
            with _Guard(self, guard_counts(self, s.test, branch, body)):
                self.block(body)
        self.path_ifs = saved
        join_places(env, before)

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
            kind = self.element_kind(s.iter)
            self.bind(s.target, kind, None)
            if kind is None or kind == ("E", None):  # a loader, enumerated or not
                for name in host_parts(frame):
                    self.scope.env[name] = (TENSOR, "cpu")
            self.loops.append(frame)
        self.block(s.body)
        self.loops.pop()
        self.block(s.orelse)

    def element_kind(self, it):
        """What iterating `it` yields, for `for layer in self.layers`."""
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" and it.args:
            return ("E", self.element_kind(it.args[0]))
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "zip" and it.args:
            return ("Z", tuple(self.element_kind(a) for a in it.args))
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and not it.args and \
                it.func.attr in ("parameters", "named_parameters") and self.imports.qual(it.func) is None:
            return ("E", (TENSOR, None)) if it.func.attr == "named_parameters" else (TENSOR, None)
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
            for frame in self.loops:
                if frame.host_reads:  # a read of the old value says nothing of the new one
                    frame.host_reads = {k: v for k, v in frame.host_reads.items() if target.id not in v[2]}
            fresh = self.scope.fresh.get(target.id)
            if fresh is not None and fresh.stmt is not self.stmt:
                del self.scope.fresh[target.id]  # rebound to something else
            # Before the name is rebound: DataParallel(net).
            placed = moved_value(self, value) or placed_by_builder(self, value)
            self.scope.built[target.id] = self.built_from(value)
            self.scope.moved.discard(target.id)
            self.scope.moved_at.pop(target.id, None)
            self.scope.maybe_moved[target.id] = moved_unknown(self, value) if placed is None else None
            # A new module here (target None), or one already placed (PLACED).
            self.scope.moves.append((target.id, None if placed is None else PLACED, self.path_ifs, None))
            if placed is not None:  # model = Net().to(device), DataParallel(model)
                self.scope.moved.add(target.id)
                self.scope.moved_at[target.id] = placed
                if kind is None and placed is value and isinstance(value.func, ast.Name) and \
                        builds_moved(self, value.func.id, 0):
                    self.scope.env[target.id] = (MODULE, None)  # net = net_factory(...): its moved module
            # `placed` may be the builder's call (`load_model(...)`), not a move.
            if placed is not None and placed is value and kind and kind[0] == MODULE \
                    and isinstance(value.func, ast.Attribute) and value.func.attr in ("to", "cuda"):
                self.scope.moves.append((target.id, target_text(self, value), self.path_ifs, value))
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
                placed = moved_value(self, value) or self.premoved_in(value)
                fn = self.scope.func
                if fn is not None and fn.name in ("to", "cuda", "_apply"):
                    placed = None  # an override moving members: it runs when the module is moved
                if placed is not None:  # self.emb = build(...).to(device), accelerator.prepare(...)
                    cls.premoved[target.attr] = placed
                if not (isinstance(value, (ast.Name, ast.Constant, ast.Attribute)) or is_stateless(self, value)):
                    cls.stateful = True
                self.scope.moved.discard("self." + target.attr)
        elif t in (ast.Tuple, ast.List):
            elts = target.elts
            sub = [None] * len(elts)
            if kind and kind[0] in ("TT", TENSOR):  # a tensor unpacks into tensors; so does forward's tuple
                sub = [(TENSOR, kind[1])] * len(elts)
            elif kind and kind[0] == "E" and len(elts) == 2:
                sub = [None, kind[1]]
            elif kind and kind[0] == "Z" and len(elts) == len(kind[1]):
                sub = list(kind[1])
            elif isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(elts):
                sub = [self.kind_of(v) for v in value.elts]
            placer = value if moved_value(self, value) is value else None  # a, b = accelerator.prepare(a, b)
            for e, k in zip(elts, sub):
                self.bind(e, k, placer)
        elif t is ast.Starred:
            self.bind(target.value, None, None)
        else:
            self.expr(target)

    def premoved_in(self, value):
        """nn.Sequential(*layers) of a local list of modules moved one by one."""
        if not isinstance(value, ast.Call) or not (self.imports.qual(value.func) or "").startswith("torch.nn."):
            return None
        for a in value.args:
            inner = a.value if isinstance(a, ast.Starred) else a
            if isinstance(inner, ast.Name) and inner.id in self.scope.premoved:
                return self.scope.premoved[inner.id]
        return None

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

    def base_ref(self, base):
        """A base class defined in this file or the package, as a ref."""
        return self.ref_of(base, modules_only=False)

    def class_ref(self, call):
        """The Module class a call constructs, as a ref (file, name)."""
        return self.ref_of(call.func, modules_only=True)

    def ref_of(self, node, modules_only):
        if isinstance(node, ast.Name):
            if node.id in self.classes:
                ok = self.classes[node.id].is_module or not modules_only
                return [(self.path, node.id)] if ok else []
            ref = self.imports.package_ref(node.id)
            return [ref] if ref else []
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            ref = self.imports.package_ref(node.value.id, node.attr)
            return [ref] if ref else []
        return []

    # --- for rules ---------------------------------------------------------
    def report(self, rule, node, message, notes=(), fixes=()):
        self.findings.append((rule, node.lineno, node.col_offset, getattr(node, "end_lineno", node.lineno),
                              getattr(node, "end_col_offset", node.col_offset), message,
                              list(notes), list(fixes)))

    def segment(self, node):
        """The source text of a node (ast.get_source_segment splits the whole
        file on every call: far too slow for a hook)."""
        first, last = node.lineno - 1, node.end_lineno - 1
        if last >= len(self.lines):
            return ast.unparse(node)
        if first == last:
            return self.lines[first].encode("utf-8")[node.col_offset:node.end_col_offset].decode("utf-8", "replace")
        head = self.lines[first].encode("utf-8")[node.col_offset:].decode("utf-8", "replace")
        tail = self.lines[last].encode("utf-8")[:node.end_col_offset].decode("utf-8", "replace")
        return "\n".join([head] + self.lines[first + 1:last] + [tail])

    def in_loop(self):
        return self.loops[-1] if self.loops else None
