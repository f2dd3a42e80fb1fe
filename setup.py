"""Builds devcopy._C with the project's CMake (python/CMakeLists.txt) against
the torch of the interpreter running pip, then lets setuptools package it.
Metadata lives in pyproject.toml."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        import torch
        build = Path(self.build_temp).resolve() / "cmake"
        args = ["-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                "-DDEVCOPY_ANALYZER=OFF", "-DDEVCOPY_CLANGD=OFF", "-DDEVCOPY_EXAMPLES=OFF",
                "-DDEVCOPY_TESTS=OFF", "-DBUILD_TESTING=OFF",
                f"-DDEVCOPY_PYTHON_EXECUTABLE={sys.executable}"]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        prefix = Path(torch.utils.cmake_prefix_path)
        if (prefix / "Torch").is_dir():  # a pip wheel; Debian's torch is found by default
            args += [f"-DTorch_DIR={prefix / 'Torch'}", f"-DCMAKE_PREFIX_PATH={prefix}"]
        if shutil.which("ccache") and os.environ.get("CCACHE_DIR"):
            args += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
        subprocess.run(["cmake", *args], check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.run(["cmake", "--build", str(build), "--target", "devcopy_python", "-j", jobs],
                       check=True)
        built = sorted((build / "python" / "devcopy").glob("_C*.so"))
        if not built:
            sys.exit("devcopy: the CMake build made no extension; its configure output says why "
                     "(look for 'devcopy: Python package skipped')")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built[0], target)


setup(ext_modules=[Extension("devcopy._C", sources=[])], cmdclass={"build_ext": CMakeBuild})
