"""Assertions that read well in pytest's output: the message is the probe's
whole text report of the offending findings."""
from ._observe import observe


def _kinds(kind):
    if kind is None:
        return None
    return {kind} if isinstance(kind, str) else set(kind)


def assert_no_findings(report, kind=None, msg=None):
    """Fails with the report's text when `report` has findings (of `kind`:
    a rule id or a collection of them, all kinds when None).

    Args:
        report: a devcopy.Report.
        kind: a rule id, a collection of rule ids, or None for all.
        msg: the first line of the failure (a summary when None).
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this one
    kinds = _kinds(kind)
    bad = [f for f in report.findings if kinds is None or f.kind in kinds]
    if not bad:
        return
    shown = report
    if kinds is not None and len(kinds) == 1:
        shown = report.only(next(iter(kinds)))
    head = msg or (f"devcopy found {len(bad)} problem{'s' if len(bad) != 1 else ''}"
                   + (f" ({', '.join(sorted(kinds))})" if kinds else ""))
    lines = [head]
    for f in bad:
        lines.append(f"  {f.kind} at {f.location}" if f.location else f"  {f.kind}")
    raise AssertionError("\n".join(lines) + "\n\n" + str(shown))


class assert_no_discarded_copies:
    """`with devcopy.assert_no_discarded_copies(model): model(x)` fails when
    the block discarded a copy, naming each one's file and line.

    Args:
        model: optional torch.nn.Module whose parameters and modules the
            findings name.
    """

    def __init__(self, model=None):
        self._observation = observe(model)

    def __enter__(self):
        return self._observation.__enter__()

    def __exit__(self, *exc):
        __tracebackhide__ = True  # a class, not contextlib: no frame of its own
        self._observation.__exit__(*exc)
        if exc[0] is None:
            assert_no_findings(self._observation.report, "discarded-copy")
        return False
