"""devcopy's static checks for Python source: `python3 -m devcopy lint PATH...`.

Pure Python on the standard library's ast; torch is never imported, so the
linter runs in a lint-only job where torch is not installed.

    from devcopy.lint import lint_paths
    findings, errors, files, lines = lint_paths(["src/"])
"""
from ._engine import FLAKE8_CODES, LintError, lint_source
from ._engine import run as lint_paths

__all__ = ["FLAKE8_CODES", "LintError", "lint_paths", "lint_source"]
