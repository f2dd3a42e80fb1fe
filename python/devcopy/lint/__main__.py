"""python3 -m devcopy.lint PATH...: the same as python3 -m devcopy lint."""
import sys

from .cli import main

sys.exit(main())
