"""The package version, loch.__version__ and `loch version` agree: all
come from the repository's version/VERSION (the Go package version)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import loch

PACKAGE = Path(loch.__file__).parent
REPO = PACKAGE.parent.parent  # in a checkout: python/loch/../..
VERSION_FILE = REPO / "version" / "VERSION"


def test_dunder_version_is_the_version_file() -> None:
    assert loch.__version__ == (PACKAGE / "VERSION").read_text().strip()
    if VERSION_FILE.exists():  # a checkout: the package's file is the Go package's
        assert (PACKAGE / "VERSION").samefile(VERSION_FILE)
        assert loch.__version__ == VERSION_FILE.read_text().strip()


def test_package_metadata_reads_the_same_file() -> None:
    pyproject = PACKAGE.parent / "pyproject.toml"
    if sys.version_info >= (3, 11) and pyproject.exists():  # a checkout
        import tomllib

        config = tomllib.loads(pyproject.read_text())
        assert "version" in config["project"]["dynamic"]
        assert config["tool"]["setuptools"]["dynamic"]["version"] == {"file": "loch/VERSION"}
        assert "VERSION" in config["tool"]["setuptools"]["package-data"]["loch"]
    try:
        dist = importlib.metadata.distribution("loch")
    except importlib.metadata.PackageNotFoundError:
        return
    installed = Path(str(dist.locate_file("loch/__init__.py")))
    if installed.exists() and installed.samefile(loch.__file__):  # this loch is the installed one
        assert dist.version == loch.__version__


def loch_cli(tmp_path: Path) -> str:
    """A loch CLI: $LOCH_CLI, `loch` on PATH next to this Python (an
    installed wheel), or one built from the checkout with Go."""
    if os.environ.get("LOCH_CLI"):
        return os.environ["LOCH_CLI"]
    beside = Path(sys.executable).with_name("loch")
    if beside.exists():
        return str(beside)
    go = shutil.which("go")
    if go is None or not (REPO / "go.mod").exists():
        pytest.skip("no loch CLI: set LOCH_CLI, install the wheel, or have Go and the checkout")
    out = tmp_path / "loch"
    subprocess.run([go, "build", "-o", str(out), "./cmd/loch"], cwd=REPO, check=True, timeout=600)
    return str(out)


@pytest.mark.slow
def test_cli_version_agrees(tmp_path: Path) -> None:
    cli = loch_cli(tmp_path)
    out = subprocess.run([cli, "version", "--json"], capture_output=True, text=True, check=True, timeout=60)
    assert json.loads(out.stdout)["version"] == loch.__version__
    short = subprocess.run([cli, "--version"], capture_output=True, text=True, check=True, timeout=60)
    assert short.stdout == f"loch {loch.__version__}\n"
