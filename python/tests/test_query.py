"""Queries and selections: ds.query, Selection's loaders, saved
selections, errors, and DDP under torchrun over a query's result."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import loch
from conftest import ROWS, run_torchrun


def test_query_selection(rows_ds: loch.Dataset) -> None:
    sel = rows_ds.query("SELECT x, y FROM ds WHERE y % 3 <> 0 ORDER BY random()", seed=5)
    assert isinstance(sel, loch.Selection)
    assert sel.version == rows_ds.version and sel.seed == 5 and sel.columns == ["x", "y"]
    want = [i for i in range(ROWS) if i % 3 != 0]  # the row ids of this dataset are its row numbers
    assert len(sel) == len(want) and sorted(sel.row_ids.tolist()) == want
    again = rows_ds.query(sel.sql, seed=5)
    assert again.row_ids.tolist() == sel.row_ids.tolist(), "a seeded ORDER BY random() is reproducible"
    assert rows_ds.query(sel.sql, seed=6).row_ids.tolist() != sel.row_ids.tolist()

    first = sel[0]
    assert set(first) == {"x", "y"} and int(first["y"]) == int(sel.row_ids[0])
    assert len(sel[10:20]) == 10 and sel[10:20].row_ids.tolist() == sel.row_ids[10:20].tolist()
    with pytest.raises(IndexError):
        sel[len(sel)]

    # The loader over a selection: the query's order without a shuffle,
    # the selection's columns by default.
    got = [b["index"] for b in sel.numpy(batch_size=64)]
    assert np.concatenate(got).tolist() == sel.row_ids.tolist()
    batch = next(iter(sel.numpy(batch_size=8)))
    assert set(batch) == {"x", "y", "index"}
    shuffled = np.concatenate([b["index"] for b in sel.numpy(batch_size=64, shuffle=True, seed=1)])
    assert sorted(shuffled.tolist()) == want and shuffled.tolist() != sel.row_ids.tolist()

    # The saved state records the query.
    loader = sel.numpy(batch_size=8, shuffle=True)
    it = iter(loader)
    next(it)
    assert sel.sql in json.dumps(loader.state_dict())


def test_saved_selections(tmp_path: Path) -> None:
    from conftest import make_rows_dataset

    ds = make_rows_dataset(tmp_path / "ds", rows=50)
    sel = ds.query("SELECT s WHERE y < 10 ORDER BY y DESC")
    sel.save("top")
    assert sel.name == "top"
    [info] = ds.selections()
    assert info["name"] == "top" and info["rows"] == 10 and info["version"] == ds.version
    back = ds.selection("top")
    assert back.row_ids.tolist() == list(range(9, -1, -1)) and back.columns == ["s"]
    ds.extend({"x": np.zeros((5, 3), np.float32), "y": np.arange(5), "s": ["new"] * 5})
    ds.commit("more")
    back = ds.selection("top")  # at the version it ran on, not the branch's
    assert back.version == sel.version and back.dataset.version == sel.version
    assert [r["s"] for r in back.numpy(batch_size=4)][0][0] == "row 9"
    with pytest.raises(loch.AlreadyExists):
        sel.save("top")
    with pytest.raises(loch.InvalidArgument, match="not a slice"):
        sel[2:5].save("part")
    assert [s["name"] for s in ds.selections()] == ["top"], "a refused save leaves nothing"
    # Positions through the library: the rows' places in the version.
    assert back.positions().tolist() == list(range(9, -1, -1))
    with pytest.raises(loch.NotFound):
        ds.positions([10**9])
    ds.delete_selection("top")
    assert ds.selections() == []
    with pytest.raises(loch.NotFound, match='no saved selection "top"'):
        ds.selection("top")
    ds.close()


def test_query_errors(rows_ds: loch.Dataset) -> None:
    with pytest.raises(loch.InvalidArgument, match="syntax error at or near .SELEC. at position 0"):
        rows_ds.query("SELEC x FROM ds")
    with pytest.raises(loch.InvalidArgument, match='Referenced column "nope" not found'):
        rows_ds.query("SELECT nope FROM ds")
    with pytest.raises(loch.InvalidArgument, match="GROUP BY"):
        rows_ds.query("SELECT y, count(*) FROM ds GROUP BY y")
    with pytest.raises(loch.InvalidArgument, match="rows="):
        rows_ds.query("SELECT y FROM ds").numpy(rows=[1])
    # In this process, an in-memory dataset can be queried too (the loch
    # command, the fallback, cannot reach it).
    mem = loch.create("mem://query-errors", schema={"y": loch.ClassLabel()})
    assert len(mem.query("SELECT y FROM ds")) == 0 and mem.sql("SELECT count(*) AS n FROM ds").to_pylist() == [{"n": 0}]


def test_query_of_groups_points_to_sql(rows_ds: loch.Dataset) -> None:
    """ds.query with an aggregate says that a selection is rows and where
    the result is had (it failed with DuckDB's `column "_rowid" must
    appear in the GROUP BY clause`); ds.sql returns it as a table."""
    with pytest.raises(loch.InvalidArgument, match=r"a selection is rows of the dataset, and the aggregate count\(\*\) .*ds\.sql"):
        rows_ds.query("SELECT count(*) FROM ds")
    with pytest.raises(loch.InvalidArgument, match="a selection is rows of the dataset, and GROUP BY"):
        rows_ds.query("SELECT y % 3 AS r, count(*) FROM ds GROUP BY r")
    got = rows_ds.sql("SELECT y % 3 AS r, count(*) AS n FROM ds GROUP BY r ORDER BY r").to_pylist()
    want = Counter(int(y) % 3 for y in rows_ds["y"][:])
    assert got == [{"r": r, "n": want[r]} for r in sorted(want)]
    assert rows_ds.sql("SELECT count(*) AS n FROM ds").to_pylist() == [{"n": ROWS}]


DDP = """
    import json, sys
    import torch.distributed as dist
    import loch

    dist.init_process_group("gloo")
    ds = loch.open(sys.argv[1])
    sel = ds.query("SELECT x, y FROM ds WHERE y % 2 = 1 ORDER BY random()", seed=11)
    ids = []
    for batch in sel.pytorch(batch_size=16, shuffle=True, seed=3):
        ids += batch["index"].tolist()
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, ids)
    if dist.get_rank() == 0:
        print(json.dumps({"shards": out, "rows": sel.row_ids.tolist()}))
    dist.destroy_process_group()
"""


@pytest.mark.slow
def test_torchrun_over_query(tmp_path: Path, rows_path: Path) -> None:
    out = run_torchrun(tmp_path, DDP, str(rows_path), nproc=3)
    rows = out["rows"]
    assert len(rows) == ROWS // 2
    shards = out["shards"]
    assert len({len(s) for s in shards}) == 1, "every rank has the same number of rows"
    seen = Counter(i for s in shards for i in s)
    assert set(seen) == set(rows), "together the ranks cover the selection, and only it"
    assert sum(seen.values()) - len(rows) == -len(rows) % 3, "only the padding repeats rows"


def test_to_arrow(rows_ds: loch.Dataset) -> None:
    sel = rows_ds.query("SELECT y, s FROM ds WHERE y < 3 ORDER BY y")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        with pytest.raises(loch.Error, match="needs pyarrow"):
            sel.to_arrow()
        return
    table = sel.to_arrow()
    assert table.column("y").to_pylist() == [0, 1, 2]
    assert table.column("s").to_pylist() == ["row 0", "row 1", "row 2"]
    frame = sel.to_pandas()
    assert list(frame["y"]) == [0, 1, 2] and list(frame["s"]) == ["row 0", "row 1", "row 2"]
