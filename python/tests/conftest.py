"""Shared fixtures: small datasets on local disk and a runner for scripts
that must run in their own process (fork, spawn, torchrun, signals)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import loch

ROWS = 1001  # not a multiple of 2, 3 or 4: sharding pads or drops


def make_rows_dataset(path: Path, rows: int = ROWS) -> loch.Dataset:
    """A dataset of `rows` rows whose columns encode the row number, in
    small chunks so that shuffles have many blocks."""
    ds = loch.create(str(path), schema={
        "x": loch.Tensor("float32", shape=(3,), chunk_bytes=1024),
        "y": loch.ClassLabel(),
        "s": loch.Text(),
    })  # fmt: skip
    i = np.arange(rows)
    ds.extend({"x": np.stack([i, 2 * i, 3 * i], axis=1).astype(np.float32), "y": i, "s": [f"row {k}" for k in i]})
    ds.commit(f"{rows} rows")
    return ds


@pytest.fixture(scope="session")
def rows_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The path of a committed dataset of ROWS rows (shared; do not write)."""
    path = tmp_path_factory.mktemp("rows") / "ds"
    make_rows_dataset(path).close()
    return path


@pytest.fixture
def rows_ds(rows_path: Path) -> loch.Dataset:
    ds = loch.open(str(rows_path))
    yield ds
    ds.close()


def run_script(tmp_path: Path, code: str, *args: str, timeout: float = 120, check: bool = True,
               launcher: list[str] | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """Runs code as a script in a new Python process (with `launcher`, e.g.
    torchrun, in front), failing the test if it runs longer than timeout
    seconds or, with check, exits nonzero."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code))
    cmd = [*(launcher or [sys.executable]), str(script), *args]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=tmp_path)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(cmd)} ran past {timeout} s (a hang?)\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
    if check and proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc
