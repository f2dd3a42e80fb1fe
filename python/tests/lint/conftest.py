"""The linter's tests need neither torch nor the extension: the package's
tests/conftest.py is not on this path."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(os.path.dirname(HERE))
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)
