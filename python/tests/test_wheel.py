"""The wheel `make wheel` builds (`make test` builds it first) installs
into a fresh venv (no system site-packages) on a PATH without Go, and
works there: the `loch` CLI is on PATH, and a smoke test creates, extends,
commits, opens and iterates a dataset, with torch too.

The wheel is $LOCH_WHEEL, else the newest dist/loch-*.whl of the checkout;
without one the tests fail (run `make wheel`). pip installs the wheel and
its dependency numpy (at the pinned version, from pip's cache or PyPI) into
the fresh venv. torch, which takes minutes and gigabytes to install, is
not installed again: the fresh venv sees this test's own site-packages
through a .pth file, behind its own, by way of a directory of links to
every entry of it except loch's, so that `import loch` can only find the
wheel's."""

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
    import torch
    batches = list(ds.pytorch(batch_size=5, columns=["image", "label"], transform="decode"))
    assert [tuple(b["image"].shape) for b in batches] == [(5, 16, 16, 3)] * 2
    assert all(isinstance(b["image"], torch.Tensor) for b in batches)
    print(loch.__version__, loch.__file__, sys.modules["torch"].__file__)
"""


def wheel() -> Path:
    if os.environ.get("LOCH_WHEEL"):
        return Path(os.environ["LOCH_WHEEL"])
    wheels = sorted((REPO / "dist").glob("loch-*.whl"), key=lambda p: p.stat().st_mtime)
    if not wheels:
        pytest.fail("no wheel in dist/: run `make wheel` (or set LOCH_WHEEL); `make test` builds it first")
    return wheels[-1]


def site_without_loch(tmp_path: Path) -> Path:
    """A directory of symbolic links to every entry of this interpreter's
    site-packages (torch and its dependencies) except loch's own."""
    import torch

    site = Path(torch.__file__).resolve().parents[1]
    base = tmp_path / "base-site"
    base.mkdir()
    for entry in site.iterdir():
        name = entry.name.lower()
        if name == "loch" or name.startswith(("loch-", "__editable__.loch", "__editable___loch")) or name.endswith(".pth"):
            continue
        (base / entry.name).symlink_to(entry)
    assert (base / "torch").exists() and not (base / "loch").exists()
    return base


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
    numpy = [p for p in pins if p.startswith("numpy==")]
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(whl), *numpy], check=True, env=env, timeout=900)
    site = next((venv / "lib").glob("python3*/site-packages"))
    assert not (site / "torch").exists()
    (site / "zz-torch-from-the-test-venv.pth").write_text(str(site_without_loch(tmp_path)) + "\n")
    go = subprocess.run(["sh", "-c", "command -v go"], env=env, capture_output=True, text=True)
    assert go.stdout == "", "Go is on the test's PATH"

    out = subprocess.run(["loch", "version", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["version"] == loch.__version__
    # python -m loch is the same command, for a venv whose bin is not on PATH
    out = subprocess.run([str(py), "-m", "loch", "version", "--json"], env=env, capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["version"] == loch.__version__

    script = tmp_path / "smoke.py"
    script.write_text(textwrap.dedent(SMOKE))
    url = str(tmp_path / "ds")
    run = subprocess.run([str(py), str(script), url], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    version, where, torch_at = run.stdout.split()
    assert version == loch.__version__ and where.startswith(str(venv)), run.stdout
    assert not torch_at.startswith(str(venv)), "torch is the test venv's, seen through the .pth file"

    info = subprocess.run(["loch", "info", url], env=env, capture_output=True, text=True, timeout=60)
    assert info.returncode == 0, info.stderr
    assert "10" in info.stdout

    # The wheel is built without FFmpeg (Makefile, WHEEL_GOFLAGS): a video
    # file is refused at its first probe with the libraries named, and the
    # rest works.
    clips = tmp_path / "clips" / "walk"
    clips.mkdir(parents=True)
    (clips / "a.mp4").write_bytes(bytes(range(256)) * 8)
    media = subprocess.run(["loch", "ingest", "video", str(tmp_path / "clips"), str(tmp_path / "videos")],
                           env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert media.returncode != 0
    assert "built without FFmpeg (libavformat, libavcodec" in media.stderr, media.stderr
