"""What a Python expression holds, as far as the file says: a Module, a Tensor,
a device, a checkpoint from torch.load, a NumPy array, or unknown (None).

Kinds are small tuples so that a whole file's worth stays cheap:
``("M", class_name)``, ``("T", place)``, ``("D", place)``, ``("C", place)``,
``("N",)``; a place is ``"cpu"``, ``"dev"`` (an accelerator) or None (unknown).
"""
import ast
import re

MODULE, TENSOR, DEVICE, CKPT, NUMPY = "M", "T", "D", "C", "N"

# torch factories that make a tensor on the host unless given a device.
FACTORIES = frozenset(
    "zeros ones empty full rand randn randint randperm arange linspace logspace eye "
    "tensor empty_strided normal bernoulli range "
    "hann_window hamming_window blackman_window bartlett_window kaiser_window".split())
LIKE_FACTORIES = frozenset(f + "_like" for f in "zeros ones empty full rand randn randint".split())
# torch.* functions that do not return a tensor (or return one that is not new).
TORCH_NON_TENSOR = frozenset(
    "load save device dtype manual_seed seed no_grad enable_grad inference_mode "
    "set_grad_enabled is_tensor is_grad_enabled set_default_dtype get_default_dtype "
    "set_default_device set_num_threads get_num_threads set_printoptions "
    "use_deterministic_algorithms compile jit cuda backends distributed utils autograd "
    "nn optim onnx hub fx export Size Generator cat_ numel is_floating_point "
    "set_float32_matmul_precision is_complex typename set_rng_state get_rng_state "
    "initial_seed library ops amp profiler testing".split())
# Tensor methods whose result is not a new tensor.
NON_TENSOR_METHODS = frozenset(
    "item tolist numpy size dim numel ndimension nelement element_size data_ptr "
    "backward register_hook retain_grad record_stream is_contiguous is_floating_point "
    "get_device storage untyped_storage stride equal allclose is_pinned is_set_to "
    "is_complex is_nonzero storage_offset __len__ type_as_ register_post_accumulate_grad_hook "
    "share_memory_ to_sparse_csr_ apply_ map_ tolist_ dim_order".split())
TENSOR_ATTRS = frozenset("T mT H data grad real imag".split())
# Module methods that return the module itself.
MODULE_SELF_METHODS = frozenset(
    "to cuda cpu eval train half float double bfloat16 requires_grad_ share_memory "
    "type xpu mps zero_grad_ apply to_empty".split())
# Methods only a Module has: a receiver they are called on is a Module.
MODULE_ONLY_METHODS = frozenset(
    "eval train parameters named_parameters buffers named_buffers modules named_modules "
    "children named_children state_dict load_state_dict register_buffer register_module "
    "register_parameter add_module requires_grad_ apply".split())
# Methods only a Tensor has, called as a tensor calls them (no positional
# argument): `loss.backward()` says `loss` is one, `accelerator.backward(loss)`
# says nothing about `accelerator`.
TENSOR_ONLY_METHODS = frozenset(("backward", "retain_grad", "detach_", "detach", "clone", "contiguous"))
# Tensor methods that certainly return a new tensor made from the receiver:
# the only ones a dropped result is reported for (a method of anything else,
# `accelerator.log(...)`, may be called for its effect).
NEW_TENSOR_METHODS = frozenset(
    "abs add addcdiv addcmul addmm bernoulli ceil clamp clamp_max clamp_min clip copysign cos cumsum "
    "detach div exp expm1 fill fill_diagonal floor fmod frac index_add index_copy index_fill "
    "index_put lerp log log1p log2 logical_not masked_fill masked_scatter mul nan_to_num neg pow "
    "reciprocal relu remainder renorm round rsqrt scatter scatter_add sigmoid sign sin sqrt square "
    "squeeze sub t tanh transpose tril triu true_divide trunc unsqueeze uniform normal zero "
    "clone contiguous view reshape expand expand_as permute flatten repeat sum mean std var norm prod "
    "matmul mm bmm softmax log_softmax argmax argmin gather index_select masked_select flip roll "
    "narrow select unfold new_zeros new_ones new_empty new_full new_tensor type_as view_as "
    "reshape_as eq ne lt le gt ge logical_and logical_or".split())
# Methods that copy a tensor to another device or dtype.
DTYPE_METHODS = frozenset("half float double bfloat16 long int short bool byte char".split())
MOVE_METHODS = frozenset(("to", "cpu", "cuda")) | DTYPE_METHODS | {"type_as", "type"}
ACCEL_PREFIXES = ("cuda", "mps", "xpu", "npu", "hpu", "xla", "meta", "privateuseone")
NARROW_DTYPES = {
    "float16": 2, "half": 2, "bfloat16": 2, "uint8": 1, "int8": 1, "int16": 2,
    "short": 2, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1}


# torch.* functions by prefix that configure or query and return no tensor.
NON_TENSOR_PREFIXES = ("set_", "get_", "is_", "use_", "manual_", "enable_", "disable_", "_",
                       "are_", "has_", "register_", "can_")


def returns_tensor(name):
    """Whether torch.<name>(...) makes a tensor (torch.add, torch.relu)."""
    return name[:1].islower() and name not in TORCH_NON_TENSOR and not name.startswith(NON_TENSOR_PREFIXES)


def string_place(value):
    """'cpu' -> 'cpu', 'cuda:0' -> 'dev', anything else -> None."""
    if not isinstance(value, str):
        return None
    name = value.split(":", 1)[0].strip().lower()
    if name == "cpu":
        return "cpu"
    if name.startswith(ACCEL_PREFIXES):
        return "dev"
    return None


def const_str(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def is_device_name(name):
    """A variable whose name says it holds a device (device, dev, self.device)."""
    low = name.lower()
    return low in ("device", "dev", "devices", "target_device") or low.endswith("_device")


_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LINE_KEEP = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def source_lines(text, keepends=False):
    """The lines as Python numbers them: only \\n, \\r\\n and \\r end a line
    (str.splitlines also splits at form feeds and other separators)."""
    if keepends:
        return _LINE_KEEP.findall(text)
    lines = _LINE_BREAK.split(text)
    return lines[:-1] if lines and lines[-1] == "" else lines


def dotted(node):
    """a.b.c as 'a.b.c'; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def place_of(kind):
    return kind[1] if kind and kind[0] in (TENSOR, DEVICE, CKPT) else None


def is_tensor(kind):
    return bool(kind) and kind[0] == TENSOR


def is_module(kind):
    return bool(kind) and kind[0] == MODULE


def join_places(env, before):
    """After an `if`: a tensor or device whose place a branch changed may be
    in either place (`if device is None: device = torch.device('cpu')`)."""
    for name, kind in env.items():
        old = before.get(name)
        if old is not kind and old and kind and old[0] == kind[0] in (TENSOR, DEVICE) and old[1] != kind[1]:
            env[name] = (kind[0], None)


# Calls that pass a value through unchanged, for how a read value is used.
# Builtins whose result the enclosing expression uses as it would their
# argument (`sum([...])` of host numbers is one host number).
TRANSPARENT = frozenset("float int bool round abs str repr format len sum".split())
# Tests of a host number whose answer the enclosing expression uses as it
# would the number (`if not math.isfinite(loss.item()):` is a condition).
_NUMBER_TESTS = frozenset(("math.isfinite", "math.isnan", "math.isinf",
                           "numpy.isfinite", "numpy.isnan", "numpy.isinf"))
# NumPy functions that reduce or index what they are given: the read they
# wrap is used as their result is (`np.argmax(out.cpu().numpy(), axis=1)`
# then `total += np.sum(pred == y)`).
_NUMPY_REDUCTIONS = frozenset("argmax argmin argsort sum mean max min squeeze round".split())


def passes_value(func, q):
    """Whether a call hands the host value it is given on as itself, for how
    a read is used: `float(...)`, `math.isfinite(...)`, `np.argmax(...)`.

    Args:
        func: the call's `func` node.
        q: its qualified name (None when the imports do not say).
    """
    if isinstance(func, ast.Name) and func.id in TRANSPARENT:
        return True
    if (q or dotted(func)) in _NUMBER_TESTS:  # math is not among the tracked imports
        return True
    return q is not None and q.split(".")[0] == "numpy" and q.split(".")[-1] in _NUMPY_REDUCTIONS
