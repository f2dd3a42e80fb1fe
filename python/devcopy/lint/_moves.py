"""Modules already on the device: what a move, a placed load or a wrapper of
a moved module yields, for repeated-module-move and checkpoint-to-device."""
import ast

from ._kinds import MODULE, TENSOR

# torch.nn layers with no parameters or buffers: moving them copies nothing.
STATELESS = frozenset(
    "ReLU ReLU6 Tanh Sigmoid GELU SiLU Mish ELU SELU CELU LeakyReLU PReLU_ Hardtanh Hardswish "
    "Hardsigmoid Softplus Softsign Softmax LogSoftmax Softmin Dropout Dropout1d Dropout2d Dropout3d "
    "AlphaDropout Identity Flatten Unflatten MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d "
    "AvgPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d "
    "AdaptiveMaxPool2d AdaptiveMaxPool3d Upsample PixelShuffle ZeroPad2d ConstantPad1d "
    "ConstantPad2d ReflectionPad2d ReplicationPad2d".split())
# Wrappers that hold the module they are given (its parameters stay where they are).
WRAPPERS = frozenset(("DataParallel", "DistributedDataParallel", "compile", "get_peft_model",
                      "prepare_model_for_int8_training", "prepare_model_for_kbit_training"))


def _name(func):
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


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
    if name in WRAPPERS and value.args and isinstance(value.args[0], ast.Name):
        return walk.scope.moved_at.get(value.args[0].id)
    return None


def module_kind(kind):
    return bool(kind) and kind[0] == MODULE
