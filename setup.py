"""Builds devcopy._C with the project's CMake (python/CMakeLists.txt) against
the torch of the interpreter running pip, then lets setuptools package it.
Metadata lives in pyproject.toml; the version in the project's VERSION file.

The extension and the probe are built as unity builds (each target's sources
compiled as one translation unit): the torch headers, most of the build's
time, are parsed once per target instead of once per source file."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "python"))
import write_metadata  # noqa: E402  (python/write_metadata.py, shared with CMake)

VERSION = write_metadata.version(ROOT)


class BuildPy(build_py):
    """The pure Python sources, plus devcopy/_version.py from VERSION."""

    def run(self):
        super().run()
        write_metadata.write_version_py(Path(self.build_lib) / "devcopy", VERSION)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        import torch
        build = Path(self.build_temp).resolve() / "cmake"
        args = ["-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                "-DDEVCOPY_ANALYZER=OFF", "-DDEVCOPY_CLANGD=OFF", "-DDEVCOPY_EXAMPLES=OFF",
                "-DDEVCOPY_TESTS=OFF", "-DBUILD_TESTING=OFF",
                # DEVCOPY_UNITY_BUILD=OFF: one translation unit per source (bench/pip_install.sh)
                f"-DCMAKE_UNITY_BUILD={os.environ.get('DEVCOPY_UNITY_BUILD', 'ON')}",
                # -O2, as Debian builds its packages: -O3 costs compile time.
                "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG",
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


setup(version=VERSION, ext_modules=[Extension("devcopy._C", sources=[])],
      cmdclass={"build_ext": CMakeBuild, "build_py": BuildPy})
