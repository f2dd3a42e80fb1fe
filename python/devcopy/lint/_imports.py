"""What the names of a file stand for: torch and its submodules under any
alias, and the Module classes imported from other files of the same package."""
import ast
import functools
import os
import re

from ._kinds import dotted

_CLASS = re.compile(r"^class\s+(\w+)\s*\(([^)]*)\)\s*:", re.M)


@functools.lru_cache(maxsize=256)
def source_text(path):
    """The text of another file of the package, or None when it cannot be
    read: each reader below asks for it, the file is read once."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


@functools.lru_cache(maxsize=4096)
def module_classes(path):
    """Names of the nn.Module subclasses a Python file defines (by its text)."""
    text = source_text(path)
    if text is None:
        return frozenset()
    found = {}
    for name, bases in _CLASS.findall(text):
        found[name] = bases
    modules = {n for n, b in found.items() if "Module" in b or "nn." in b or "Sequential" in b}
    changed = True
    while changed:  # a subclass of a Module subclass of the same file
        changed = False
        for n, b in found.items():
            if n not in modules and any(re.search(r"\b%s\b" % re.escape(m), b) for m in modules):
                modules.add(n)
                changed = True
    return frozenset(modules)


_FROM = re.compile(r"^from\s+(\.+)([\w.]*)\s+import\s+(?:\(([^)]*)\)|([^\n#]*))", re.M)


@functools.lru_cache(maxsize=4096)
def defining_file(path, name, depth=0):
    """The file that defines Module class `name`, following a package's
    re-exports (`from .core import *` in layers/__init__.py)."""
    if name in module_classes(path):
        return path
    if depth > 3:
        return None
    text = source_text(path)
    if text is None:
        return None
    for dots, mod, group, line in _FROM.findall(text):
        listed = [n.strip().split(" as ")[0].strip() for n in (group or line).split(",")]
        if "*" not in listed and name not in listed:
            continue
        base = os.path.dirname(path)
        for _ in range(len(dots) - 1):
            base = os.path.dirname(base)
        where = _module_file(base, mod.split(".")) if mod else None
        found = defining_file(where, name, depth + 1) if where and where != path else None
        if found:
            return found
    return None


_DEF = re.compile(r"^def\s+(\w+)\s*\(", re.M)
_TOP = re.compile(r"^[^\s#)]", re.M)
_RETURN = re.compile(r"^\s+return\s+(?:(torch\.[a-z]\w*)|(?:nn\.|torch\.nn\.)?([A-Z]\w*))\(", re.M)


def returns_by_text(text, path):
    """{function: 'M' or 'T'} for top-level functions whose returns all build
    a Module (`return Net(...)`, `return nn.Sequential(...)`) or a tensor
    (`return torch.cat(...)`)."""
    modules = module_classes(path) if path else frozenset()
    out = {}
    starts = list(_DEF.finditer(text))
    for i, m in enumerate(starts):
        body = text[m.end():starts[i + 1].start() if i + 1 < len(starts) else None]
        end = _TOP.search(body, body.find("\n") + 1)  # up to the next top-level statement
        body = body[:end.start()] if end else body
        kinds = set()
        for op, cls in _RETURN.findall(body):
            if op:
                kinds.add("T" if op.split(".")[1] not in ("load", "device", "no_grad") else "?")
            else:
                kinds.add("M" if cls in modules or cls in _NN_HINT else "?")
        if len(kinds) == 1 and "?" not in kinds:
            out[m.group(1)] = kinds.pop()
        elif not kinds and _computes_on_host(text[m.start():m.end() + len(body)], body):
            out[m.group(1)] = "H"
    return out


_PARAMS = re.compile(r"^def\s+\w+\s*\(([^)]*)\)", re.M)
_HOST_COPY = re.compile(r"^\s+\w+\s*=\s*(\w+)\.(?:to\(\s*['\"]cpu['\"]\s*\)|cpu\(\))\s*(?:#.*)?$", re.M)
_TO_DEVICE = re.compile(r"\.cuda\(|\.to\((?!\s*['\"]cpu)|device\s*=")


def _computes_on_host(head, body):
    """A function that copies its tensor arguments to the host first
    (`target_cpu = target.to('cpu')`) and never to a device: what it
    computes, and returns, lives on the host."""
    m = _PARAMS.match(head)
    params = {p.split("=")[0].split(":")[0].strip() for p in m.group(1).split(",")} if m else set()
    copied = {c for c in _HOST_COPY.findall(body) if c in params}
    return bool(copied) and _TO_DEVICE.search(body) is None


# torch.nn names a `return nn.X(...)` builds.
_NN_HINT = frozenset(("Sequential", "ModuleList", "ModuleDict", "Linear", "Conv2d", "Conv1d", "LSTM", "GRU",
                      "Embedding", "TransformerEncoder"))


@functools.lru_cache(maxsize=4096)
def returns_of_file(path):
    text = source_text(path)
    return returns_by_text(text, path) if text is not None else {}


_LOADER_DEF = re.compile(r"^def\s+(\w+)\s*\(([^)]*)\)\s*(?:->[^:]*)?:[^\n]*\n", re.M)
_LOAD = re.compile(r"^\s+(?:(\w+)\s*=\s*|return\s+)torch\.load\(([^\n]*)\)\s*(?:#.*)?$", re.M)


def loaders_by_text(text):
    """{function: (param index or None, load line offset)} for functions
    that return what `torch.load` gives them (`ck = torch.load(p,
    map_location=device); return ck`, or `return torch.load(p)`): with no
    map_location (None), or with map_location one of their parameters (its
    index, for the caller's argument to say where the tensors go)."""
    out = {}
    if "torch.load(" not in text:
        return out
    defs = list(_LOADER_DEF.finditer(text))
    for i, m in enumerate(defs):
        end = defs[i + 1].start() if i + 1 < len(defs) else len(text)
        body = text[m.end():end]
        params = [p.split("=")[0].split(":")[0].strip().lstrip("*") for p in m.group(2).split(",")]
        for load in _LOAD.finditer(body):
            var, args = load.group(1), load.group(2)
            if var and not re.search(r"^\s+return\s+%s\s*$" % re.escape(var), body, re.M):
                continue
            ml = re.search(r"map_location\s*=\s*(\w+)\s*(?:[,)]|$)", args)
            if ml and ml.group(1) in params:
                index = params.index(ml.group(1))
            elif "map_location" not in args and "," not in args:
                index = None
            else:
                continue
            line = text.count("\n", 0, m.end() + load.start() + load.group(0).index("torch.load")) + 1
            out[m.group(1)] = (index, params, line)
            break
    return out


@functools.lru_cache(maxsize=4096)
def loaders_of_file(path):
    text = source_text(path)
    return loaders_by_text(text) if text is not None else {}


# A function's head: its name, its first parameter, then blank and comment
# lines and at most one docstring before the body.
_HEAD = (r"^def\s+(\w+)\s*\(\s*(\w+)[^)]*\)\s*(?:->[^:]*)?:[^\n]*\n(?:[ \t]*(?:#[^\n]*)?\n)*"
         r"(?:[ \t]+[rRuU]?(?:\"\"\"[^\"]*(?:\"(?!\"\")[^\"]*)*\"\"\"|\'\'\'[^\']*(?:\'(?!\'\')[^\']*)*\'\'\')"
         r"[ \t]*\n(?:[ \t]*(?:#[^\n]*)?\n)*)?")
_MOVER = re.compile(_HEAD + r"[ \t]+return\s+(\w+)\.(cuda|to)\(", re.M)
_TOP_DEF = re.compile(r"^def\s", re.M)


# `def to_var(x): if torch.cuda.is_available(): x = x.cuda()` then `return
# x` or `return Variable(x, ...)`: the argument moved when there is a device.
_MOVER_IF = re.compile(_HEAD + r"[ \t]+if\b[^\n]*:[ \t]*\n"
                       r"[ \t]+(\w+)\s*=\s*(\w+)\.(cuda|to)\([^\n]*\n"
                       r"(?:[ \t]*(?:#[^\n]*)?\n)*[ \t]+return\s+(?:Variable\()?(\w+)\b", re.M)


def movers_by_text(text):
    """{function: method} for functions that only hand back their first
    argument moved (`def cuda(t, flag): return t.cuda() if flag else t`)."""
    out = {}
    for start in _TOP_DEF.finditer(text):  # the patterns tried only where a function starts
        m = _MOVER.match(text, start.start())
        if m and m.group(2) == m.group(3):
            out[m.group(1)] = m.group(4)
            continue
        m = _MOVER_IF.match(text, start.start())
        if m and m.group(2) == m.group(3) == m.group(4) == m.group(6):
            out.setdefault(m.group(1), m.group(5))
    return out


@functools.lru_cache(maxsize=4096)
def movers_of_file(path):
    text = source_text(path)
    return movers_by_text(text) if text is not None else {}


# `def to_python_float(t): if hasattr(t, 'item'): return t.item()`: hands
# back its first argument read on the host.
_READER = re.compile(_HEAD + r"[ \t]+(?:if\b[^\n]*:[ \t]*\n[ \t]+)?return\s+(\w+)\.item\(\)", re.M)


def readers_by_text(text):
    """Names of the functions that hand back their first argument's `.item()`."""
    out = set()
    if "return" not in text or ".item()" not in text:
        return out
    for start in _TOP_DEF.finditer(text):
        m = _READER.match(text, start.start())
        if m and m.group(2) == m.group(3):
            out.add(m.group(1))
    return out


@functools.lru_cache(maxsize=4096)
def readers_of_file(path):
    text = source_text(path)
    return readers_by_text(text) if text is not None else set()


_TORCH_IMPORT = re.compile(
    r"^(?:import\s+((?:torch|numpy)[\w.]*)(?:\s+as\s+(\w+))?|"
    r"from\s+((?:torch|numpy)[\w.]*)\s+import\s+(\w+)(?:\s+as\s+(\w+))?)\s*(?:#.*)?$", re.M)


@functools.lru_cache(maxsize=4096)
def star_aliases(path):
    """The torch and numpy names a file's top-level imports bind, which
    `from <it> import *` hands on (`torch` through `from utils import *`)."""
    text = source_text(path)
    if text is None:
        return ()
    out = []
    for mod, alias, frm, name, falias in _TORCH_IMPORT.findall(text):
        if mod:
            out.append((alias or mod.split(".")[0], mod if alias else mod.split(".")[0]))
        else:
            out.append((falias or name, frm + "." + name))
    return tuple(out)


def _module_file(base_dir, parts):
    path = os.path.join(base_dir, *parts)
    for candidate in (path + ".py", os.path.join(path, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None


class Imports:
    """The import table of one file."""

    def __init__(self, path):
        self.path = path
        self.dir = os.path.dirname(os.path.abspath(path)) if path else ""
        self.aliases = {}   # local name -> 'torch', 'torch.nn', 'torch.zeros', 'numpy'
        self.names = {}     # local name -> (file, name) imported from the package
        self.modules = {}   # local name -> file of a package module
        self.stars = []     # files of the package imported with `from x import *`

    def add(self, s):
        if isinstance(s, ast.Import):
            for a in s.names:
                top = a.name.split(".")[0]
                if top in ("torch", "numpy"):
                    self.aliases[a.asname or top] = a.name if a.asname else top
                elif a.asname is None and self.dir:
                    f = self._absolute(a.name.split("."))
                    if f:
                        self.modules[top] = f
            return
        mod = s.module or ""
        top = mod.split(".")[0]
        if s.level == 0 and top in ("torch", "numpy"):
            for a in s.names:
                self.aliases[a.asname or a.name] = mod + "." + a.name
            return
        if not self.dir:
            return
        if s.level:
            base = self.dir
            for _ in range(s.level - 1):
                base = os.path.dirname(base)
            parts = mod.split(".") if mod else []
            pkg_dir = os.path.join(base, *parts)
            where = _module_file(base, parts) if parts else os.path.join(base, "__init__.py")
        else:
            where = self._absolute(mod.split("."))
            pkg_dir = os.path.dirname(where) if where and where.endswith("__init__.py") else None
        if s.names[0].name == "*":
            if where:
                self.stars.append(where)
                for local, full in star_aliases(where):
                    self.aliases.setdefault(local, full)
            return
        for a in s.names:
            local = a.asname or a.name
            sub = _module_file(pkg_dir, [a.name]) if pkg_dir else None
            if sub:
                self.modules[local] = sub
            elif where:
                self.names[local] = (where, a.name)

    def _absolute(self, parts):
        """`pkg.models` found under a parent folder of this file."""
        d = self.dir
        me = os.path.abspath(self.path)
        for _ in range(6):
            f = _module_file(d, parts)
            if f and os.path.abspath(f) != me:  # `from model import X` in utils/model.py: not itself
                return f
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
        return None

    def qual(self, node):
        """torch.nn.Linear under any alias as 'torch.nn.Linear'; None otherwise."""
        name = dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        full = self.aliases.get(head)
        if full is None:
            return None
        return full + "." + rest if rest else full

    def package_ref(self, name, attr=None):
        """(file, class) for a Module class imported from the package."""
        if attr is not None:
            f = self.modules.get(name)
            where = defining_file(f, attr) if f else None
            return (where, attr) if where else None
        ref = self.names.get(name)
        where = defining_file(ref[0], ref[1]) if ref else None
        if where is None and ref is None:
            where = next((w for w in map(lambda f: defining_file(f, name), self.stars) if w), None)
        return (where, name) if where else None

    def is_module_class(self, node, classes):
        for b in node.bases:
            q = self.qual(b) or dotted(b) or ""
            if q.startswith("torch.nn.") or q in ("nn.Module", "Module"):
                return True
            if isinstance(b, ast.Name) and b.id in classes and classes[b.id].is_module:
                return True
            if isinstance(b, ast.Name) and self.package_ref(b.id):
                return True
            if isinstance(b, ast.Attribute) and isinstance(b.value, ast.Name) and \
                    self.package_ref(b.value.id, b.attr):
                return True
        return False
