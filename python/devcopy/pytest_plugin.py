"""devcopy's pytest plugin (entry point pytest11 ``devcopy.pytest_plugin``),
found with no ``-p``, installed or from a build tree on PYTHONPATH.

    pytest --devcopy=fail     each test runs under an observer; a test that
                              discards a copy fails with the probe's report
    pytest --devcopy=warn     the same findings, reported as warnings
    devcopy = fail            the same as an ini option (pytest.ini,
                              pyproject.toml, setup.cfg); --devcopy overrides

    @pytest.mark.devcopy_allow("discarded-copy")   this test may make them
    @pytest.mark.devcopy_off                        this test is not observed

The ``devcopy_observe`` fixture runs an observer for the whole test
(``devcopy_observe.report``, ``devcopy_observe.assert_clean()``).
"""
import warnings

import pytest

_KINDS = ("discarded-copy",)  # what --devcopy fails or warns on
_MODES = ("off", "warn", "fail")


def pytest_addoption(parser):
    group = parser.getgroup("devcopy")
    group.addoption("--devcopy", choices=_MODES, default=None,
                    help="run each test under devcopy's copy observer: warn or fail on "
                         "discarded copies (default: the ini option devcopy, else off)")
    parser.addini("devcopy", default="off",
                  help="devcopy's copy observer for each test: off, warn or fail "
                       "(--devcopy overrides it)")


class DevcopyWarning(UserWarning):
    """A test discarded a copy (pytest --devcopy=warn)."""


class DevcopyDeprecationWarning(DeprecationWarning):
    """A devcopy name that is going away (the message says its replacement)."""


def _mode(config):
    return config.getoption("devcopy", default=None) or config.getini("devcopy").strip() or "off"


def pytest_configure(config):
    config.addinivalue_line("markers", "devcopy_off: do not observe this test under --devcopy")
    config.addinivalue_line("markers", "devcopy_allow(*kinds): under --devcopy, let this test "
                                       "make findings of these kinds (e.g. \"discarded-copy\")")
    mode = _mode(config)
    if mode not in _MODES:
        raise pytest.UsageError(f"devcopy: ini option devcopy = {mode!r}: expected one of "
                                f"{', '.join(_MODES)}")


def pytest_collection_modifyitems(config, items):
    """Checks each devcopy_allow marker once, before any test runs."""
    marked = [(item, mark) for item in items for mark in item.iter_markers("devcopy_allow")]
    if not marked:
        return
    from devcopy import _C
    known = {rule for rule, _ in _C.runtime_rules()}
    for item, mark in marked:
        if not mark.args:
            raise pytest.UsageError(f"{item.nodeid}: devcopy_allow needs the kinds it allows, "
                                    "e.g. @pytest.mark.devcopy_allow(\"discarded-copy\")")
        for kind in mark.args:
            if kind not in known:
                raise pytest.UsageError(f"{item.nodeid}: devcopy_allow({kind!r}): not a devcopy "
                                        f"runtime rule (rules: {', '.join(sorted(known))})")


def _checked_kinds(item):
    """The kinds --devcopy checks in this test: none when it is off or the
    test is marked devcopy_off, less those its devcopy_allow markers name."""
    if _mode(item.config) == "off" or item.get_closest_marker("devcopy_off"):
        return set()
    allowed = {kind for mark in item.iter_markers("devcopy_allow") for kind in mark.args}
    return set(_KINDS) - allowed


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    kinds = _checked_kinds(item)
    if not kinds:
        yield
        return
    import devcopy
    with devcopy.observe() as obs:
        yield
    item._devcopy = (obs.report, kinds)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    report, kinds = getattr(item, "_devcopy", (None, ()))
    if call.when != "call" or report is None or not rep.passed:
        return
    if not any(f.kind in kinds for f in report.findings):
        return
    from devcopy._assert import assert_no_findings
    try:
        assert_no_findings(report, sorted(kinds), msg=f"{item.nodeid} discarded copies")
    except AssertionError as e:
        text = str(e)
    if _mode(item.config) == "fail":
        rep.outcome = "failed"
        rep.longrepr = text
    else:
        item.warn(DevcopyWarning(text))


class DevcopyObservation:
    """What the ``devcopy_observe`` fixture gives: an observation running for
    the whole test, and the package's functions."""

    def __init__(self, observation):
        import devcopy
        self.observation = observation
        self.inspect = devcopy.inspect
        self.observe = devcopy.observe
        self.holders = devcopy.holders
        self.available_memory = devcopy.available_memory

    @property
    def report(self):
        """The copies observed so far in this test (a devcopy.Report)."""
        return self.observation.report

    def assert_clean(self, report=None, kind=None):
        """Fails with the report's text when `report` (this test's so far,
        when None) has findings of `kind` (all kinds when None)."""
        __tracebackhide__ = True
        from devcopy._assert import assert_no_findings
        assert_no_findings(self.report if report is None else report, kind)

    def assert_no_discarded_copies(self, model=None):
        import devcopy
        return devcopy.assert_no_discarded_copies(model)


@pytest.fixture
def devcopy_observe():
    """An observer running for the whole test: ``devcopy_observe.report``,
    ``devcopy_observe.assert_clean()``."""
    import devcopy
    with devcopy.observe() as obs:
        yield DevcopyObservation(obs)


@pytest.fixture
def devcopy(devcopy_observe):
    """Deprecated: the old name of ``devcopy_observe`` (it shadows the
    package in the test)."""
    warnings.warn(DevcopyDeprecationWarning(
        "the devcopy fixture is deprecated: it shadows the devcopy package; "
        "use devcopy_observe"), stacklevel=2)
    return devcopy_observe
