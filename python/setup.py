"""Builds loch's shared library (libloch.so, the Go core behind the C ABI in
../capi) and the loch CLI (../cmd/loch) with the machine's Go toolchain
while building the package; both go in loch/_lib, and the `loch` command
(loch._cli) runs the CLI.

Environment:
    LOCH_GO       the go command (default: go on PATH)
    LOCH_LIBRARY  a prebuilt libloch.so to package instead of building one
    LOCH_CLI      a prebuilt loch command to package instead of building one
                  (the package runs SQL through it: loch.query)
    LOCH_GOFLAGS  extra flags for go build (e.g. -tags=noturbojpeg)
    CC            the C compiler of loch/_convert.c (default: cc, else gcc)

With Python >= 3.11 and a C compiler, the batch conversion in C
(loch/_convert.c) is built into loch/_lib as well; without them the
package converts batches in Python, a little slower.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
LIB = "libloch.so"
CONVERT = "libloch_py.so"


CLI = "loch"


def go_build(dest: Path, name: str, prebuilt_env: str, package: str, *flags: str) -> None:
    """Writes dest/name (dest a directory): the file $prebuilt_env names,
    or `go build` of package (relative to the repository) with flags."""
    dest = dest.resolve()
    dest.mkdir(parents=True, exist_ok=True)
    prebuilt = os.environ.get(prebuilt_env)
    if prebuilt:
        shutil.copy2(prebuilt, dest / name)
        return
    if not (REPO / "go.mod").exists() or not (REPO / package).is_dir():
        raise SystemExit(
            f"loch: cannot build {name}: the Go sources (../go.mod, ../{package}) are not beside {HERE}; "
            f"install from a checkout of the repository or set {prebuilt_env} to a built {name}"
        )
    go = os.environ.get("LOCH_GO") or shutil.which("go")
    if not go:
        raise SystemExit("loch: building the Python package needs Go (https://go.dev/dl/) on PATH, or LOCH_GO")
    cmd = [go, "build", *flags, "-trimpath", "-ldflags=-s -w",
           *shlex.split(os.environ.get("LOCH_GOFLAGS", "")), "-o", str(dest / name), f"./{package}"]  # fmt: skip
    print("loch:", " ".join(cmd))
    subprocess.run(cmd, cwd=REPO, check=True, env=dict(os.environ, CGO_ENABLED="1"))


def build_library(dest: Path) -> None:
    """Writes libloch.so and the loch CLI to dest (a directory)."""
    go_build(dest, LIB, "LOCH_LIBRARY", "capi", "-buildmode=c-shared")
    header = dest / "libloch.h"
    if header.exists():
        header.unlink()
    go_build(dest, CLI, "LOCH_CLI", "cmd/loch")


def build_converter(dest: Path) -> bool:
    """Compiles loch/_convert.c into dest/libloch_py.so against Python's
    limited API of 3.11 (so it serves every later version too) and no
    libpython; reports whether it did (not before 3.11, nor without a C
    compiler or Python's headers: batches are then converted in Python)."""
    include = Path(sysconfig.get_paths()["include"])
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if sys.version_info < (3, 11) or not cc or not (include / "Python.h").exists():
        print(f"loch: not building {CONVERT} (needs Python >= 3.11, its headers and a C compiler): "
              "batches are converted in Python")  # fmt: skip
        return False
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [*shlex.split(cc), "-O2", "-shared", "-fPIC", "-I", str(include), "-I", str(REPO / "capi"),
           "-o", str(dest / CONVERT), str(HERE / "loch" / "_convert.c")]  # fmt: skip
    print("loch:", " ".join(cmd))
    subprocess.run(cmd, check=True)
    return True


class BuildPy(build_py):
    """build_py that also builds the Go library into the package."""

    def run(self) -> None:
        super().run()
        build_library(Path(self.build_lib) / "loch" / "_lib")
        build_converter(Path(self.build_lib) / "loch" / "_lib")
        if self.editable_mode:
            build_library(HERE / "loch" / "_lib")
            build_converter(HERE / "loch" / "_lib")

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        lib = Path(self.build_lib) / "loch" / "_lib"
        converter = [str(lib / CONVERT)] if (lib / CONVERT).exists() else []  # built where it can be
        return [*super().get_outputs(include_bytecode), str(lib / LIB), str(lib / CLI), *converter]


class BinaryDistribution(Distribution):
    """The wheel holds a native library: make it platform-specific."""

    def has_ext_modules(self) -> bool:
        return True


try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # older setuptools
    from wheel.bdist_wheel import bdist_wheel  # type: ignore[no-redef]


class BdistWheel(bdist_wheel):
    """Tags the wheel py3-none-<platform>: the library does not use the
    Python C API, and the batch conversion in C (libloch_py.so) only the
    limited API of 3.11, without linking libpython, so one wheel serves
    every Python 3 version (before 3.11 the conversion is Python's)."""

    def get_tag(self) -> tuple[str, str, str]:
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(cmdclass={"build_py": BuildPy, "bdist_wheel": BdistWheel}, distclass=BinaryDistribution)
