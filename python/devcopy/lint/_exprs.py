"""The kinds of expressions (_kinds) as one file's pass evaluates them: each
sub-expression once, firing the rule hooks at every call, with the uses
stack saying what the value feeds (a condition, a call's argument)."""
import ast

from ._callers import record as record_call
from ._helpers import loaded_by, mover_of, returned_kind
from ._kinds import (CKPT, DEVICE, FACTORIES, LIKE_FACTORIES, MODULE, MODULE_ONLY_METHODS,
                     MODULE_SELF_METHODS, NON_TENSOR_METHODS, NUMPY, TENSOR, TENSOR_ATTRS, TENSOR_ONLY_METHODS,
                     const_str, is_device_name, passes_value, place_of, returns_tensor,
                     string_place)
from ._loops import Guard

# Methods that take a state dict and hand back something else.
_STATE_SETTERS = frozenset(("load_state_dict", "set_state_dict", "load"))
_NORM_CLIPS = frozenset(("clip_grad_norm_", "clip_grad_norm"))
# What a tensor says of itself without its data being read.
_META_ATTRS = frozenset(("shape", "dtype", "device", "ndim", "is_cuda"))
_META_METHODS = frozenset(("size", "dim", "ndimension", "numel", "nelement"))


def _int_const(node):
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


class Expressions:
    """Expression evaluation for Walk (which holds scope, imports, classes)."""

    def need(self, node):
        """Evaluates an expression whose value the host needs (a condition)."""
        self.uses.append(("need", None, None))
        self.expr(node)
        self.uses.pop()

    def kind_of(self, node):
        """The kind of an expression already walked (no hooks fire)."""
        saved = self.call_hooks, self.comprehension_hooks, self.format_hooks
        self.call_hooks = self.comprehension_hooks = self.format_hooks = ()
        try:
            return self.expr(node)
        finally:
            self.call_hooks, self.comprehension_hooks, self.format_hooks = saved

    def lookup(self, name):
        env = self.scope.env
        kind = env[name] if name in env else self.module_env.get(name)
        if kind is None and is_device_name(name):
            return (DEVICE, None)  # also `device = None`, set later (a global chosen in main())
        return kind

    def expr(self, n):
        t = type(n)
        if t is ast.Name:
            fresh = self.scope.fresh
            if fresh:
                held = fresh.get(n.id)
                if held is not None and n is not held.passed:
                    if held.first is None:
                        held.first = n  # the first read of a factory's result
                    elif held.first is not n:
                        held.reread = True  # read again: the host tensor is kept
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
            if base and base[0] in (CKPT, MODULE):
                return base
            key = const_str(n.slice)  # config["device"]: a setting named for a device
            return (DEVICE, None) if base is None and key is not None and is_device_name(key) else None
        if t is ast.BinOp:
            left, right = self.expr(n.left), self.expr(n.right)
            if type(n.op) is ast.Mod and type(n.left) is ast.Constant and isinstance(n.left.value, str):
                for h in self.format_hooks:  # "%.3f" % loss formats the tensor on the host
                    for v in n.right.elts if type(n.right) is ast.Tuple else (n.right,):
                        h(self, v, v)
                return None
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
        if t is ast.BoolOp:
            self.expr(n.values[0])
            with Guard(self, False):  # the right side of and/or runs on some iterations only
                for v in n.values[1:]:
                    self.expr(v)
            return None
        if t is ast.JoinedStr and n.values and string_place(const_str(n.values[0])) == "dev":
            for v in n.values:
                self.expr(v)
            return (DEVICE, "dev")  # f"cuda:{gpu}"
        if t is ast.FormattedValue:
            self.expr(n.value)
            if n.format_spec is not None:
                self.expr(n.format_spec)
            for h in self.format_hooks:  # f"{loss:.3f}"
                h(self, n, n.value)
            return None
        for child in ast.iter_child_nodes(n):
            if isinstance(child, ast.expr):
                self.expr(child)
            elif isinstance(child, ast.comprehension):
                self.expr(child.iter)
                for c in child.ifs:
                    self.expr(c)
                for h in self.comprehension_hooks:
                    h(self, n, child)
        if t is ast.DictComp:
            return self._filtered_checkpoint(n)
        return self._moved_elements(n) if t is ast.ListComp else None

    def _filtered_checkpoint(self, n):
        """`{k: v for k, v in sd.items() if 'fc' not in k}` of a checkpoint:
        the same tensors, where torch.load put them."""
        it = n.generators[0].iter
        if len(n.generators) == 1 and type(it) is ast.Call and type(it.func) is ast.Attribute and \
                it.func.attr == "items" and not it.args:
            k = self.kind_of(it.func.value)
            return k if k and k[0] == CKPT else None
        return None

    def attribute(self, n):
        q = self.imports.qual(n)
        if q is not None:
            return (DEVICE, None) if q.endswith(".device") and "cuda" not in q else None
        base = self.meta(n.value) if n.attr in _META_ATTRS else self.expr(n.value)
        if n.attr == "device":
            return (DEVICE, place_of(base))
        if base and base[0] == TENSOR and n.attr in TENSOR_ATTRS:
            return base
        if base is None and n.attr == "data" and isinstance(n.value, ast.Name) and n.value.id != "self":
            return (TENSOR, None)  # `e1 = e1.data`: a Variable's tensor (an array's .data is a raw buffer)
        if isinstance(n.value, ast.Name) and n.value.id == "self" and self.scope.cls:
            members = self.scope.cls.members
            if members.get(n.attr) is not None:
                return members[n.attr]
        # Named for a device, and nothing the file says contradicts it (also
        # `self._device = validate_and_set_device(...)`, a call it cannot see into).
        return (DEVICE, None) if is_device_name(n.attr) else None

    def _moved_elements(self, n):
        """`[t.cuda() for t in batch]`, `[x.to(device) for x in data]`: a list
        of tensors moved to the device (what it unpacks into is on it); None
        for any other comprehension."""
        e, gens = n.elt, n.generators
        if len(gens) != 1 or gens[0].ifs or not isinstance(gens[0].target, ast.Name) or \
                not isinstance(e, ast.Call) or not isinstance(e.func, ast.Attribute) or \
                not isinstance(e.func.value, ast.Name) or e.func.value.id != gens[0].target.id:
            return None
        if e.func.attr == "cuda":
            return ("TT", "dev")
        if e.func.attr == "to":
            kind, place = self.move_target(e)
            if kind == "device" and place != "cpu":
                return ("TT", place)
        return None

    def meta(self, node):
        """The kind of the receiver of a read of its shape, dtype or device
        (`x.shape`, `x.size(0)`, `len(x)`): a name read so is not counted as
        a read of a factory's data that a local holds (create-then-move)."""
        if type(node) is ast.Name:
            return self.lookup(node.id)
        return self.expr(node)

    def own_methods(self):
        """Names of the methods the file's classes define: a class of its own
        may have a `clone()` (DeepRL's `Grads`), so that call says nothing."""
        names = getattr(self, "_own_methods", None)
        if names is None:
            names = self._own_methods = {f.name for c in ast.walk(self.tree) if isinstance(c, ast.ClassDef)
                                         for f in c.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
        return names

    def call(self, n):
        f = n.func
        q = self.imports.qual(f)
        meth, recv = None, None
        if q is None:
            if isinstance(f, ast.Attribute):
                meth = f.attr
                recv = self.meta(f.value) if meth in _META_METHODS and not n.keywords else self.expr(f.value)
                if meth in MODULE_ONLY_METHODS and recv is None:
                    recv = self.mark_module(f.value)
                elif meth in TENSOR_ONLY_METHODS and recv is None and not n.args and \
                        meth not in self.own_methods():
                    recv = self.mark(f.value, (TENSOR, None))
                if meth in ("register_buffer", "register_parameter", "add_module", "register_module") \
                        and self.scope.cls:
                    self.scope.cls.stateful = True
                if meth == "register_buffer" and self.scope.cls and len(n.args) >= 2:
                    buf = const_str(n.args[0])
                    if buf:
                        self.scope.cls.registered.add(buf)
                        self.scope.cls.members[buf] = self.kind_of(n.args[1])
            else:
                recv = self.expr(f)
        name = q or meth or (f.id if isinstance(f, ast.Name) else None)
        transparent = passes_value(f, q)
        if not transparent:
            self.uses.append(("call", name, n))
        if q is None and type(f) is ast.Name and f.id == "len" and len(n.args) == 1:
            kinds = [self.meta(n.args[0])]
        else:
            kinds = [self.expr(a) for a in n.args]
        for k in n.keywords:
            self.expr(k.value)
        if not transparent:
            self.uses.pop()
        if q is None and type(f) is ast.Name:
            record_call(self, n, kinds)
        if meth == "update" and len(kinds) == 1 and kinds[0] and kinds[0][0] == CKPT and type(f.value) is ast.Name:
            self.scope.env[f.value.id] = kinds[0]  # model_dict.update(pretrained): now holds its tensors
        kind = self.result(n, q, meth, recv)
        if kind is None and meth not in _STATE_SETTERS:
            # util.transfer(model, torch.load(p)): a state dict renamed or filtered is one still
            kind = next((k for k in kinds if k and k[0] == CKPT), None)
        for h in self.call_hooks:
            h(self, n, q, meth, recv)
        return kind

    def mark_module(self, node):
        """`x.eval()` says x is a Module: remember it for later moves."""
        return self.mark(node, (MODULE, None))

    def mark(self, node, kind):
        """A method only one kind has says what its receiver holds."""
        if isinstance(node, ast.Name):
            self.scope.env[node.id] = kind
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "self" and self.scope.cls:
            if self.scope.cls.members.get(node.attr) is None:
                self.scope.cls.members[node.attr] = kind
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
                loaded = loaded_by(self, n, f.id)
                if loaded is not None:
                    return loaded
                fn = self.functions.get(f.id)
                if fn is not None and hasattr(fn, "devcopy_returns"):
                    return fn.devcopy_returns
                if self.imports.package_ref(f.id):
                    return (MODULE, f.id)
                moved = mover_of(self, f.id) if n.args else None
                if moved is not None:  # its first argument, moved: a module stays one
                    arg = self.kind_of(n.args[0])
                    if arg and arg[0] == MODULE or arg is None and isinstance(n.args[0], ast.Call):
                        return arg  # `cuda(net(z_dim), use_cuda)` may build a module
                    return (TENSOR, "dev" if moved == "cuda" else None)
                return returned_kind(self, f.id)
            return None
        if recv is None and isinstance(n.func.value, ast.Name) and n.func.value.id == "self" and self.scope.cls:
            member = self.scope.cls.members.get(meth)
            if member and member[0] == MODULE:
                return (TENSOR, None)  # self.net(x) in a trainer: the member module's forward
            method = next((f for f in self.scope.cls.node.body if isinstance(f, ast.FunctionDef) and
                           f.name == meth), None)
            returned = getattr(method, "devcopy_returns", None)  # walked before this method
            if returned and returned[0] == MODULE:
                return returned  # criterion = self._select_criterion()
        if recv is None:
            if meth == "cpu" and not n.args and isinstance(n.func.value, (ast.Call, ast.Subscript)):
                return (TENSOR, "cpu")  # padder.unpad(flow[0]).cpu(): a tensor's copy on the host
            # x.view(-1, 2): a shape is a tensor's view (NumPy's takes a dtype).
            return (TENSOR, None) if meth == "view" and any(_int_const(a) for a in n.args) else None
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
        if kind == DEVICE and meth == "format" and isinstance(n.func.value, ast.Constant):
            return recv  # "cuda:{}".format(gpu)
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
        if q.startswith("torch.nn.functional.") or last in _NORM_CLIPS:
            return (TENSOR, None)  # clip_grad_norm_ returns the total norm, a tensor where the grads are
        if last in ("Parameter", "Buffer"):
            return (TENSOR, None)
        if q.startswith("torch.nn.") and last[:1].isupper():
            return (MODULE, last)
        if len(parts) == 2 and returns_tensor(last):
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
        for k in n.keywords:  # `.to(dtype=x.dtype, device=x.device)` moves, whatever the order
            if k.arg == "device":
                return ("device", self.kind_of_device(k.value))
        if not args and any(k.arg == "dtype" for k in n.keywords):
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
