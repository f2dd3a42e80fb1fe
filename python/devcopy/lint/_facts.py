"""What a file says about devices, and the facts files leave for each other:
which Module classes move in __init__, what each class holds, and the moves
and checkpoint loads that depend on them. Joined once per run, so a class in
one file and its owner in another meet (the C++ command's MoveFacts)."""
import functools
import os
import re

_ACCEL = re.compile(r"cuda|\bmps\b|xpu|\bnpu\b|hpu|accelerator|\bxla\b")
# An assignment of the CPU device on a line of its own (a parameter's default
# `device='cpu'` chooses nothing for the program).
_CPU_CHOSEN = re.compile(
    r"""^\s*(?:self\.|args\.)?\w*device\w*\s*=\s*(?:torch\.device\(\s*)?['"]cpu['"]\s*\)?\s*(?:#.*)?$""", re.M)


# `if device is None:` before it: a default for callers that name none.
_DEFAULTING = re.compile(r"^\s*if\s+(?:self\.)?\w*device\w*\s+is\s+None\s*:\s*$")
# Top-level statements of a script (anything but imports, guarded imports,
# definitions, decorators, docstrings and constants; `if __name__` is one).
_SCRIPT_LINE = re.compile(r"^(?!(?:import|from|def|async|class|@|try:|except|else:|finally:|[A-Za-z_]\w*\s*=|"
                          r"['\"#)\]}]))\S", re.M)


def _chooses_cpu(source):
    for m in _CPU_CHOSEN.finditer(source):
        before = source[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        if not _DEFAULTING.match(before):
            return True
    return False


_MAIN_GUARD = re.compile(r"^if\s+__name__\s*==\s*['\"]__main__['\"]\s*:", re.M)


def _guarded_module(source, path):
    """A file whose only top-level code is its `if __name__ == '__main__':`
    block, a module of a package or imported by a script beside it (as
    _library): imported, it runs nothing, and that script chooses the device."""
    guard = _MAIN_GUARD.search(source)
    return guard is not None and _SCRIPT_LINE.search(source[:guard.start()]) is None and \
        _SCRIPT_LINE.search(source, guard.end()) is None and _library(path)


def _library(path):
    """A module of a package, or one a script beside it imports, or of a
    folder that a script one folder up imports from as a namespace package
    (`from models.dkt import DKT` in train.py: models/kqn.py too), that runs
    nothing at import: its tensors come from the scripts that call it, which
    choose the device."""
    if not path:
        return False
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isfile(os.path.join(folder, "__init__.py")):
        return True
    module = os.path.splitext(os.path.basename(path))[0]
    return _imported_in(folder, module) or \
        _imported_in(os.path.dirname(folder), re.escape(os.path.basename(folder)) + r"\.\w+", pattern=True)


def _imported_in(folder, module, pattern=False):
    """Whether a .py file of `folder` imports the (dotted) module name, or
    one that the regular expression `module` matches."""
    name = module if pattern else re.escape(module)
    imports = re.compile(r"^\s*(?:from\s+%s\s+import|import\s+%s\b)" % (name, name), re.M)
    return any(imports.search(text) for text in _sources(folder))


@functools.lru_cache(maxsize=64)
def _sources(folder):
    """The text of the .py files of a folder (read once per run and folder)."""
    out = []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return ()
    for n in names:
        if n.endswith(".py"):
            try:
                with open(os.path.join(folder, n), encoding="utf-8", errors="replace") as f:
                    out.append(f.read())
            except OSError:
                pass
    return tuple(out)


# `torch.set_default_tensor_type(torch.cuda.HalfTensor)` (or its string, or
# `set_default_device('cuda')`): from then on bare factories are made on the
# device.
_DEVICE_DEFAULT = re.compile(r"""\bset_default_(?:tensor_type\(\s*['"]?torch\.cuda\.\w+|device\(\s*['"]cuda)""")


def _device_default(source, path):
    """Whether the file, or a file of its package folder (the entry point that
    builds its models: `Llama.build` in generation.py for model.py), makes a
    CUDA tensor type the default."""
    if _DEVICE_DEFAULT.search(source):
        return True
    return bool(path) and _package_sets_device_default(os.path.dirname(os.path.abspath(path)))


@functools.lru_cache(maxsize=64)
def _package_sets_device_default(folder):
    """Whether a file of the package folder makes a CUDA tensor type the
    default (searched once per folder and run)."""
    return os.path.isfile(os.path.join(folder, "__init__.py")) and \
        any(_DEVICE_DEFAULT.search(text) for text in _sources(folder))


# `CUDA = False` at module level: a switch for the accelerator, turned off.
_FLAG_OFF = re.compile(r"^((?:USE_|use_)?(?:CUDA|cuda|GPU|gpu)S?)\s*=\s*False\s*(?:#.*)?$", re.M)


def _switched_off(source):
    """A program whose accelerator switch is a module-level `CUDA = False`,
    never assigned again, and every accelerator use of which is on a line
    that names the switch or in a block under `if CUDA:`: it runs on the CPU."""
    for m in _FLAG_OFF.finditer(source):
        name = m.group(1)
        if len(re.findall(r"^\s*(?:global\s+%s\b|%s\s*=)" % (name, name), source, re.M)) != 1:
            continue
        rest, under = [], None
        for line in source.split("\n"):
            indent = len(line) - len(line.lstrip())
            if under is not None and (not line.strip() or indent > under):
                continue  # inside `if CUDA:`
            under = None
            if re.match(r"\s*if\s+%s\s*:" % name, line):
                under = indent
            elif not re.search(r"\b%s\b" % name, line):
                rest.append(line)
        if not _ACCEL.search("\n".join(rest)):
            return True
    return False


class FileFacts:
    """Whether the file works with a device at all, or is fixed to the CPU,
    and whether its bare factories are made on the device."""

    def __init__(self, source, path=None):
        accel = self.names_accelerator = _ACCEL.search(source) is not None
        self.cpu_fixed = not accel and _chooses_cpu(source) or accel and _switched_off(source)
        self.device_default = accel and _device_default(source, path)
        self.uses_device = not self.cpu_fixed and (
            accel or "device" in source or _SCRIPT_LINE.search(source) is None and _library(path)
            or _guarded_module(source, path))


def class_facts(walk):
    """{name: {"file", "init_move", "members"}} for the file's Module classes."""
    out = {}
    for name, c in walk.classes.items():
        if not c.is_module:
            continue
        move = None
        if c.init_moves and c.stateful:  # a module with no weights copies nothing
            node, text = c.init_moves[0]
            move = [node.lineno, node.col_offset, text]
        elif c.premoved:  # self.emb = build(...).to(device) in __init__
            node = next(iter(c.premoved.values()))
            move = [node.lineno, node.col_offset, ""]
        members = [list(ref) for refs in c.owned.values() for ref in refs]
        out[name] = {"file": walk.path, "init_move": move, "members": members,
                     "bases": [list(b) for b in c.bases]}
    return out


class Join:
    """The run-wide table of Module classes and the events waiting on it."""

    def __init__(self):
        self.classes = {}  # (file, name) -> facts
        self.events = []

    def add(self, classes, events):
        for name, c in classes.items():
            self.classes[(os.path.abspath(c["file"]), name)] = c
        self.events.extend(events)

    def first_move(self, ref, seen=None):
        """(file, line, col, class) of the move in a constructor that `ref`'s
        construction runs (its own, or a member's), or None."""
        key = (os.path.abspath(ref[0]), ref[1])
        seen = seen if seen is not None else set()
        if key in seen:
            return None
        seen.add(key)
        c = self.classes.get(key)
        if c is None:
            return None
        if c["init_move"]:
            line, col, _ = c["init_move"]
            return (c["file"], line, col, ref[1])
        for m in c.get("bases", []) + c["members"]:  # super().__init__ runs the base's
            found = self.first_move(m, seen)
            if found:
                return found
        return None

    def member_move(self, ref):
        """A move in the constructor of something `ref` holds."""
        c = self.classes.get((os.path.abspath(ref[0]), ref[1]))
        for m in (c.get("bases", []) + c["members"] if c else ()):
            found = self.first_move(m)
            if found:
                return found
        return None

    def findings(self):
        """Resolved events as (file, finding) pairs; an event names its
        message with {line}, {cls}, {where} to fill in."""
        out = []
        for e in self.events:
            found = None
            for ref in e["refs"]:
                found = self.member_move(ref) if e["mode"] == "owner" else self.first_move(ref)
                if found:
                    break
            if found is None and not e.get("moved_before"):
                continue
            notes = []
            if found:
                mfile, line, col, cls = found
                same = os.path.abspath(mfile) == os.path.abspath(e["file"])
                where = "" if same else f" ({os.path.basename(mfile)})"
                message = e["message"].format(line=line, cls=cls, where=where)
                notes.append((mfile, line, col, e["note"].format(cls=cls)))
            else:
                message = e["moved_message"]
            out.append((e["file"], (e["rule"], e["line"], e["col"], e["end_line"], e["end_col"],
                                    message, notes, [])))
        return out
