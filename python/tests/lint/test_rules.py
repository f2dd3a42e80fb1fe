"""Each fixture marks the lines that must be flagged (`# EXPECT: rule`) and
the notes (`# EXPECT-NOTE: rule`); every other line must stay silent."""
import os
import re

import pytest

from devcopy.lint import lint_paths

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
_MARK = re.compile(r"# EXPECT(-NOTE)?: ([\w-]+)")


def _expected():
    findings, notes = set(), set()
    for root, _, files in os.walk(FIXTURES):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            with open(path, encoding="utf-8") as f:
                for i, line in enumerate(f, 1):
                    for m in _MARK.finditer(line):
                        (notes if m.group(1) else findings).add((os.path.relpath(path, FIXTURES), i, m.group(2)))
    return findings, notes


@pytest.fixture(scope="module")
def run():
    findings, errors, files, _ = lint_paths([FIXTURES], jobs=1)
    assert errors == []
    return findings


def _rel(path):
    return os.path.relpath(path, FIXTURES)


def test_each_marked_line_is_flagged_and_no_other(run):
    expected, _ = _expected()
    got = {(_rel(file), f[1], f[0]) for file, f in run}
    assert sorted(got - expected) == [], "flagged but not marked"
    assert sorted(expected - got) == [], "marked but not flagged"


def test_notes_point_at_the_first_move(run):
    _, expected = _expected()
    rule = "devcopy-repeated-module-move"
    got = {(_rel(n[0]), n[1], f[0]) for _, f in run for n in f[6] if f[0] == rule}
    assert {e for e in expected if e[2] == rule} <= got


def test_create_then_move_through_a_local_notes_each_move(run):
    _, expected = _expected()
    rule = "devcopy-create-then-move"
    got = {(_rel(n[0]), n[1], f[0]) for _, f in run for n in f[6] if f[0] == rule}
    assert sorted(got) == sorted(e for e in expected if e[2] == rule)


def test_create_then_move_through_a_local_is_reported_at_the_factory(run):
    by_line = {f[1]: f for file, f in run
               if _rel(file) == "create_then_move_locals.py" and f[0] == "devcopy-create-then-move"}
    pad = by_line[36]
    assert pad[2] == 37  # the factory inside Variable(...), not the wrapper
    assert "'zeros()' makes the tensor on the host, kept in 'pad_zero' until 'cuda()' at line 38" in pad[5]
    # moved under `if self.gpu:`: the device follows the same test
    assert "torch.zeros(..., device='cuda' if self.gpu else 'cpu')" in pad[5]
    assert pad[7] == []  # no automatic fix across lines
    legacy = by_line[40][5]
    assert "torch.empty(..., dtype=torch.long, device='cuda' if" in legacy  # LongTensor takes no device=
    assert "kept in 'seq_range', then 'seq_range_expand' until 'cuda()' at line 53" in by_line[49][5]
    assert "torch.ones(..., device=DEVICE)" in by_line[17][5]  # moved unconditionally


@pytest.mark.parametrize("name,lines", [
    ("seed_offload.py", {17}), ("seed_offload_save_on_cpu.py", {19})])
def test_offload_seed_discarded_copy_in_both_versions(run, name, lines):
    got = {f[1] for file, f in run if _rel(file) == name}
    assert got == lines
    assert all(f[0] == "devcopy-discarded-copy" for file, f in run if _rel(file) == name)


def test_lora_seed(run):
    got = {(f[1], f[0]): f for file, f in run if _rel(file) == "seed_lora.py"}
    assert set(got) == {(34, "devcopy-checkpoint-to-device"), (37, "devcopy-repeated-module-move")}
    move = got[(37, "devcopy-repeated-module-move")]
    assert "constructor of 'CLIP'" in move[5] and "line 23" in move[5]
    assert [n[1] for n in move[6]] == [23]  # CLIP.__init__'s self.model.to(self.device)
    load = got[(34, "devcopy-checkpoint-to-device")]
    assert "torch.load(lora_path)" in load[5] and "map_location='cpu'" in load[5]


def test_package_move_across_files(run):
    move = [f for file, f in run
            if _rel(file) == os.path.join("pkg", "model.py") and f[0] == "devcopy-repeated-module-move"]
    assert [f[1] for f in move] == [16]
    assert "(blocks.py)" in move[0][5]
    assert [(_rel(n[0]), n[1]) for n in move[0][6]] == [(os.path.join("pkg", "blocks.py"), 8)]
