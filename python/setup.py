"""Builds loch's shared library (libloch.so, the Go core behind the C ABI in
../capi) with the machine's Go toolchain while building the package.

Environment:
    LOCH_GO       the go command (default: go on PATH)
    LOCH_LIBRARY  a prebuilt libloch.so to package instead of building one
    LOCH_CLI      a prebuilt loch command to package instead of building one
                  (the package runs SQL through it: loch.query)
    LOCH_GOFLAGS  extra flags for go build (e.g. -tags=noturbojpeg)
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
LIB = "libloch.so"


def build_library(dest: Path) -> None:
    """Writes libloch.so to dest (a directory)."""
    dest = dest.resolve()
    dest.mkdir(parents=True, exist_ok=True)
    prebuilt = os.environ.get("LOCH_LIBRARY")
    if prebuilt:
        shutil.copy2(prebuilt, dest / LIB)
        return
    if not (REPO / "go.mod").exists() or not (REPO / "capi").is_dir():
        raise SystemExit(
            f"loch: cannot build {LIB}: the Go sources (../go.mod, ../capi) are not beside {HERE}; "
            "install from a checkout of the repository or set LOCH_LIBRARY to a built library"
        )
    go = os.environ.get("LOCH_GO") or shutil.which("go")
    if not go:
        raise SystemExit("loch: building the Python package needs Go (https://go.dev/dl/) on PATH, or LOCH_GO")
    cmd = [go, "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w",
           *shlex.split(os.environ.get("LOCH_GOFLAGS", "")), "-o", str(dest / LIB), "./capi"]  # fmt: skip
    print("loch:", " ".join(cmd))
    subprocess.run(cmd, cwd=REPO, check=True, env=dict(os.environ, CGO_ENABLED="1"))
    header = dest / "libloch.h"
    if header.exists():
        header.unlink()


def build_cli(dest: Path) -> None:
    """Writes the loch command to dest (a directory): the package runs SQL
    queries through it, because DuckDB cannot live in libloch.so (its
    thread-local storage does not fit a dlopen'ed library's static TLS)."""
    dest = dest.resolve()
    dest.mkdir(parents=True, exist_ok=True)
    prebuilt = os.environ.get("LOCH_CLI")
    if prebuilt:
        shutil.copy2(prebuilt, dest / "loch")
        return
    go = os.environ.get("LOCH_GO") or shutil.which("go")
    if not go or not (REPO / "cmd" / "loch").is_dir():
        print("loch: not packaging the loch command (no Go or no ../cmd/loch); loch.query needs LOCH_CLI or loch on PATH")
        return
    cmd = [go, "build", "-trimpath", "-ldflags=-s -w", *shlex.split(os.environ.get("LOCH_GOFLAGS", "")),
           "-o", str(dest / "loch"), "./cmd/loch"]  # fmt: skip
    print("loch:", " ".join(cmd))
    subprocess.run(cmd, cwd=REPO, check=True, env=dict(os.environ, CGO_ENABLED="1"))


class BuildPy(build_py):
    """build_py that also builds the Go library into the package."""

    def run(self) -> None:
        super().run()
        build_library(Path(self.build_lib) / "loch" / "_lib")
        build_cli(Path(self.build_lib) / "loch" / "_lib")
        if self.editable_mode:
            build_library(HERE / "loch" / "_lib")
            build_cli(HERE / "loch" / "_lib")

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        lib = Path(self.build_lib) / "loch" / "_lib"
        outs = [*super().get_outputs(include_bytecode), str(lib / LIB)]
        if (lib / "loch").exists():
            outs.append(str(lib / "loch"))
        return outs


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
    Python C API, so one wheel serves every Python 3 version."""

    def get_tag(self) -> tuple[str, str, str]:
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(cmdclass={"build_py": BuildPy, "bdist_wheel": BdistWheel}, distclass=BinaryDistribution)
