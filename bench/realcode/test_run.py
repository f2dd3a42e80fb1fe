"""Tests of the real-code harness: template implementation files, stand-ins.

  DEVCOPY_TIDY=<devcopy-tidy> python3 bench/realcode/test_run.py

(without DEVCOPY_TIDY the end-to-end case is skipped; ctest sets it).

The end-to-end case builds a one-commit mirror of a small project whose
class template's members live in a .tpp included at the end of its header,
labels a per-step item() in the .tpp, and runs run.py on it with the mock
LibTorch header of the analyzer's fixtures.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from implfiles import including_header, map_back, splice  # noqa: E402
from run import prepare  # noqa: E402

HEADER = """#pragma once
#ifndef TRAINER_HPP
#define TRAINER_HPP
#include <torch/torch.h>

template <typename Model> class Trainer {
public:
  explicit Trainer(torch::Device device) : device(device) {}
  template <typename Loader> float train(Model &model, Loader &loader);

private:
  torch::Device device;
};

#include "Trainer.tpp"
#endif
"""
IMPL = """#ifndef TRAINER_HPP
#error include Trainer.hpp, not this file
#endif
template <typename Model>
template <typename Loader>
float Trainer<Model>::train(Model &model, Loader &loader) {
  float total = 0;
  for (auto &batch : loader) {
    torch::Tensor loss = model(batch.to(device));
    total += loss.item<float>();
  }
  return total;
}
"""
SYNC_LINE = 10  # the item() line of IMPL


def write(root, files):
    for path, text in files.items():
        os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as f:
            f.write(text)


class IncludingHeader(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="devcopy-realcode-test-")
        self.addCleanup(shutil.rmtree, self.dir)

    def test_prefers_the_header_of_the_same_name(self):
        tree = {"include/Trainer.hpp": HEADER, "include/Trainer.tpp": IMPL,
                "include/All.hpp": '#include "Trainer.tpp"\n',
                "src/main.cpp": '#include "Trainer.tpp"\n'}
        write(self.dir, tree)
        self.assertEqual(
            including_header(self.dir, sorted(tree), "include/Trainer.tpp"),
            "include/Trainer.hpp")

    def test_through_an_include_directory(self):
        write(self.dir, {"include/lib/Trainer.tpp": IMPL,
                         "include/lib/Api.h": "#include <lib/Trainer.tpp>\n"})
        files = ["include/lib/Api.h", "include/lib/Trainer.tpp"]
        self.assertEqual(
            including_header(self.dir, files, "include/lib/Trainer.tpp"),
            "include/lib/Api.h")

    def test_none_when_not_included_or_not_an_implementation_file(self):
        write(self.dir, {"a.hpp": '#include "other.tpp"\n', "x.tpp": IMPL,
                         "b.hpp": '#include "a.hpp"\n'})
        files = ["a.hpp", "b.hpp", "x.tpp"]
        self.assertIsNone(including_header(self.dir, files, "x.tpp"))
        self.assertIsNone(including_header(self.dir, files, "a.hpp"))

    def test_splice_maps_the_implementation_lines_back(self):
        # Some implementation files include their header again (for editors).
        write(self.dir, {"Trainer.hpp": HEADER,
                         "Trainer.tpp": '#include "Trainer.hpp"\n' + IMPL})
        copy, first, count = splice(self.dir, "Trainer.hpp", "Trainer.tpp")
        with open(os.path.join(self.dir, copy)) as f:
            lines = f.read().split("\n")
        self.assertEqual(os.path.dirname(copy), "")
        at = HEADER.split("\n").index('#include "Trainer.tpp"')
        self.assertEqual(first, at + 1)
        self.assertEqual(count, len(IMPL.rstrip("\n").split("\n")) + 1)
        # The implementation's include of its own header is blanked.
        self.assertEqual(lines[first - 1], "")
        self.assertIn("loss.item<float>()", lines[first + SYNC_LINE - 1])
        self.assertEqual(lines[first + count - 1], "#endif")
        found = [(first + SYNC_LINE, "r", "m"), (2, "r", "header line"),
                 (first + count, "r", "after")]
        self.assertEqual(map_back(found, first, count),
                         [(SYNC_LINE + 1, "r", "m")])


class StandIns(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="devcopy-realcode-test-")
        self.addCleanup(shutil.rmtree, self.dir)

    def test_two_headers_of_one_library_parse_together(self):
        # Each missing header gets its library's stand-in; a file including
        # two of them must not see every declaration twice.
        main = ("#include <opencv2/opencv.hpp>\n"
                "#include <opencv2/imgproc/imgproc.hpp>\n"
                "#include <tqdm/tqdm.h>\n#include <tqdm.hpp>\n"
                "int main() { cv::Mat m = cv::imread(\"a.png\");\n"
                "  for (int i : tqdm::range(3)) (void)i;\n"
                "  return m.rows; }\n")
        repo = os.path.join(self.dir, "repo")
        write(repo, {"main.cpp": main})
        stubs = os.path.join(self.dir, "stubs")
        _, written = prepare(repo, ["main.cpp"], [], stubs)
        self.assertEqual(written, 4)
        p = subprocess.run(["clang++-19", "-std=c++17", "-fsyntax-only",
                            "-idirafter", stubs, os.path.join(repo, "main.cpp")],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("redefinition", p.stderr)


@unittest.skipUnless(os.environ.get("DEVCOPY_TIDY"), "DEVCOPY_TIDY not set")
class EndToEnd(unittest.TestCase):
    def test_finding_in_a_tpp_is_counted(self):
        work = tempfile.mkdtemp(prefix="devcopy-realcode-test-")
        self.addCleanup(shutil.rmtree, work)
        src = os.path.join(work, "src")
        mock = os.path.join(ROOT, "tests/analyzer/mock/torch/torch.h")
        with open(mock) as f:
            write(src, {"include/Trainer.hpp": HEADER,
                        "include/Trainer.tpp": IMPL,
                        "include/torch/torch.h": f.read()})
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", src]
        subprocess.run(["git", "init", "-q", src], check=True)
        subprocess.run(git + ["add", "."], check=True)
        subprocess.run(git + ["commit", "-q", "-m", "x"], check=True)
        commit = subprocess.run(git + ["rev-parse", "HEAD"], check=True,
                                capture_output=True, text=True).stdout.strip()
        mirrors = os.path.join(work, "mirrors")
        subprocess.run(["git", "clone", "-q", "--bare", src,
                        os.path.join(mirrors, "o+p", "repo")], check=True)
        manifest = os.path.join(work, "m.tsv")
        with open(manifest, "w") as f:
            f.write("repository\tcommit\tpath\tline\tlabel\tnote\n")
            f.write(f"o/p\t{commit}\tinclude/Trainer.tpp\t{SYNC_LINE}\t"
                    "devcopy-host-sync-in-loop\tper-step item()\n")
            f.write(f"o/p\t{commit}\tinclude/Trainer.tpp\t"
                    f"{SYNC_LINE - 1}\tok\tneeded upload\n")
        run = [sys.executable, os.path.join(HERE, "run.py"),
               "--tidy", os.environ["DEVCOPY_TIDY"], "--mirrors", mirrors,
               "--manifest", manifest, "--no-pch", "--cache", "", "-j1",
               "--show"]
        p = subprocess.run(run, capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        at = "o/p include/Trainer.tpp:"
        self.assertIn(f"FOUND  {at}{SYNC_LINE}", p.stdout)
        self.assertIn(f"ok     {at}{SYNC_LINE - 1}", p.stdout)
        self.assertIn("reported lines not in the manifest: 0", p.stdout)


if __name__ == "__main__":
    unittest.main()
