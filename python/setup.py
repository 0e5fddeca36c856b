"""`pip install ./python`: builds loom's extension with CMake and installs the `loom` package.

The extension (loom._C) is the project's own CMake target `loom_python`, built
from the repository this file sits in (the parent of python/), without tests:

    pip install ./python                    # a venv, or --user / --break-system-packages on Debian
    python3 -m loom.run script.py           # from any directory afterwards

pip builds a local directory in place, so the CMake tree lives in
python/build/cmake and a second install rebuilds only what changed. Knobs
(environment): LOOM_CMAKE_BUILD_DIR uses another CMake tree (an existing
build/ configured for the same Python is fine); LOOM_CMAKE_ARGS adds
arguments to the configure step (e.g. "-DCMAKE_BUILD_TYPE=Release").
Needs only what the engine needs (CMake, a C++20 compiler, pybind11 2.10+
headers, the interpreter's dev files) and setuptools; nothing is downloaded.
"""
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def _pybind11_cmake_dir():
    """pybind11's CMake package when the pybind11 Python package provides one (pip's pybind11)."""
    try:
        import pybind11
    except ImportError:
        return None  # Debian's pybind11-dev puts its config where CMake finds it by itself
    return pybind11.get_cmake_dir()


class CMakeBuild(build_ext):
    """Builds the one extension through the repository's CMake project."""

    def build_extension(self, ext):
        if not os.path.isfile(os.path.join(REPO, "engine", "CMakeLists.txt")):
            raise RuntimeError(f"loom's setup.py must sit in python/ of the loom repository; {REPO} is not one "
                               "(a pip older than 21.3 copies the directory away: use a newer pip)")
        build_dir = os.environ.get("LOOM_CMAKE_BUILD_DIR") or os.path.join(HERE, "build", "cmake")
        configure = ["cmake", "-S", REPO, "-B", build_dir, "-DLOOM_TESTS=OFF", "-DLOOM_PYTHON=ON",
                     f"-DPython_EXECUTABLE={sys.executable}"]
        if shutil.which("ninja") and not os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):
            configure += ["-G", "Ninja"]
        pybind11_dir = _pybind11_cmake_dir()
        if pybind11_dir:
            configure.append(f"-Dpybind11_DIR={pybind11_dir}")
        configure += shlex.split(os.environ.get("LOOM_CMAKE_ARGS", ""))
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", build_dir, "--target", "loom_python"], check=True)

        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = os.path.join(build_dir, "python", "loom", "_C" + suffix)
        if not os.path.isfile(built):
            raise RuntimeError(f"CMake built no {built}: was the Python module switched off? "
                               f"(see 'loom: Python module' in the configure output of {build_dir})")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built, target)


setup(
    name="loom",
    version="0.1.0",
    description="A lazy tensor engine in C++20 with a PyTorch-compatible Python front end",
    python_requires=">=3.9",
    install_requires=["numpy"],
    packages=find_packages(HERE, include=["loom", "loom.*"]),
    package_dir={"": os.path.relpath(HERE)},
    package_data={"loom.viz": ["page.html", "page.js", "page.css"]},  # the viewer's page
    ext_modules=[Extension("loom._C", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
