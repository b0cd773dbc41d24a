"""The wheel `make wheel` builds installs into a fresh venv (no system
site-packages) on a PATH without Go, and works there: the `loch` CLI is on
PATH, and a smoke test creates, extends, commits, opens and iterates a
dataset (with torch when LOCH_WHEEL_TORCH=1: installing it takes minutes).

The wheel is $LOCH_WHEEL, else the newest dist/loch-*.whl of the checkout;
without one the test is skipped. pip reuses its cache for numpy (and torch)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

import loch

REPO = Path(__file__).resolve().parents[2]

SMOKE = """
    import sys
    import numpy as np
    import loch

    url = sys.argv[1]
    ds = loch.create(url, schema={"image": loch.Image("jpeg"), "label": loch.ClassLabel(["cat", "dog"])})
    ds.extend({"image": np.zeros((10, 16, 16, 3), np.uint8), "label": [0, 1] * 5})
    ds.commit("ten")
    ds = loch.open(url)
    assert len(ds) == 10
    seen = [int(x) for b in ds.numpy(batch_size=4, columns=["label"]) for x in b["label"]]
    assert seen == [0, 1] * 5, seen
    if "--torch" in sys.argv:
        batches = list(ds.pytorch(batch_size=5, columns=["image", "label"], transform="decode"))
        assert [tuple(b["image"].shape) for b in batches] == [(5, 16, 16, 3)] * 2
    print(loch.__version__, loch.__file__)
"""


def wheel() -> Path:
    if os.environ.get("LOCH_WHEEL"):
        return Path(os.environ["LOCH_WHEEL"])
    wheels = sorted((REPO / "dist").glob("loch-*.whl"), key=lambda p: p.stat().st_mtime)
    if not wheels:
        pytest.skip("no wheel: run `make wheel` (or set LOCH_WHEEL)")
    return wheels[-1]


def test_wheel_is_named_and_filled_as_promised() -> None:
    whl = wheel()
    name, version, py, abi, plat = whl.name.removesuffix(".whl").split("-")
    assert (name, version, py, abi) == ("loch", loch.__version__, "py3", "none")
    assert plat.startswith("manylinux_") and plat.endswith("_x86_64"), plat
    names = zipfile.ZipFile(whl).namelist()
    assert "loch/_lib/libloch.so" in names and "loch/_lib/loch" in names and "loch/VERSION" in names
    info = zipfile.ZipFile(whl).getinfo("loch/_lib/loch")
    assert (info.external_attr >> 16) & 0o111, "the CLI is not executable in the wheel"
    entry_points = zipfile.ZipFile(whl).read(f"loch-{version}.dist-info/entry_points.txt").decode()
    assert "loch = loch._cli:main" in entry_points


@pytest.mark.slow
def test_wheel_installs_and_runs_in_a_fresh_venv(tmp_path: Path) -> None:
    whl = wheel()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    # A PATH without Go (nor this venv's Python): only the new venv and the system's bin directories.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "LOCH_", "VIRTUAL_ENV"))}
    env["PATH"] = f"{venv / 'bin'}:/usr/bin:/bin"
    pins = (REPO / "python" / "requirements-test.txt").read_text().split()
    extras = [p for p in pins if p.startswith("torch==")] if os.environ.get("LOCH_WHEEL_TORCH") == "1" else []
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(whl), *extras], check=True, env=env, timeout=1800)
    go = subprocess.run(["sh", "-c", "command -v go"], env=env, capture_output=True, text=True)
    assert go.stdout == "", "Go is on the test's PATH"

    out = subprocess.run(["loch", "version", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["version"] == loch.__version__

    script = tmp_path / "smoke.py"
    script.write_text(textwrap.dedent(SMOKE))
    url = str(tmp_path / "ds")
    run = subprocess.run([str(py), str(script), url, *(["--torch"] if extras else [])], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    version, where = run.stdout.split()
    assert version == loch.__version__ and where.startswith(str(venv)), run.stdout

    info = subprocess.run(["loch", "info", url], env=env, capture_output=True, text=True, timeout=60)
    assert info.returncode == 0, info.stderr
    assert "10" in info.stdout
