"""What devcopy-create-then-move advises: the factory given the device,
and the fix that puts `device=` into it and drops the move."""
import ast

# The legacy constructors: a size or a constant, made on the host; they take
# no device=, so the fix names torch.empty or torch.tensor with the dtype.
_LEGACY_DTYPES = {"": None, "Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16",
                  "Long": "long", "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8", "Bool": "bool"}
LEGACY = frozenset(t + "Tensor" for t in _LEGACY_DTYPES)


def suggest(factory, fname, target):
    """What to write instead: the factory given the device (the legacy
    constructors take none: torch.empty or torch.tensor with their dtype)."""
    short = fname.split(".")[1]
    if short not in LEGACY:
        return f"{fname}(..., device={target})"
    dtype = _LEGACY_DTYPES[short[:-len("Tensor")]]
    dtype = f", dtype=torch.{dtype}" if dtype else ""
    maker = "torch.tensor" if legacy_constant(factory) else "torch.empty"
    return f"{maker}(...{dtype}, device={target})"


def legacy_constant(factory):
    """torch.FloatTensor([1e-8]): a constant, not a size."""
    return len(factory.args) == 1 and isinstance(factory.args[0], (ast.List, ast.Tuple))


def fix(walk, call, factory, target, meth):
    """device= into the factory's call, and the move dropped: only for a
    plain .to(device) / .cuda() with nothing else in it."""
    if meth in ("type", "type_as") or meth == "to" and len(call.args) + len(call.keywords) != 1:
        return []
    if call.keywords and call.keywords[0].arg != "device":
        return []
    if meth == "cuda" and (call.args or call.keywords):
        return []
    name = factory.func.attr if isinstance(factory.func, ast.Attribute) else factory.func.id
    if name in LEGACY:
        return []  # the legacy constructors take no device=
    if factory.end_lineno != factory.lineno or call.end_lineno != factory.end_lineno:
        return []
    line = walk.lines[factory.lineno - 1]
    close = _utf8_col(line, factory.end_col_offset) - 1  # the factory's ')'
    if close < 0 or line[close] != ")":
        return []
    sep = ", " if factory.args or factory.keywords else ""
    receiver_end = _utf8_col(line, call.func.value.end_col_offset)
    call_end = _utf8_col(line, call.end_col_offset)
    # Two edits on one line, as (line, start, end, text) in characters.
    return [(factory.lineno, receiver_end, call_end, ""),
            (factory.lineno, close, close, f"{sep}device={target}")]


def _utf8_col(line, byte_col):
    """ast's byte offset within a line -> character index."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))
