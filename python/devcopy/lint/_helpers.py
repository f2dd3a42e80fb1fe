"""What a call of a helper of the file or the package hands back, read from
the helper's text (the helper may be walked later, or live in another file):
a module or a tensor, its first argument moved, or a checkpoint."""
from ._imports import (loaders_by_text, loaders_of_file, movers_by_text, movers_of_file, readers_by_text,
                       readers_of_file, returns_by_text, returns_of_file)
from ._kinds import CKPT, DEVICE, MODULE, TENSOR


def returned_kind(walk, name):
    """What a function of the file not walked yet, or of the package,
    returns, by its text: a Module class's instance or a torch op's tensor."""
    if name in walk.functions:
        if walk.returns is None:
            walk.returns = returns_by_text(walk.source, walk.path)
        kind = walk.returns.get(name)
    else:
        ref = walk.imports.names.get(name)
        kind = returns_of_file(ref[0]).get(ref[1]) if ref else None
    if kind == "H":
        return (TENSOR, "cpu")  # computed from its arguments' host copies
    return (MODULE, None) if kind == MODULE else (TENSOR, None) if kind == TENSOR else None


def mover_of(walk, name):
    """The move (`cuda` or `to`) through which a function of the file or
    the package hands back its first argument (`def maybe_cuda(what):
    if use_cuda: what = what.cuda()` ... `return what`), or None."""
    if name in walk.functions:
        if walk.movers is None:
            walk.movers = movers_by_text(walk.source)
        return walk.movers.get(name)
    ref = walk.imports.names.get(name)
    if ref:
        return movers_of_file(ref[0]).get(ref[1])
    for movers in map(movers_of_file, walk.imports.stars):  # `from utils import *`
        if name in movers:
            return movers[name]
    return None


def reads_argument(walk, name):
    """Whether a function of the file or the package hands back its first
    argument read on the host (`to_python_float(loss)` returning
    `loss.item()`)."""
    if name in walk.functions or walk.imports.names.get(name) is None:
        if walk.readers is None:
            walk.readers = readers_by_text(walk.source)
        return name in walk.readers
    ref = walk.imports.names[name]
    return ref[1] in readers_of_file(ref[0])


def loaded_by(walk, call, name):
    """`load_checkpoint(path, device)`, a function of the file or the
    package returning what torch.load gives it: a checkpoint placed where
    the caller's argument for its map_location says, found at this call."""
    if name in walk.functions:
        if walk.loaders is None:
            walk.loaders = loaders_by_text(walk.source)
        found, where = walk.loaders.get(name), walk.path
    else:
        ref = walk.imports.names.get(name)
        found, where = (loaders_of_file(ref[0]).get(ref[1]), ref[0]) if ref else (None, None)
    if found is None:
        return None
    index, params, line = found
    if index is None:
        return (CKPT, "none", call, (where, line))
    arg = call.args[index] if index < len(call.args) else \
        next((k.value for k in call.keywords if k.arg == params[index]), None)
    if arg is None:
        return None
    place = walk.kind_of_device(arg)
    if place is None and (walk.kind_of(arg) or ("",))[0] == DEVICE and walk.facts.uses_device:
        place = "dev"
    return (CKPT, place or "?", call, (where, line))
