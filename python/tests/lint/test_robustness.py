"""The linter's walk over code it was not tuned on: every file of an
installed torch package lints without an internal error (an unreadable or
unparsable file is an error of its own, named as such)."""
import os

import pytest

from devcopy.lint import lint_paths

_TORCH_SOURCES = "/usr/lib/python3/dist-packages/torch"


@pytest.mark.skipif(not os.path.isdir(_TORCH_SOURCES), reason="no torch sources installed at " + _TORCH_SOURCES)
def test_torch_sources_lint_without_internal_errors():
    findings, errors, files, _ = lint_paths([_TORCH_SOURCES])
    assert files > 500
    internal = [e for e in errors if "internal error" in str(e)]
    assert internal == []
