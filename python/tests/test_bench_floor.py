"""The C consumer of the stream that bench_loaders.py measures
(python/bench/stream_floor.c): it builds against this library and reads
every row of every epoch, so that the benchmark's floor keeps up with the
C ABI it speaks."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import bench_loaders  # noqa: E402


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The benchmark's two datasets (lz4 pixels, and JPEG decoded by the
    loader), small: 300 images of 8x8 in 3 classes."""
    d = tmp_path_factory.mktemp("floor")
    return bench_loaders.prepare_sdk(d, argparse.Namespace(images=300, size=8, classes=3))


@pytest.fixture(scope="module")
def floor(tmp_path_factory: pytest.TempPathFactory) -> str:
    """stream_floor compiled as the benchmark compiles it (a C compiler is
    there wherever the library was built: cgo needs one)."""
    prog = bench_loaders.build_floor(tmp_path_factory.mktemp("floor-bin"))
    assert prog is not None, "stream_floor.c did not compile (see the output above)"
    return prog


@pytest.mark.parametrize(("name", "transform"), [("loch-lz4", None), ("loch-jpeg", "decode")])
def test_floor_reads_every_row(floor: str, datasets: dict[str, str], name: str, transform: str | None) -> None:
    cmd = [floor, datasets[name], "64", "3"] + ([transform] if transform else [])
    got = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert out["samples"] == 3 * 300  # three epochs after the warm-up, no row lost or repeated
    assert out["samples_per_s"] > 0 and out["consumer_us"] > 0


def test_floor_names_a_bad_dataset(floor: str, tmp_path: Path) -> None:
    got = subprocess.run([floor, str(tmp_path / "missing"), "64", "1"], capture_output=True, text=True, timeout=60)
    assert got.returncode == 1
    assert "stream_floor: open:" in got.stderr and "missing" in got.stderr
