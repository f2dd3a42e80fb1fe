"""devcopy's Python checks as a flake8 plugin (entry point flake8.extension,
code prefix DCP). Codes: DCP101 devcopy-discarded-copy, DCP102
devcopy-repeated-module-move, DCP103 devcopy-create-then-move, DCP104
devcopy-copy-in-loop, DCP105 devcopy-host-sync-in-loop, DCP106
devcopy-redundant-chain, DCP107 devcopy-checkpoint-to-device.

flake8 sees one file at a time: findings that join two files of a package
(a constructor's move in another file) need `python3 -m devcopy lint`.
"""
from ._engine import FLAKE8_CODES, lint_source, suppressed, suppressions
from ._facts import Join


class Plugin:
    """flake8 hands over the parsed tree; the file's own lines give the text."""

    name = "devcopy"
    version = "0.1.0"

    def __init__(self, tree, filename, lines):
        self.tree, self.filename, self.lines = tree, filename, lines

    def run(self):
        source = "".join(self.lines)
        findings, classes, events = lint_source(self.filename, source, tree=self.tree)
        join = Join()  # this file's own classes: their moves in __init__
        join.add(classes, events)
        findings = findings + [f for _, f in join.findings()]
        table = suppressions(source, noqa=False)  # NOLINT; flake8 itself handles noqa
        for rule, line, col, _, _, message, _, _ in sorted(findings, key=lambda f: (f[1], f[2])):
            if suppressed(rule, line, table):
                continue
            yield line, col, f"{FLAKE8_CODES[rule]} {message} [{rule}]", type(self)
