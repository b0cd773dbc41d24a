"""gc never races a writer, and version retention (docs/format.md §5.1,
§5.2): issue 34's reproduction through the Python API."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import loch


def test_gc_keeps_staged_rows(tmp_path: Path) -> None:
    """ds.extend(20000 rows) uploads chunks as it stages; a gc from another
    handle, with no grace at all, runs before the commit: the writer's lease
    keeps every staged chunk, and the commit is intact."""
    url = str(tmp_path / "ds")
    ds = loch.create(url, schema={"v": loch.Tensor("float32", shape=(64,), chunk_bytes=64 << 10)})
    ds.extend({"v": np.zeros((10, 64), np.float32)})
    ds.commit("first")
    rows = np.arange(20000 * 64, dtype=np.float32).reshape(20000, 64)
    ds.extend({"v": rows})

    other = loch.open(url)
    report = other.gc(grace=0)
    other.close()
    assert report.leased.objects > 0, report
    assert report.deleted.objects == 0

    ds.commit("after gc")
    assert len(ds) == 20010
    assert np.array_equal(ds["v"][10:], rows)
    fresh = loch.open(url)
    assert np.array_equal(fresh["v"][10:20010], rows)
    fresh.close()


def test_gc_keep_last(tmp_path: Path) -> None:
    url = str(tmp_path / "ds")
    ds = loch.create(url, schema={"n": loch.Tensor("int64", shape=())})
    versions = []
    for i in range(4):
        ds.extend({"n": np.arange(i * 3, i * 3 + 3)})
        versions.append(ds.commit(f"batch {i}"))
    ds.tag("first", versions[0])

    with pytest.raises(loch.InvalidArgument, match="keep_last"):
        ds.gc(keep_last=-1)
    report = ds.gc(grace=0, keep_last=2)
    # Kept history ends at versions[1] (main) and at the create commit
    # (behind the tag).
    assert report.expired == 2
    assert ds["n"][:].tolist() == list(range(12))
    assert loch.open(url, ref="first")["n"][:].tolist() == [0, 1, 2]
    assert len(loch.open(url, version=versions[2])) == 9
    with pytest.raises(loch.NotFound, match="collected by gc"):
        loch.open(url, version=versions[1])
    log = ds.log()
    assert [c.id for c in log] == [versions[3], versions[2]]
    assert log[-1].expired == (versions[1],)
