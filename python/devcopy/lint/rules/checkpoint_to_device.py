"""devcopy-checkpoint-to-device: torch.load with no map_location (or to the
device) loaded into a model already on the device: the whole checkpoint is
staged there beside the parameters."""
from .._kinds import CKPT
from .repeated_module_move import add_event, receiver_key

RULE = "devcopy-checkpoint-to-device"
MESSAGE = ("'{load}' restores every tensor on the device it was saved from, beside the parameters "
           "of '{name}', which already live there ({how}); load with map_location='cpu': "
           "load_state_dict copies each tensor into its parameter")


def on_call(walk, call, q, meth, recv):
    if meth != "load_state_dict" or not call.args or walk.facts.cpu_fixed:
        return
    ck = walk.kind_of(call.args[0])
    if not ck or ck[0] != CKPT or ck[1] not in ("none", "dev") or len(ck) < 3:
        return
    key = receiver_key(call.func.value)
    scope, cls = walk.scope, walk.scope.cls
    refs = []
    if key == "self" and cls is not None:
        refs = [(walk.path, cls.node.name)]
    elif key and key.startswith("self.") and cls is not None and key.count(".") == 1:
        refs = cls.owned.get(key[5:], [])
    elif key and "." not in key:
        refs = scope.built.get(key) or []
    load = ck[2]
    seg = walk.segment(load).replace("{", "{{").replace("}", "}}")
    name = (key or "the model").replace("{", "{{").replace("}", "}}")
    moved = key in scope.moved
    if not refs and not moved:
        return
    add_event(walk, load, refs, "built",
              MESSAGE.format(load=seg, name=name, how="moved at line {line}{where} in the constructor of '{cls}'"),
              "'{cls}' moves it to the device here, in its constructor",
              moved_message=MESSAGE.format(load=seg, name=name, how="moved earlier in this function")
              .replace("{{", "{").replace("}}", "}") if moved else None, rule=RULE)
