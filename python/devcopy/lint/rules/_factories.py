"""Whether a torch factory's tensor is a new one made on the host for
devcopy-create-then-move: not given a device, not made on it by a CUDA
default tensor type, and not real host data being uploaded."""
import ast

from .._kinds import FACTORIES, LIKE_FACTORIES, place_of
from ._advice import LEGACY


def is_factory(q):
    parts = q.split(".")
    return len(parts) == 2 and parts[0] == "torch" and \
        (parts[1] in FACTORIES or parts[1] in LIKE_FACTORIES or parts[1] in LEGACY)


def made_elsewhere(walk, factory, q, chain=None):
    """Given a device, made on it by a CUDA default tensor type (every factory
    but the typed legacy constructors, `torch.FloatTensor`, which stay on the
    host), or uploading real host data: nothing to move. A legacy
    constructor whose values are overwritten before the move
    (`torch.LongTensor(b).fill_(0)`) was given a size, whatever it reads as."""
    if any(k.arg == "device" for k in factory.keywords):
        return True
    short = q.split(".")[1]
    if walk.facts.device_default and (short not in LEGACY or short == "Tensor"):
        return True
    sized = chain is not None and short in LEGACY and _overwritten(chain, factory)
    return _uploads_data(walk, factory, q) and not sized


# In-place fills that overwrite every element.
_OVERWRITES = frozenset(("fill_", "zero_", "uniform_", "normal_"))


def _overwritten(node, factory):
    """Whether a fill of _OVERWRITES lies on the chain from `node` down to the factory."""
    while node is not factory and type(node) is ast.Call:
        f = node.func
        if type(f) is ast.Attribute:
            if f.attr in _OVERWRITES:
                return True
            node = f.value
        else:
            node = node.args[0] if node.args else None
    return False


def _shape_arg(node):
    """An argument that reads as a size: an int, len(...), n * 2, range(n)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in ("len", "sum", "int", "max", "min", "range")
    if isinstance(node, ast.BinOp):  # n * 2, not [[start]] * k
        return not any(isinstance(n, (ast.List, ast.Tuple, ast.ListComp)) for n in ast.walk(node))
    return False


def _legacy_uploads(factory):
    """torch.Tensor(3, 4) and torch.FloatTensor([0.]) make a tensor from
    nothing; torch.Tensor(obs) uploads data."""
    args = factory.args
    if len(args) >= 2 or (len(args) == 1 and _shape_arg(args[0])):
        return False
    if not args and any(k.arg == "size" for k in factory.keywords):
        return False  # torch.ByteTensor(size=(n,)): uninitialised, like torch.empty
    if len(args) == 1 and isinstance(args[0], (ast.List, ast.Tuple)):
        elts = args[0].elts
        return len(elts) > 1 or not all(isinstance(e, ast.Constant) for e in elts)
    return True


def _uploads_data(walk, factory, q):
    """torch.tensor(values) of real host data: uploading it is the point."""
    if q.split(".")[1] in LEGACY:
        return _legacy_uploads(factory)
    if q.endswith("_like"):
        k = walk.kind_of(factory.args[0]) if factory.args else None
        return place_of(k) != "cpu"  # made where its argument is
    if q not in ("torch.tensor",):
        return False
    if not factory.args:
        return True
    data = factory.args[0]
    if isinstance(data, (ast.List, ast.Tuple)):
        return len(data.elts) >= 2 or any(not isinstance(e, ast.Constant) for e in data.elts)
    return not isinstance(data, ast.Constant)
