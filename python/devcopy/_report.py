"""Report and Finding: the probe's one result model (devcopy::Report), with a
Python face. Text and JSON come from the C++ code itself, so a Python report
reads exactly as a C++ one."""
import json
import re
from dataclasses import dataclass, field
from typing import List, Tuple

from . import _C

_STR, _INT, _STRS, _LINE = "a string", "an integer", "a list of strings", "a line number"
# Each saved list, the binding that holds its items, and their fields.
_FIELDS = {
    "findings": (_C.Finding, {"kind": _STR, "message": _STR, "bytes": _INT, "devices": _STRS,
                              "tensors": _STRS, "op": _STR, "module": _STR, "details": _STRS,
                              "location": _STR, "file": _STR, "line": _LINE, "function": _STR,
                              "count": _INT}),
    "shared": (_C.SharedStorage, {"device": _STR, "bytes": _INT, "tensors": _STRS}),
    "devices": (_C.DeviceMemory, {"device": _STR, "reachable_bytes": _INT, "allocated_bytes": _INT,
                                  "reserved_bytes": _INT, "reserved_unused_bytes": _INT,
                                  "largest_free_block": _INT}),
    "copies": (_C.CopyRoute, {"src_device": _STR, "dst_device": _STR, "dtype": _STR, "count": _INT,
                              "bytes": _INT}),
    "skipped": (_C.Skipped, {"tensor": _STR, "reason": _STR}),
}
_INT64 = range(-(1 << 63), 1 << 63)
_INT32 = range(-(1 << 31), 1 << 31)


def _fits(value, kind):
    if kind == _STR:
        return isinstance(value, str)
    if kind in (_INT, _LINE):
        return isinstance(value, int) and not isinstance(value, bool) and \
            value in (_INT64 if kind == _INT else _INT32)
    if kind == "an object":
        return isinstance(value, dict)
    if kind == "a list":
        return isinstance(value, list)
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _checked(where, item, fields):
    """`item` (the saved object at `where`, "findings[3]") when each field
    it has is of its type; ValueError naming the first that is not."""
    if not isinstance(item, dict):
        raise ValueError(f"devcopy: {where} is {_json_type(item)}, expected an object")
    for name, kind in fields.items():
        if name in item and not _fits(item[name], kind):
            raise ValueError(f"devcopy: {where}.{name} is {_json_type(item[name])}, expected {kind}")
    return item


def _json_type(value):
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int) and value not in _INT64:
        return "an integer out of range"
    names = {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number"}
    return names.get(type(value), type(value).__name__)


@dataclass(frozen=True)
class Finding:
    """One problem worth fixing. `kind` is a rule id (rules/<kind>.md);
    `location` is where the user's code made it ("train.py:42 (forward)"),
    empty when unknown (inspect() findings are about memory, not a line)."""
    kind: str
    message: str
    bytes: int
    devices: Tuple[str, ...]
    tensors: Tuple[str, ...]
    location: str = ""
    op: str = ""
    module: str = ""
    details: Tuple[str, ...] = field(default=())
    count: int = 1  # occurrences merged into this finding (one call site's repeats)

    @classmethod
    def _of(cls, f):
        module, location = _split_scope(f.module)
        return cls(kind=f.kind, message=f.message, bytes=f.bytes, devices=tuple(f.devices),
                   tensors=tuple(f.tensors), location=getattr(f, "location", "") or location,
                   op=f.op, module=module, details=tuple(f.details), count=getattr(f, "count", 1))


_AT = re.compile(r"^(?:(.*) at )?(\S+:\d+)$")


def _split_scope(scope):
    """observe() names its scopes "<module> at <file>:<line>" or
    "<file>:<line>": split them."""
    m = _AT.match(scope)
    return (m.group(1) or "", m.group(2)) if m else (scope, "")


_WHERE = {"function": _STR, "file": _STR, "line": _LINE}
_TIMELINE = {"device": _STR, "peak_bytes": _INT, "peak_reserved": _INT, "peak_time_ns": _INT,
             "explained_by": _STR, "explanation": _STR, "peak_where": "an object",
             "samples": "a list", "parts": "a list", "misses": "a list", "marks": "a list"}
# Each list of a timeline, the binding of its items, and their own fields
# (each item also carries a source location: _WHERE's fields).
_TIMELINE_LISTS = (
    ("parts", _C.PeakPart, {"owner": _STR, "bytes": _INT, "blocks": _INT}),
    ("misses", _C.SegmentMiss, {"time_ns": _INT, "requested": _INT, "segment": _INT,
                                "cached_free": _INT, "largest_free_block": _INT}),
    ("marks", _C.TimelineMark, {"time_ns": _INT, "ordinal": _INT, "bytes": _INT, "route": _STR}),
)


def _where(where, item):
    """A SourceLocation from the location fields of `item` (checked)."""
    item = _checked(where, item, _WHERE)
    w = _C.SourceLocation()
    w.function, w.file, w.line = item.get("function", ""), item.get("file", ""), item.get("line", 0)
    return w


def _timeline(where, item):
    """A DeviceTimeline from its JSON (Report::to_json's "timelines"), each
    field checked as from_json checks the others."""
    item = _checked(where, item, _TIMELINE)
    t = _C.DeviceTimeline()
    for name in ("device", "peak_bytes", "peak_reserved", "peak_time_ns", "explained_by", "explanation"):
        if name in item:
            setattr(t, name, item[name])
    t.peak_where = _where(f"{where}.peak_where", item.get("peak_where", {}))
    samples = []
    for i, sample in enumerate(item.get("samples", [])):
        if not (isinstance(sample, list) and len(sample) == 3 and all(_fits(v, _INT) for v in sample)):
            raise ValueError(f"devcopy: {where}.samples[{i}] is {_json_type(sample)}, "
                             "expected [time_ns, allocated, reserved] (three integers)")
        s = _C.MemorySample()
        s.time_ns, s.allocated, s.reserved = sample
        samples.append(s)
    t.samples = samples
    for key, kind, fields in _TIMELINE_LISTS:
        out = []
        for i, entry in enumerate(item.get(key, [])):
            entry = _checked(f"{where}.{key}[{i}]", entry, fields)
            obj = kind()
            for name in fields:
                if name in entry:
                    setattr(obj, name, entry[name])
            obj.where = _where(f"{where}.{key}[{i}]", entry)
            out.append(obj)
        setattr(t, key, out)
    return t


class ProbeFailure(AssertionError):
    """Raised by check() under DEVCOPY_PROBE=fail; str() is the whole report."""

    def __init__(self, report):
        super().__init__(str(report))
        self.report = report


class Report:
    """What inspect() or an observer found. str() is the probe's text report,
    to_json() its JSON (stable keys), to_html() a self-contained page."""

    def __init__(self, native=None):
        self._native = native if native is not None else _C.Report()

    @property
    def findings(self) -> List[Finding]:
        return [Finding._of(f) for f in self._native.findings]

    def findings_of(self, kind: str) -> List[Finding]:
        return [f for f in self.findings if f.kind == kind]

    def only(self, kind: str) -> "Report":
        """The findings of `kind`, the rest of the report kept as context."""
        return Report(self._native.only(kind))

    @property
    def has_findings(self) -> bool:
        return bool(self._native.findings)

    @property
    def wasted_bytes(self) -> int:
        return self._native.wasted_bytes

    @property
    def devices(self):
        return self._native.devices

    @property
    def shared(self):
        return self._native.shared

    @property
    def copies(self):
        return self._native.copies

    @property
    def skipped(self):
        return self._native.skipped

    @property
    def timelines(self):
        """Device memory over the observed block, one per device: samples,
        the peak (`peak_bytes`, `peak_where`), its `parts` by owner and line,
        the finding that explains it (`explained_by`, `explanation`), and
        requests that made a new segment although enough was cached
        (`misses`). Empty where the allocator reports no events."""
        return self._native.timelines

    @property
    def host_syncs(self) -> int:
        return self._native.host_syncs

    def merged(self, other: "Report") -> "Report":
        return Report(self._native.merged(other._native))

    def to_json(self) -> str:
        return self._native.to_json()

    def to_dict(self) -> dict:
        return json.loads(self.to_json())

    def save(self, path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json())

    @classmethod
    def from_json(cls, text: str) -> "Report":
        """A report saved with to_json() (by Python or C++).

        Args:
            text: the JSON text (str, bytes or bytearray).

        Raises:
            ValueError: the text is not a devcopy JSON report; the message
                names the first field that is wrong.
        """
        if not isinstance(text, (str, bytes, bytearray)):
            raise TypeError(f"devcopy: Report.from_json takes the JSON text, got {type(text).__name__}")
        try:
            data = json.loads(text)
        except RecursionError:
            raise ValueError("devcopy: not a devcopy JSON report (nested too deeply)") from None
        except ValueError as e:
            raise ValueError(f"devcopy: not a devcopy JSON report ({e})") from None
        if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
            raise ValueError("devcopy: not a devcopy JSON report (no 'findings' list)")
        native = _C.Report()
        for key, (kind, fields) in _FIELDS.items():
            items = data.get(key, [])
            if not isinstance(items, list):
                raise ValueError(f"devcopy: {key} is {_json_type(items)}, expected a list")
            for i, item in enumerate(items):
                item = _checked(f"{key}[{i}]", item, fields)
                obj = kind()
                for name in fields:
                    if name in item and hasattr(obj, name):
                        setattr(obj, name, item[name])
                if key == "findings" and item.get("file") and hasattr(obj, "location"):
                    obj.location = f"{item['file']}:{item.get('line', 0)}"
                    obj.function = item.get("function", "")
                    obj.count = item.get("count", 1)
                native.add(obj)
        timelines = data.get("timelines", [])
        if not isinstance(timelines, list):
            raise ValueError(f"devcopy: timelines is {_json_type(timelines)}, expected a list")
        for i, item in enumerate(timelines):
            native.add(_timeline(f"timelines[{i}]", item))
        syncs = data.get("host_syncs", 0)
        if not _fits(syncs, _INT):
            raise ValueError(f"devcopy: host_syncs is {_json_type(syncs)}, expected {_INT}")
        native.set_host_syncs(syncs)
        return cls(native)

    def to_html(self, title: str = "devcopy report", static=None) -> str:
        """One self-contained page. Args: title: its heading; static: a
        static run's findings to show beside these (devcopy._static)."""
        from ._html import page
        return page(self, title, static)

    def _repr_html_(self) -> str:
        from ._html import fragment
        return fragment(self)

    def __str__(self) -> str:
        return str(self._native)

    def __repr__(self) -> str:
        n = len(self._native.findings)
        return f"<devcopy.Report: {n} finding{'s' if n != 1 else ''}, " \
               f"{_C.format_bytes(self.wasted_bytes)} wasted>"
