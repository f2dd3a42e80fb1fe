"""devcopy-checkpoint-to-device: torch.load with no map_location (or to the
device) loaded into a model already on the device: the whole checkpoint is
staged there beside the parameters."""
import ast
import os

from .._kinds import CKPT
from .._moves import moved_by_owner, moved_in_base, placed_before
from .repeated_module_move import add_event, opposite, receiver_key

RULE = "devcopy-checkpoint-to-device"
MESSAGE = ("{load} restores every tensor on the device it was saved from, beside the parameters "
           "of '{name}', which already live there ({how}); load with map_location='cpu': "
           "load_state_dict copies each tensor into its parameter")


# Functions that load a state dict into the module they are given first.
_SETTERS = frozenset(("set_peft_model_state_dict", "set_model_state_dict", "load_state_dict"))


def on_call(walk, call, q, meth, recv):
    if walk.facts.cpu_fixed:
        return
    if meth == "load_state_dict" and call.args:
        model, state = call.func.value, call.args[0]
    elif isinstance(call.func, ast.Name) and call.func.id in _SETTERS and len(call.args) >= 2:
        model, state = call.args[0], call.args[1]  # set_peft_model_state_dict(model, weights)
    else:
        return
    ck = walk.kind_of(state)
    if not ck or ck[0] != CKPT or len(ck) < 3:
        return
    for kind in [ck] + [walk.kind_of(c) for c in _other_branch(walk, ck[2])]:
        if kind and kind[0] == CKPT and kind[1] in ("none", "dev") and len(kind) >= 3:
            _judge(walk, model, kind)


def _other_branch(walk, load):
    """`if gpu is None: ck = torch.load(p)` / `else: ck = torch.load(p,
    map_location=loc)`: the load of the other branch reaches the use too."""
    for n in ast.walk(walk.scope.func or walk.tree):
        if isinstance(n, ast.If) and n.orelse:
            sides = [_last_load(n.body), _last_load(n.orelse)]
            if load in sides:
                return [c for c in sides if c is not None and c is not load]
    return []


def _last_load(body):
    """The call whose result the last statement of a branch binds."""
    s = body[-1] if body else None
    return s.value if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call) else None


def _last_move(walk, scope, key):
    """The move of `key` in `scope` that puts it on the device before this
    line (True when its node is not known), or None. A move in the other
    branch of an `if` around the line does not count (`if resume: model =
    model.to(d)` / `else: model.load_state_dict(torch.load(p,
    map_location=d)); model.to(d)`), nor one undone by a rebinding since."""
    if key not in scope.moved:
        return None
    for pkey, target, path, node in reversed(scope.moves):
        if pkey == key and not opposite(path, walk.path_ifs):
            if target is None:
                return None  # a new module bound here since
            return node if node is not None else scope.moved_at.get(key, True)
    if any(m[0] == key for m in scope.moves):
        return None
    return scope.moved_at.get(key, True)


def _global(walk, key):
    """Whether `key` names a module-level variable in this function (never
    bound in it): `def test(): model.load_state_dict(torch.load(p))`."""
    fn = walk.scope.func
    if fn is None:
        return False
    local = getattr(fn, "devcopy_locals", None)
    if local is None:
        a = fn.args
        local = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if p is not None}
        local |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        fn.devcopy_locals = local
    return key not in local


def _owner_moved(walk, model):
    """`model.feature` of a local `model` moved earlier in the function, no
    member of it assigned since (`model.fc = nn.Linear(...)` after the move
    is a new layer on the host): the move, or None."""
    if not (isinstance(model, ast.Attribute) and isinstance(model.value, ast.Name)) or model.value.id == "self":
        return None
    at = _last_move(walk, walk.scope, model.value.id)
    if not isinstance(at, ast.AST):
        return None
    base = model.value.id
    for n in ast.walk(walk.scope.func or walk.tree):
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and at.lineno < n.lineno < model.lineno:
            for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == base:
                    return None
    return at


def _judge(walk, model, ck):
    key = receiver_key(model)
    scope, cls = walk.scope, walk.scope.cls
    refs = []
    if key == "self" and cls is not None:
        refs = [(walk.path, cls.node.name)]
    elif key and key.startswith("self.") and cls is not None and key.count(".") == 1:
        refs = cls.owned.get(key[5:], [])
    elif key and "." not in key:
        refs = scope.built.get(key) or []
    load = ck[2]
    seg = f"'{walk.segment(load)}'"
    if len(ck) > 3:  # through a helper: say where its torch.load is
        where, line = ck[3]
        other = "" if os.path.abspath(where) == os.path.abspath(walk.path) else f" of {os.path.basename(where)}"
        seg += f" (through torch.load at line {line}{other})"
    seg = seg.replace("{", "{{").replace("}", "}}")
    name = (key or "the model").replace("{", "{{").replace("}", "}}")
    how = "moved earlier in this function"
    if isinstance(model, ast.Name):  # a variable: its moves and rebindings, by path
        at = _last_move(walk, walk.module_scope if _global(walk, key) else scope, key)
        moved = at is not None or scope.maybe_moved.get(key) is not None
        if isinstance(at, ast.AST):
            how = f"moved at line {at.lineno}"
    else:
        moved = key in scope.moved or placed_before(walk, model) is not None
        at = None if moved else _owner_moved(walk, model)
        if at is not None:
            moved, how = True, f"part of '{model.value.id}', moved at line {at.lineno}"
    if not moved and moved_in_base(walk, model):
        moved, how = True, "moved in the constructor of its base class"
    owner = None if moved else moved_by_owner(walk, model)
    if owner:
        moved, how = True, f"moved in the constructor of '{owner}'"
    if not refs and not moved:
        return
    add_event(walk, load, refs, "built",
              MESSAGE.format(load=seg, name=name, how="moved at line {line}{where} in the constructor of '{cls}'"),
              "'{cls}' moves it to the device here, in its constructor",
              moved_message=MESSAGE.format(load=seg, name=name, how=how)
              .replace("{{", "{").replace("}}", "}") if moved else None, rule=RULE)
