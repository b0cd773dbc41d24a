"""Compaction from Python (docs/format.md §8): ds.compact() rewrites many
small fragments into few, keeping every value, row id and position; dry
runs write nothing; deleted rows are dropped; auto_compact compacts after
commits; bad options and staged writes are refused. On local disk and on
MinIO."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import loch

SCHEMA = {
    "n": loch.Tensor("int64", shape=()),
    "caption": loch.Text(),
    "vec": loch.Tensor("float32", shape=(4,)),
    "meta": loch.JSON(),
}


def _batch(start: int, count: int) -> dict[str, Any]:
    n = np.arange(start, start + count, dtype=np.int64)
    return {
        "n": n,
        "caption": [f"row {i}" for i in n],
        "vec": np.stack([np.full(4, i, np.float32) for i in n]),
        "meta": [{"i": int(i)} if i % 3 else None for i in n],
    }


def _grow(ds: loch.Dataset, commits: int, rows: int) -> None:
    for c in range(commits):
        ds.extend(_batch(len(ds), rows))
        ds.commit(f"batch {c}")


def _snapshot(ds: loch.Dataset) -> tuple[list[int], list[dict[str, Any]]]:
    return ds.row_ids().tolist(), ds.to_arrow().read_all().to_pylist()


def _compact_keeps_rows(url: str, **open_kw: Any) -> None:
    ds = loch.create(url, schema=SCHEMA, **open_kw)
    _grow(ds, 12, 5)
    before = _snapshot(ds)
    frags, head = ds.fragment_rows(), ds.version
    assert len(frags) == 12

    plan = ds.compact(dry_run=True)
    assert plan.dry_run and plan.version == head
    assert (plan.fragments_before, plan.fragments_after, plan.groups, plan.rows) == (12, 1, 1, 60)
    assert plan.bytes_before > 0 and plan.bytes_after == 0
    assert ds.version == head and ds.fragment_rows() == frags

    rep = ds.compact(message="compact from python")
    assert not rep.dry_run and rep.version != head and ds.version == rep.version
    assert (rep.fragments_before, rep.fragments_after, rep.rewritten, rep.rows, rep.dropped, rep.yielded) == (12, 1, 12, 60, 0, 0)
    assert rep.bytes_after > 0
    assert ds.fragment_rows() == [60]
    assert _snapshot(ds) == before
    assert ds.log()[0].message == "compact from python"
    reopened = loch.open(url, **open_kw)
    assert _snapshot(reopened) == before and reopened.fragment_rows() == [60]
    # the version before compaction reads as it did
    assert _snapshot(loch.open(url, version=head, **open_kw)) == before
    # nothing left to do: no commit
    again = ds.compact()
    assert again.groups == 0 and again.version == rep.version and ds.version == rep.version


def test_compact_keeps_values_ids_and_order(tmp_path: Path) -> None:
    _compact_keeps_rows(str(tmp_path / "ds"))


def test_compact_on_minio(start_minio: Any) -> None:
    server = start_minio("compactaccess", "compact-secret-1")
    server.create_bucket("compact")
    opts = {"endpoint": server.endpoint, "access_key_id": "compactaccess", "secret_access_key": "compact-secret-1",
            "region": "us-east-1"}  # fmt: skip
    _compact_keeps_rows("s3://compact/ds", storage_options=opts)


def test_compact_drops_deleted_rows(tmp_path: Path) -> None:
    ds = loch.create(str(tmp_path / "ds"), schema=SCHEMA)
    _grow(ds, 4, 10)
    ds.delete([1, 2, 3, 15, 38])
    ds.commit("delete five")
    before = _snapshot(ds)
    assert len(before[0]) == 35
    rep = ds.compact()
    assert (rep.rows, rep.dropped, rep.fragments_after) == (35, 5, 1)
    assert _snapshot(ds) == before
    assert len(ds) == 35


def test_compact_options(tmp_path: Path) -> None:
    ds = loch.create(str(tmp_path / "ds"), schema=SCHEMA)
    _grow(ds, 6, 10)
    # fragments of 10 rows against a target of 25 (small: under 12.5): pairs
    rep = ds.compact(target_rows=25)
    assert (rep.groups, rep.fragments_after) == (3, 3)
    assert ds.fragment_rows() == [20, 20, 20]
    # tiered: 3 fragments are fewer than a fanout of 4
    assert ds.compact(fanout=4).groups == 0
    # a fragment with more than max_deleted of its rows deleted is rewritten alone
    ds.delete([0])
    ds.commit("delete one")
    assert ds.compact(target_rows=25, max_deleted=0.5).groups == 0
    rep = ds.compact(target_rows=25, max_deleted=0.01)
    assert (rep.groups, rep.rewritten, rep.dropped) == (1, 1, 1)
    assert ds.fragment_rows() == [19, 20, 20]


@pytest.mark.parametrize("kw, match", [
    ({"fanout": 1}, "fanout 1: want 0"),
    ({"max_deleted": 0.0}, "max_deleted 0: want a fraction"),
    ({"max_deleted": 1.0}, "max_deleted 1: want a fraction"),
    ({"target_rows": -1}, "target_rows -1"),
])  # fmt: skip
def test_compact_refuses_bad_options(tmp_path: Path, kw: dict[str, Any], match: str) -> None:
    ds = loch.create(str(tmp_path / "ds"), schema=SCHEMA)
    with pytest.raises(loch.InvalidArgument, match=match):
        ds.compact(**kw)


def test_compact_refuses_staged_writes_and_read_only(tmp_path: Path) -> None:
    url = str(tmp_path / "ds")
    ds = loch.create(url, schema=SCHEMA)
    _grow(ds, 2, 3)
    ds.extend(_batch(6, 2))
    with pytest.raises(loch.InvalidArgument, match="writes are staged"):
        ds.compact()
    ds.commit("two more")
    assert ds.compact().fragments_after == 1
    with pytest.raises(loch.ReadOnly):
        loch.open(url, version=ds.log()[1].id).compact()


def test_auto_compact(tmp_path: Path) -> None:
    url = str(tmp_path / "ds")
    ds = loch.create(url, schema=SCHEMA, auto_compact=True)
    assert ds.last_auto_compaction() is None
    ds.close()
    ds = loch.open(url, auto_compact={"fanout": 4, "message": "auto"})
    _grow(ds, 3, 5)
    assert ds.last_auto_compaction() is None  # 3 fragments: under the fanout
    assert len(ds.fragment_rows()) == 3
    before = _snapshot(ds)
    _grow(ds, 1, 5)
    rep = ds.last_auto_compaction()
    assert rep is not None and (rep.fragments_before, rep.fragments_after, rep.rows) == (4, 1, 20)
    assert ds.version == rep.version and ds.log()[0].message == "auto"
    assert ds.fragment_rows() == [20]
    ids, rows = _snapshot(ds)
    assert ids[:15] == before[0] and rows[:15] == before[1]
    # a plain handle does not compact
    plain = loch.open(url)
    _grow(plain, 5, 1)
    assert plain.last_auto_compaction() is None and len(plain.fragment_rows()) == 6


@pytest.mark.parametrize("value, match", [
    ({"fanout": 1}, "auto_compact: fanout 1"),
    ({"dry_run": True}, "auto_compact: dry_run"),
    ({"fanot": 4}, "auto_compact"),
    ("yes", "auto_compact: want True, False or a dict"),
])  # fmt: skip
def test_auto_compact_refuses_bad_options(tmp_path: Path, value: Any, match: str) -> None:
    url = str(tmp_path / "ds")
    loch.create(url, schema=SCHEMA).close()
    with pytest.raises(loch.InvalidArgument, match=match):
        loch.open(url, auto_compact=value)


def test_catalog_optimize_and_auto_compact(tmp_path: Path) -> None:
    cat = loch.connect(str(tmp_path / "lake"))
    cat.sql("CREATE TABLE t (id BIGINT, note TEXT)")
    for i in range(3):
        cat.sql(f"INSERT INTO t VALUES ({2 * i}, 'a'), ({2 * i + 1}, 'b')")
    cat.sql("DELETE FROM t WHERE id = 2")
    before = _snapshot(cat.open_table("t"))
    out = cat.sql("OPTIMIZE t WITH (dry_run = true)")
    assert out["statement"] == "OPTIMIZE" and out["compaction"]["dry_run"] is True
    assert out["compaction"]["fragments_before"] == 3 and out["compaction"]["fragments_after"] == 1
    out = cat.sql("OPTIMIZE t", message="compact t")
    rep = loch.CompactReport.from_json(out["compaction"])
    assert (rep.fragments_after, rep.rows, rep.dropped) == (1, 5, 1)
    t = cat.open_table("t")
    assert t.version == rep.version and t.log()[0].message == "compact t"
    assert _snapshot(t) == before

    # a table handle with auto_compact compacts after its commits
    w = cat.open_table("t", auto_compact={"fanout": 2})
    w.extend({"id": np.array([10]), "note": ["c"]})
    w.commit("one more")
    # two small fragments, but of two size classes (5 rows and 1): none merged
    first = w.last_auto_compaction()
    assert first is not None and first.groups == 0 and w.fragment_rows() == [5, 1]
    w.extend({"id": np.array([11]), "note": ["d"]})
    w.commit("and another")
    # a run of 2 one-row fragments: one tier merged
    second = w.last_auto_compaction()
    assert second is not None and second.groups == 1 and w.fragment_rows() == [5, 2]
