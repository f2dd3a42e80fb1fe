"""devcopy's pytest plugin (entry point `pytest11: devcopy`).

    pytest --devcopy=fail     each test runs under an observer; a test that
                              discards a copy fails with the probe's report
    pytest --devcopy=warn     the same findings, reported as warnings

The `devcopy` fixture gives tests the package with an observer already
running (`devcopy.observation`), and `devcopy.assert_clean(report)`.
"""
import pytest

_KINDS = ("discarded-copy",)


def pytest_addoption(parser):
    group = parser.getgroup("devcopy")
    group.addoption("--devcopy", choices=("off", "warn", "fail"), default=None,
                    help="run each test under devcopy's copy observer: warn or fail on "
                         "discarded copies (default: off)")


class DevcopyWarning(UserWarning):
    """A test discarded a copy (pytest --devcopy=warn)."""


def _mode(config):
    return config.getoption("devcopy", default=None) or "off"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    if _mode(item.config) == "off" or item.get_closest_marker("devcopy_off"):
        yield
        return
    import devcopy
    with devcopy.observe() as obs:
        yield
    item._devcopy_report = obs.report.only("discarded-copy")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    report = getattr(item, "_devcopy_report", None)
    if call.when != "call" or report is None or not report.has_findings or not rep.passed:
        return
    from devcopy._assert import assert_no_findings
    try:
        assert_no_findings(report, _KINDS, msg=f"{item.nodeid} discarded copies")
    except AssertionError as e:
        text = str(e)
    if _mode(item.config) == "fail":
        rep.outcome = "failed"
        rep.longrepr = text
    else:
        item.warn(DevcopyWarning(text))


def pytest_configure(config):
    config.addinivalue_line("markers", "devcopy_off: do not observe this test under --devcopy")


class _Fixture:
    """What the `devcopy` fixture gives: the package's functions, and an
    observation that runs for the whole test."""

    def __init__(self, observation):
        import devcopy
        self.observation = observation
        self.inspect = devcopy.inspect
        self.observe = devcopy.observe
        self.holders = devcopy.holders
        self.available_memory = devcopy.available_memory

    @property
    def report(self):
        return self.observation.report

    def assert_clean(self, report=None, kind=None):
        from devcopy._assert import assert_no_findings
        assert_no_findings(self.report if report is None else report, kind)

    def assert_no_discarded_copies(self, model=None):
        import devcopy
        return devcopy.assert_no_discarded_copies(model)


@pytest.fixture
def devcopy():
    import devcopy as pkg
    with pkg.observe() as obs:
        yield _Fixture(obs)

