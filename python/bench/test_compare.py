"""Tests of compare.py: its exact expectation, and a --quick run end to end
(about 10 s; run with ``python -m pytest python/bench``, after ``make build
venv``)."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

from compare import batch_sizes, permutation_classes

HERE = Path(__file__).resolve().parent
LOCH = HERE.parents[1] / "bin" / "loch"


def test_batch_sizes() -> None:
    assert batch_sizes(10, 4) == [4, 4, 2]
    assert batch_sizes(8, 4) == [4, 4]


def test_permutation_classes_is_exact() -> None:
    """Against every arrangement of a small multiset of labels."""
    labels = [0, 0, 0, 1, 1, 2, 3]
    batch = 3
    arrangements = set(itertools.permutations(labels))
    total = 0.0
    for a in arrangements:
        sizes = batch_sizes(len(a), batch)
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        total += sum(len(set(a[s : s + b])) for s, b in zip(starts, sizes)) / len(sizes)
    assert permutation_classes([3, 2, 1, 1], batch) == pytest.approx(total / len(arrangements), rel=1e-12)


@pytest.mark.slow
@pytest.mark.skipif(not LOCH.exists(), reason="needs bin/loch (make build)")
def test_quick_run(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(HERE / "compare.py"), "--quick", "--loch", str(LOCH), "--dir",
                          str(tmp_path), "--json", str(tmp_path / "out.json")],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "| local | none | block |" in out.stdout
    assert "throughput full / block, none" in out.stdout
    assert "not measured" not in out.stdout
    report = subprocess.run([sys.executable, str(HERE / "compare.py"), "--report", str(tmp_path / "out.json")],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert report.returncode == 0, report.stderr
    assert "| local | none | block |" in report.stdout
