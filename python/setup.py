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
    LOCH_DUCKDB_LIBRARY  a prebuilt libduckdb.so (of the DuckDB version
                  go.mod pins) to package instead of linking one
    CXX           the C++ compiler that links libduckdb.so (default: c++)

libloch.so runs SQL in-process (loch.query) with DuckDB linked as a
shared library of its own, libduckdb.so beside it: linked here from the
static libraries of the duckdb-go-bindings module that go.mod pins (no
download beyond Go's module cache). DuckDB's thread-local storage does
not fit the static TLS block that a Go library takes when it is
dlopen'ed; a library it needs gets dynamic TLS. Where libduckdb.so
cannot be made (a platform other than linux-amd64/arm64, no C++ compiler),
libloch.so is built without DuckDB and the package runs SQL in the loch
command, as before.
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
from typing import Mapping, Sequence

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
LIB = "libloch.so"
CONVERT = "libloch_py.so"


CLI = "loch"
DUCKDB = "libduckdb.so"


def go_build(dest: Path, name: str, prebuilt_env: str, package: str, *flags: str, tags: Sequence[str] = (),
             env: Mapping[str, str] | None = None) -> None:
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
           *with_tags(shlex.split(os.environ.get("LOCH_GOFLAGS", "")), tags), "-o", str(dest / name), f"./{package}"]  # fmt: skip
    print("loch:", " ".join(cmd))
    subprocess.run(cmd, cwd=REPO, check=True, env=dict(os.environ, CGO_ENABLED="1", **(env or {})))


def with_tags(flags: list[str], tags: Sequence[str]) -> list[str]:
    """flags with tags added to their -tags (go build reads only the last
    -tags flag, so they are merged into one)."""
    if not tags:
        return flags
    have: list[str] = []
    out = []
    for f in flags:
        if f.startswith("-tags=") or f.startswith("--tags="):
            have += [t for t in f.split("=", 1)[1].split(",") if t]
        else:
            out.append(f)
    return [*out, "-tags=" + ",".join(dict.fromkeys([*have, *tags]))]


#: The DuckDB static libraries of duckdb-go-bindings that libduckdb.so
#: leaves out (the Go build does not link jemalloc either).
DUCKDB_SKIP = ("libduckdb_jemalloc.a",)


def build_duckdb(dest: Path) -> bool:
    """Writes dest/libduckdb.so: $LOCH_DUCKDB_LIBRARY, or the static
    libraries of the pinned duckdb-go-bindings linked into one shared
    library; reports whether there is one."""
    prebuilt = os.environ.get("LOCH_DUCKDB_LIBRARY")
    if prebuilt:
        shutil.copy2(prebuilt, dest / DUCKDB)
        return True
    go = os.environ.get("LOCH_GO") or shutil.which("go") or "go"
    goos, goarch = subprocess.run([go, "env", "GOOS", "GOARCH"], cwd=REPO, check=True, capture_output=True, text=True).stdout.split()
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if goos != "linux" or goarch not in ("amd64", "arm64") or not cxx:
        print(f"loch: not linking {DUCKDB} ({goos}-{goarch}, C++ compiler {cxx}): SQL runs in the loch command")
        return False
    mod = f"github.com/duckdb/duckdb-go-bindings/lib/{goos}-{goarch}"
    found = subprocess.run([go, "list", "-m", "-f", "{{.Dir}}", mod], cwd=REPO, capture_output=True, text=True)
    libdir = Path(found.stdout.strip())
    if found.returncode != 0 or not (libdir / "libduckdb_static.a").exists():
        subprocess.run([go, "mod", "download", mod], cwd=REPO, check=True)
        libdir = Path(subprocess.run([go, "list", "-m", "-f", "{{.Dir}}", mod], cwd=REPO, check=True,
                                     capture_output=True, text=True).stdout.strip())  # fmt: skip
    others = sorted(str(a) for a in libdir.glob("*.a") if a.name not in (*DUCKDB_SKIP, "libduckdb_static.a"))
    cmd = [*shlex.split(cxx), "-shared", "-o", str(dest / DUCKDB), f"-Wl,-soname,{DUCKDB}", "-Wl,-s",
           "-Wl,--whole-archive", str(libdir / "libduckdb_static.a"), "-Wl,--no-whole-archive",
           "-Wl,--start-group", *others, "-Wl,--end-group", "-lstdc++", "-lm", "-ldl"]  # fmt: skip
    print("loch:", " ".join(cmd))
    subprocess.run(cmd, check=True)
    return True


def build_library(dest: Path) -> None:
    """Writes libloch.so (with libduckdb.so where it can be made) and the
    loch CLI to dest (a directory)."""
    dest.mkdir(parents=True, exist_ok=True)
    prebuilt = os.environ.get("LOCH_LIBRARY")
    if prebuilt:
        # A prebuilt libloch.so with its libduckdb.so: $LOCH_DUCKDB_LIBRARY
        # or the one beside it (none: a library without DuckDB).
        go_build(dest, LIB, "LOCH_LIBRARY", "capi")
        beside = Path(prebuilt).with_name(DUCKDB)
        duckdb = os.environ.get("LOCH_DUCKDB_LIBRARY") or (str(beside) if beside.exists() else "")
        if duckdb:
            shutil.copy2(duckdb, dest / DUCKDB)
    elif build_duckdb(dest.resolve()):
        ldflags = " ".join([os.environ.get("CGO_LDFLAGS", ""), f"-L{dest.resolve()}", "-Wl,-rpath,$ORIGIN"]).strip()
        go_build(dest, LIB, "LOCH_LIBRARY", "capi", "-buildmode=c-shared", tags=("duckdb_arrow", "duckdb_use_lib"),
                 env={"CGO_LDFLAGS": ldflags})  # fmt: skip
    else:
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
        duckdb = [str(lib / DUCKDB)] if (lib / DUCKDB).exists() else []  # linked where it can be
        return [*super().get_outputs(include_bytecode), str(lib / LIB), str(lib / CLI), *converter, *duckdb]


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
