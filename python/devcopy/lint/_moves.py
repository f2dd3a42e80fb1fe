"""Modules already on the device: what a move, a placed load or a wrapper of
a moved module yields, for repeated-module-move and checkpoint-to-device."""
import ast
import functools
import re

from ._imports import source_text
from ._kinds import MODULE, TENSOR

# torch.nn layers with no parameters or buffers: moving them copies nothing.
STATELESS = frozenset(
    "ReLU ReLU6 Tanh Sigmoid GELU SiLU Mish ELU SELU CELU LeakyReLU PReLU_ Hardtanh Hardswish "
    "Hardsigmoid Softplus Softsign Softmax LogSoftmax Softmin Dropout Dropout1d Dropout2d Dropout3d "
    "AlphaDropout Identity Flatten Unflatten MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d "
    "AvgPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d "
    "AdaptiveMaxPool2d AdaptiveMaxPool3d Upsample PixelShuffle ZeroPad2d ConstantPad1d "
    "ConstantPad2d ReflectionPad2d ReplicationPad2d".split())
_DEF = re.compile(r"^def\s+(\w+)\s*\(.*?\)\s*(?:->[^:]*)?:[^\n]*\n", re.M | re.S)
# Wrappers that hold the module they are given (its parameters stay where they are).
WRAPPERS = frozenset(("DataParallel", "DistributedDataParallel", "compile", "get_peft_model",
                      "prepare_model_for_int8_training", "prepare_model_for_kbit_training", "unwrap_model"))
# Calls that place the modules they are given on the run's device and hand
# them back (HuggingFace Accelerate's prepare).
PLACERS = frozenset(("prepare", "prepare_model"))


# The target recorded in a scope's moves for a name bound to a module that is
# already on the device (`model = DataParallel(model)` of a moved model): not
# a move of its own, so never the same target as the next move.
PLACED = "(placed)"


def _name(func):
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def target_text(walk, call):
    """Where a move sends its module, quoted for a message: 'device', 'cuda'."""
    arg = call.args[0] if call.args else (call.keywords[0].value if call.keywords else None)
    if _name(call.func) == "cuda" or arg is None:
        return "'cuda'"
    text = walk.segment(arg)
    return text if text[:1] in "'\"" else f"'{text}'"


def is_stateless(walk, node):
    """nn.ReLU(), nn.Dropout(p): a construction of a layer with nothing to move."""
    if not isinstance(node, ast.Call):
        return False
    q = walk.imports.qual(node.func) or ""
    return q.startswith("torch.nn.") and q.rsplit(".", 1)[1] in STATELESS


def moved_value(walk, value):
    """The node that put `value`'s module on the device, or None: a move
    (`Net().to(d)`, `net.cuda()`), `from_pretrained(..., device_map=...)`, or a
    wrapper (`DataParallel(net)`) of a module moved before."""
    if not isinstance(value, ast.Call):
        return None
    f = value.func
    name = _name(f)
    if name in ("to", "cuda") and isinstance(f, ast.Attribute):
        if is_stateless(walk, f.value):
            return None
        recv = walk.kind_of(f.value)
        if recv and recv[0] == TENSOR:
            return None
        if isinstance(f.value, ast.Call) and not module_kind(recv):
            return None  # torch.FloatTensor([...]).to(d): not a module
        if name == "to":
            kind, place = walk.move_target(value)
            if kind not in ("device", "tensor") or place == "cpu":
                return None
        return value
    if name == "from_pretrained":
        for k in value.keywords:
            if k.arg == "device_map" and not (isinstance(k.value, ast.Constant) and k.value.value is None):
                return value
        return None
    if name in WRAPPERS and value.args:
        return placed_before(walk, value.args[0])
    if name in PLACERS and isinstance(f, ast.Attribute) and value.args:
        return value
    inner = getattr(walk.scope.defs.get(f.id) or walk.functions.get(f.id), "devcopy_moved", None) \
        if isinstance(f, ast.Name) else None
    if inner is not None:
        return inner  # a function of the file (or defined in this one) walked already: where it moved what it returns
    if isinstance(f, ast.Name) and builds_moved(walk, f.id, 0):
        return value  # a builder that returns its module moved: create_embedding_matrix(...)
    return None


def moved_unknown(walk, value):
    """`MODEL.get_model(n).cuda()`: the result of a call the file cannot
    see into, moved to the device; a module when a state dict is loaded
    into it later (checkpoint-to-device), not known to be one for others."""
    if type(value) is not ast.Call or type(value.func) is not ast.Attribute or \
            value.func.attr not in ("to", "cuda") or type(value.func.value) is not ast.Call:
        return None
    inner = value.func.value
    if (walk.imports.qual(inner.func) or "").startswith("torch.") or walk.kind_of(inner) is not None:
        return None  # a factory, a tensor op, or something the file knows
    if value.func.attr == "to":
        kind, place = walk.move_target(value)
        if kind != "device" or place == "cpu":
            return None
    return value


def placed_before(walk, node):
    """The node that put the module `node` names on the device earlier: in
    this function, or (a member) in its class's constructor."""
    if isinstance(node, ast.Name):
        return walk.scope.moved_at.get(node.id)
    cls = walk.scope.cls
    if cls is None or not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                           and node.value.id == "self"):
        return None
    if node.attr in cls.premoved:
        return cls.premoved[node.attr]
    for call, _ in cls.init_moves:
        r = call.func.value
        if isinstance(r, ast.Attribute) and r.attr == node.attr and isinstance(r.value, ast.Name) \
                and r.value.id == "self":
            return call
    return None


def moved_in_base(walk, node):
    """`self.model` moved in the constructor of a base class of another
    file of the package (`self.model = self._build_model().to(self.device)`)."""
    cls = walk.scope.cls
    if cls is None or not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                           and node.value.id == "self"):
        return False
    refs = list(cls.bases)  # any base, a Module or not (an experiment class holding the model)
    for b in cls.node.bases:
        ref = walk.imports.names.get(b.id) if isinstance(b, ast.Name) else None
        if ref and ref[0]:
            refs.append(ref)
    return any(node.attr in init_moved_members(path, name) for path, name in refs)


def moved_by_owner(walk, node):
    """`engine.model` of `engine = trainer(...)`, a class of the package
    whose `__init__` moves its member (`self.model.to(device)`): the name of
    that class, or None."""
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)) or node.value.id == "self":
        return None
    name = _built_by(walk, node.value.id, node.lineno)
    if name is None:
        return None
    ref = (walk.path, name) if name in walk.classes else walk.imports.names.get(name)
    return name if ref and ref[0] and node.attr in init_moved_members(ref[0], name) else None


def _built_by(walk, var, line):
    """The class `var = Cls(...)` last built before `line` in this function
    (searched only when a checkpoint is loaded into one of its members)."""
    found = None
    for n in ast.walk(walk.scope.func or walk.tree):
        if isinstance(n, ast.Assign) and n.lineno < line and len(n.targets) == 1 and \
                isinstance(n.targets[0], ast.Name) and n.targets[0].id == var:
            v = n.value
            ok = isinstance(v, ast.Call) and isinstance(v.func, ast.Name)
            if found is None or n.lineno > found[0]:
                found = (n.lineno, v.func.id if ok else None)
    return found[1] if found else None


_CLASS_AT = r"^class\s+%s\b[^\n]*:\s*\n"
# `self.model = build().to(device)`, or `self.model.to(device)` as a statement.
_MEMBER_MOVED = re.compile(r"^\s+self\.(\w+)(?:\s*=\s*[^\n]*)?\.(?:to|cuda)\((?!\s*['\"]cpu)", re.M)


@functools.lru_cache(maxsize=4096)
def init_moved_members(path, name):
    """Members the `__init__` of class `name` of file `path` assigns a moved value, by its text."""
    text = source_text(path)
    m = re.search(_CLASS_AT % re.escape(name), text or "", re.M)
    if m is None:
        return frozenset()
    body = text[m.end():]
    end = re.search(r"^\S", body, re.M)
    body = body[:end.start() if end else None]
    init = re.search(r"^(\s+)def\s+__init__\s*\([^\n]*\n", body, re.M)
    if init is None:
        return frozenset()
    rest = body[init.end():]
    nxt = re.search(r"^%s\S" % init.group(1), rest, re.M)  # the next method
    return frozenset(_MEMBER_MOVED.findall(rest[:nxt.start() if nxt else None]))


def builds_moved(walk, name, kind=0):
    """A function of the file, or imported from the package, whose return
    value is a module it moved: `return layers.to(device)` (kind 0), or also
    `net = net.cuda()` ... `return net` (kind 1, which may be a tensor too:
    only a checkpoint load says it is a module)."""
    if name in walk.functions:  # by the text: the function may be walked later
        if walk.builders is None:
            walk.builders = _builders(walk.source)
        return name in walk.builders[kind]
    ref = walk.imports.names.get(name)
    return bool(ref) and name in moving_builders(ref[0])[kind]


def placed_by_builder(walk, value):
    """`net = get_network(args)` with a builder that moves what it returns."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and builds_moved(walk, value.func.id, 1):
        return value
    return None


@functools.lru_cache(maxsize=4096)
def moving_builders(path):
    """Top-level functions of a file that return `<something>.to(...)` (by its text)."""
    text = source_text(path)
    return _builders(text) if text is not None else (frozenset(), frozenset())


_MOVED_NAME = re.compile(r"^\s+(\w+)(?:\s*=\s*\1)?\.(?:to|cuda)\(", re.M)
# `model = FastSpeech2(cfg).to(device)`: a class built and moved in one line.
_BUILT_MOVED = re.compile(r"^\s+(\w+)\s*=\s*[A-Z]\w*\([^\n]*\)\.(?:to|cuda)\(", re.M)


def _builders(text):
    """(functions returning `x.to(...)`, functions moving `x` and returning it)."""
    direct, placing = set(), set()
    for m in _DEF.finditer(text):
        body = text[m.end():]
        nxt = re.search(r"^\S", body, re.M)
        body = body[:nxt.start() if nxt else None]
        if re.search(r"^\s+return\s+[\w.]+\.(?:to\(|cuda\()", body, re.M):
            direct.add(m.group(1))
            placing.add(m.group(1))
        for name in set(_MOVED_NAME.findall(body)):
            if re.search(r"^\s+return\s+%s\s*$" % re.escape(name), body, re.M):
                placing.add(m.group(1))
        for name in set(_BUILT_MOVED.findall(body)):
            if re.search(r"^\s+return\s+%s\s*$" % re.escape(name), body, re.M):
                direct.add(m.group(1))
                placing.add(m.group(1))
    return frozenset(direct), frozenset(placing)


def module_kind(kind):
    return bool(kind) and kind[0] == MODULE
