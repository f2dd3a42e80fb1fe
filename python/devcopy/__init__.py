"""devcopy for Python: the runtime probe of devcopy (C++, LibTorch) on live
PyTorch models, and static checks of Python source (devcopy.lint).

    report = devcopy.inspect(model, roots={"optimizer": opt})
    print(report)                       # the probe's text report
    with devcopy.observe(model) as obs:  # copies made in the block
        model(x)
    obs.report.findings                 # discarded copies, with their Python line

The extension (devcopy._C) is built by the project's CMake against the
interpreter's own torch; see the README's "Python" section. torch and the
extension are imported on first use of a runtime name (PEP 562), so that
`python3 -m devcopy lint` runs where torch is not installed.
"""
try:
    from ._version import __version__  # written by the build from the project's VERSION
except ImportError:  # a source checkout, never built: the VERSION file itself
    from pathlib import Path as _Path
    __version__ = (_Path(__file__).resolve().parents[2] / "VERSION").read_text().strip()

import importlib

# Public name -> the submodule that defines it.
_LAZY = {
    "assert_no_discarded_copies": "_assert", "assert_no_findings": "_assert",
    "holders": "_holders",
    "available_memory": "_inspect", "check": "_inspect", "inspect": "_inspect",
    "inspect_distributed": "_inspect",
    "Observation": "_observe", "mark_read": "_observe", "observe": "_observe", "scope": "_observe",
    "Finding": "_report", "ProbeFailure": "_report", "Report": "_report",
}

__all__ = [
    "Finding", "Observation", "ProbeFailure", "Report", "assert_no_discarded_copies",
    "assert_no_findings", "available_memory", "check", "holders", "inspect",
    "inspect_distributed", "mark_read",
    "observe", "scope", "__version__",
]


def __getattr__(name):
    if name == "_C" or name in _LAZY:
        import torch  # noqa: F401  (loads libtorch before the extension links to it)
        if name == "_C":
            return importlib.import_module("._C", __name__)
        value = getattr(importlib.import_module("." + _LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
