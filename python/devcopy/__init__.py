"""devcopy for Python: the runtime probe of devcopy (C++, LibTorch) on live
PyTorch models.

    report = devcopy.inspect(model, roots={"optimizer": opt})
    print(report)                       # the probe's text report
    with devcopy.observe(model) as obs:  # copies made in the block
        model(x)
    obs.report.findings                 # discarded copies, with their Python line

The extension (devcopy._C) is built by the project's CMake against the
interpreter's own torch; see the README's "Python" section.
"""
try:
    from ._version import __version__  # written by the build from the project's VERSION
except ImportError:  # a source checkout, never built: the VERSION file itself
    from pathlib import Path as _Path
    __version__ = (_Path(__file__).resolve().parents[2] / "VERSION").read_text().strip()

import torch  # noqa: F401  (loads libtorch before the extension links to it)

from . import _C
from ._assert import assert_no_discarded_copies, assert_no_findings
from ._holders import holders
from ._inspect import available_memory, check, inspect, inspect_distributed
from ._observe import Observation, mark_read, observe, scope
from ._report import Finding, ProbeFailure, Report

__all__ = [
    "Finding", "Observation", "ProbeFailure", "Report", "assert_no_discarded_copies",
    "assert_no_findings", "available_memory", "check", "holders", "inspect",
    "inspect_distributed", "mark_read",
    "observe", "scope", "__version__",
]
