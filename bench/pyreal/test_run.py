"""Tests of run.py without the real linter: a git mirror made on the spot,
labelled sets written here, and fake_linter.py answering with planned findings.

  python3 -m pytest -q bench/pyreal/test_run.py    (or python3 bench/pyreal/test_run.py)
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

HEADER = "repository\tcommit\tpath\tline\tlabel\tnote\n"
HS = "devcopy-host-sync-in-loop"
CTM = "devcopy-create-then-move"
DC = "devcopy-discarded-copy"


def git(*args, cwd):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                   cwd=cwd, check=True, capture_output=True)


class RunTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        t = self.tmp.name
        src = os.path.join(t, "src")
        os.makedirs(os.path.join(src, "pkg"))
        for name, text in {"train.py": "import torch\n" * 30, "pkg/model.py": "x = 1\n",
                           "pkg/util.py": "y = 2\n", "README": "not python\n"}.items():
            with open(os.path.join(src, name), "w") as f:
                f.write(text)
        git("init", "-q", cwd=src)
        git("add", ".", cwd=src)
        git("commit", "-q", "-m", "c", cwd=src)
        self.commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=src, capture_output=True,
                                     text=True, check=True).stdout.strip()
        self.mirrors = os.path.join(t, "mirrors")
        git("clone", "-q", "--mirror", src, os.path.join(self.mirrors, "o+r", "repo"), cwd=t)
        self.plan = os.path.join(t, "plan.json")
        self.env = dict(os.environ, FAKE_LINT_PLAN=self.plan, FAKE_LINT_EXPECT="pkg/util.py")

    def tearDown(self):
        self.tmp.cleanup()

    def write_set(self, name, rows, repo="o/r"):
        path = os.path.join(self.tmp.name, name + ".tsv")
        with open(path, "w") as f:
            f.write(HEADER)
            for p, line, label in rows:
                f.write(f"{repo}\t{self.commit}\t{p}\t{line}\t{label}\tnote\n")
        return path

    def invoke(self, findings, tune, blind, *extra):
        with open(self.plan, "w") as f:
            json.dump(findings, f)
        cmd = [sys.executable, os.path.join(HERE, "run.py"), "--mirrors", self.mirrors,
               "--tune-file", tune, "--blind-file", blind,
               *[a for name in run.SETS[2:] for a in (f"--{name}-file", self.write_set(name, []))],
               "--linter", f"{sys.executable} {os.path.join(HERE, 'fake_linter.py')}", *extra]
        return subprocess.run(cmd, capture_output=True, text=True, env=self.env)

    def test_scores_each_set_and_rule(self):
        tune = self.write_set("tune", [("train.py", 10, HS), ("train.py", 12, "ok"),
                                       ("train.py", 20, CTM), ("pkg/model.py", 1, DC)])
        blind = self.write_set("blind", [("train.py", 5, HS), ("train.py", 25, "ok")])
        # 11: a finding near 10 (tolerance) is found; 12 lands on an ok line;
        # 20 is missed; model.py:1 reported as discarded-result counts for the
        # discarded-copy label; 25 wrong in blind; 29 not labelled anywhere.
        p = self.invoke({"train.py": [[11, HS], [12, HS], [25, CTM], [29, HS]],
                         "pkg/model.py": [[1, "devcopy-discarded-result"]]}, tune, blind, "--show")
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout
        tune_part = out.split("tune set")[1].split("blind set")[0]
        self.assertRegex(tune_part, r"devcopy-host-sync-in-loop\s+1\s+0\s+1\s+1\.00\s+0\.50")
        self.assertRegex(tune_part, r"devcopy-create-then-move\s+0\s+1\s+0\s+0\.00\s+-")
        self.assertRegex(tune_part, r"devcopy-discarded-copy\s+1\s+0\s+0\s+1\.00\s+1\.00")
        blind_part = out.split("blind set")[1].split("all sets")[0]
        self.assertRegex(blind_part, r"devcopy-host-sync-in-loop\s+0\s+1\s+0\s+0\.00\s+-")
        self.assertRegex(blind_part, r"devcopy-create-then-move\s+0\s+0\s+1\s+-\s+0\.00")
        self.assertIn("reported lines not labelled yet: 1", out)
        self.assertIn("o/r train.py:29 [devcopy-host-sync-in-loop]", out)
        self.assertIn("MISSED o/r train.py:20 devcopy-create-then-move", out)
        self.assertIn("WRONG  o/r train.py:12 ok devcopy-host-sync-in-loop", out)

    def test_create_then_move_matches_a_label_at_either_end(self):
        # Reported at the factory (8, 14, 20) with a note at the move (10, 16,
        # 22): one set labels the move, one the factory; 26's move is a line
        # labelled ok with no label at its factory (24), so it is wrong.
        tune = self.write_set("tune", [("train.py", 10, CTM), ("train.py", 14, CTM), ("train.py", 24, "ok")])
        blind = self.write_set("blind", [("train.py", 26, CTM)])
        p = self.invoke({"train.py": [[8, CTM, 10], [14, CTM, 16], [20, HS, 22], [24, CTM, 26]]},
                        tune, blind, "--set", "tune", "--show")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"devcopy-create-then-move\s+2\s+0\s+1\s+1\.00\s+0\.67")
        self.assertIn("FOUND  o/r train.py:10 devcopy-create-then-move devcopy-create-then-move", p.stdout)
        self.assertIn("o/r train.py:20 [devcopy-host-sync-in-loop]", p.stdout)  # only create-then-move has two ends
        p = self.invoke({"train.py": [[24, CTM, 26]]}, tune, blind, "--set", "blind")
        self.assertRegex(p.stdout, r"devcopy-create-then-move\s+1\s+0\s+0\s+1\.00\s+1\.00")

    def test_one_set_only(self):
        tune = self.write_set("tune", [("train.py", 10, HS)])
        blind = self.write_set("blind", [("train.py", 5, "bogus-label")])
        p = self.invoke({"train.py": [[10, HS]]}, tune, blind, "--set", "tune")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("blind set", p.stdout)
        self.assertRegex(p.stdout, r"all\s+1\s+0\s+0\s+1\.00\s+1\.00")

    def test_missing_mirror_is_one_line(self):
        tune = self.write_set("tune", [("train.py", 10, HS)], repo="nobody/there")
        blind = self.write_set("blind", [("train.py", 5, HS)])
        p = self.invoke({}, tune, blind)
        self.assertNotEqual(p.returncode, 0)
        self.assertEqual(p.stderr.strip().count("\n"), 0)
        self.assertIn("pyreal: mirrors missing", p.stderr)
        self.assertIn("nobody/there", p.stderr)

    def test_linter_failure_is_one_line(self):
        tune = self.write_set("tune", [("train.py", 10, HS)])
        blind = self.write_set("blind", [("train.py", 5, HS)])
        self.env["FAKE_LINT_RC"] = "2"
        p = self.invoke({}, tune, blind)
        self.assertNotEqual(p.returncode, 0)
        self.assertEqual(p.stderr.strip().count("\n"), 0)
        self.assertIn("pyreal: the linter exited 2", p.stderr)
        del self.env["FAKE_LINT_RC"]
        self.env["FAKE_LINT_GARBAGE"] = "1"
        p = self.invoke({}, tune, blind)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("is not its JSON document", p.stderr)

    def test_files_the_linter_cannot_read_are_listed(self):
        tune = self.write_set("tune", [("train.py", 10, HS), ("pkg/model.py", 1, DC)])
        blind = self.write_set("blind", [("train.py", 5, HS)])
        p = self.invoke({"train.py": [[10, HS]], "errors": ["pkg/model.py"]}, tune, blind, "--set", "tune")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("linter errors: 1", p.stdout)
        self.assertIn("pkg/model.py", p.stdout)
        self.assertRegex(p.stdout, r"devcopy-discarded-copy\s+0\s+1\s+0\s+0\.00")
        self.assertRegex(p.stdout, r"devcopy-host-sync-in-loop\s+1\s+0\s+0\s+1\.00")

    def test_mirror_with_a_git_folder_is_read(self):
        # A mirror fetched as repo/.git (a work-tree layout) instead of a bare repo.
        src = os.path.join(self.mirrors, "o+r", "repo")
        nested = os.path.join(self.tmp.name, "mirrors2", "o+r", "repo")
        os.makedirs(nested)
        os.rename(src, os.path.join(nested, ".git"))
        tune = self.write_set("tune", [("train.py", 10, HS)])
        blind = self.write_set("blind", [("train.py", 5, HS)])
        self.mirrors = os.path.join(self.tmp.name, "mirrors2")
        p = self.invoke({"train.py": [[10, HS]]}, tune, blind, "--set", "tune")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"all\s+1\s+0\s+0\s+1\.00\s+1\.00")

    def test_blind3_is_a_set_of_its_own(self):
        tune = self.write_set("tune", [("train.py", 10, HS)])
        blind = self.write_set("blind", [("train.py", 5, HS)])
        blind3 = self.write_set("blind3x", [("train.py", 20, CTM), ("train.py", 22, "ok")])
        p = self.invoke({"train.py": [[20, CTM], [22, HS]]}, tune, blind, "--set", "blind3",
                        "--blind3-file", blind3)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("blind3 set (2 labels)", p.stdout)
        self.assertNotIn("tune set", p.stdout)
        self.assertRegex(p.stdout, r"devcopy-create-then-move\s+1\s+0\s+0\s+1\.00\s+1\.00")
        self.assertRegex(p.stdout, r"devcopy-host-sync-in-loop\s+0\s+0\s+1\s+-\s+0\.00")
        p = self.invoke({"train.py": [[20, CTM], [10, HS]]}, tune, blind, "--blind3-file", blind3)
        self.assertIn("blind3 set (2 labels)", p.stdout)
        self.assertIn("all sets (4 labels)", p.stdout)

    def test_blind4_is_a_set_of_its_own(self):
        tune = self.write_set("tune", [("train.py", 10, HS)])
        blind = self.write_set("blind", [("train.py", 5, HS)])
        blind4 = self.write_set("blind4x", [("train.py", 14, HS), ("train.py", 16, "ok"),
                                            ("pkg/model.py", 1, CTM)])
        p = self.invoke({"train.py": [[14, HS], [16, CTM]]}, tune, blind, "--set", "blind4",
                        "--blind4-file", blind4)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("blind4 set (3 labels)", p.stdout)
        self.assertNotIn("blind3 set", p.stdout)
        self.assertRegex(p.stdout, r"devcopy-host-sync-in-loop\s+1\s+0\s+0\s+1\.00\s+1\.00")
        self.assertRegex(p.stdout, r"devcopy-create-then-move\s+0\s+1\s+1\s+0\.00\s+0\.00")
        p = self.invoke({"train.py": [[14, HS], [10, HS]]}, tune, blind, "--blind4-file", blind4)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("blind4 set (3 labels)", p.stdout)
        self.assertIn("all sets (5 labels)", p.stdout)

    def test_bad_labels_are_refused(self):
        tune = self.write_set("tune", [("train.py", 10, "devcopy-no-such-rule")])
        blind = self.write_set("blind", [("train.py", 5, HS)])
        p = self.invoke({}, tune, blind)
        self.assertIn("unknown label 'devcopy-no-such-rule'", p.stderr)
        tune = self.write_set("tune", [("gone.py", 1, HS)])
        p = self.invoke({}, tune, blind)
        self.assertIn("gone.py is not in that commit", p.stderr)


class ScoreTest(unittest.TestCase):
    def rows(self, *labels):
        return [dict(repository="o/r", commit="c", path="f.py", line=line, label=label)
                for line, label in labels]

    def test_exact_line_wins_over_a_neighbour(self):
        rows = self.rows((10, HS), (11, HS))
        stats, unlabelled = run.score(rows, {("o/r", "c", "f.py"): [(11, HS, ""), (10, HS, "")]})
        self.assertEqual(stats[HS]["found"], 2)
        self.assertEqual(stats[HS]["missed"], 0)
        self.assertEqual(unlabelled, [])

    def test_beyond_tolerance_is_not_a_match(self):
        rows = self.rows((10, HS))
        stats, unlabelled = run.score(rows, {("o/r", "c", "f.py"): [(13, HS, "m")]})
        self.assertEqual(stats[HS]["missed"], 1)
        self.assertEqual(unlabelled, [("o/r", "c", "f.py", 13, HS, "m")])

    def test_other_rule_on_a_labelled_line_is_wrong(self):
        rows = self.rows((10, HS))
        stats, _ = run.score(rows, {("o/r", "c", "f.py"): [(10, CTM, ""), (10, CTM, "")]})
        self.assertEqual(stats[HS]["missed"], 1)
        self.assertEqual(stats[CTM]["wrong"], 1)

    def test_other_ends_match_only_where_no_label_took_the_finding(self):
        rows = self.rows((10, CTM), (12, CTM))
        stats, _ = run.score(rows, {("o/r", "c", "f.py"): [(10, CTM, "", (12,))]})
        self.assertEqual((stats[CTM]["found"], stats[CTM]["missed"]), (1, 1))

    def test_findings_in_unlabelled_files_are_listed(self):
        rows = self.rows((10, HS))
        _, unlabelled = run.score(rows, {("o/r", "c", "g.py"): [(3, DC, "")],
                                         ("x/y", "d", "g.py"): [(3, DC, "")]})
        self.assertEqual(unlabelled, [("o/r", "c", "g.py", 3, DC, "")])


if __name__ == "__main__":
    unittest.main()
