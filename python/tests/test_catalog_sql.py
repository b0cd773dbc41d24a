"""SQL over a catalog from Python: Catalog.query and the loader builder
Catalog.dataloader (docs/sql.md), over tables made with loch sql."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import loch
from conftest import catalog_ddp_rows
from loch.query import cli


def sql(root: Path, statement: str) -> str:
    return subprocess.run([cli(), "sql", str(root), statement], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    root = tmp_path / "lake"
    sql(root, "CREATE TABLE frames (id BIGINT, x FLOAT[2], label CLASS_LABEL('cat', 'dog'))")
    sql(root, "INSERT INTO frames SELECT i, [i, -i], CASE WHEN i % 4 = 0 THEN 'dog' ELSE 'cat' END FROM range(100) r(i)")
    sql(root, "CREATE TABLE other (id BIGINT)")
    return root


def test_catalog_query(lake: Path) -> None:
    cat = loch.connect(str(lake), create=False)
    sel = cat.query("SELECT id, x FROM frames WHERE label = 'dog' ORDER BY id DESC")
    assert sel.table == "frames" and sel.columns == ["id", "x"]
    assert len(sel) == 25
    assert int(sel[0]["id"]) == 96 and int(sel[-1]["id"]) == 0
    assert sel.version == cat.open_table("frames").version
    with pytest.raises(loch.InvalidArgument, match="a selection is of one table"):
        cat.query("SELECT * FROM frames JOIN other USING (id)")
    sel.save("dogs")  # into the table (test_catalog_joined.py reads one back)
    assert cat.open_table("frames").selection("dogs").row_ids.tolist() == sel.row_ids.tolist()


def test_dataloader_builder(lake: Path) -> None:
    cat = loch.connect(str(lake), create=False)
    b = cat.dataloader("SELECT id, x FROM frames WHERE label = 'cat' ORDER BY id").batch_size(8)
    ids = np.concatenate([batch["id"] for batch in b.to_numpy()])
    assert ids.tolist() == [i for i in range(100) if i % 4 != 0], "no shuffle: the query's order"

    shuffled = cat.dataloader("SELECT id, x FROM frames WHERE label = 'cat'").batch_size(8).shuffle(True).seed(3)
    torch = pytest.importorskip("torch")
    got = []
    for batch in shuffled.to_torch():
        assert isinstance(batch["x"], torch.Tensor) and batch["x"].shape[1:] == (2,)
        assert torch.equal(batch["x"][:, 0].long(), batch["id"].long())
        got += batch["id"].tolist()
    assert sorted(got) == [i for i in range(100) if i % 4 != 0]
    assert got != sorted(got), "shuffled"
    with pytest.raises(loch.InvalidArgument):
        cat.dataloader("SELECT id FROM frames").batch_size(0)


def test_catalog_sql(tmp_path: Path) -> None:
    cat = loch.connect(str(tmp_path / "lake"))
    assert cat.sql("CREATE TABLE t (id BIGINT, e EMBEDDING(2))")["statement"] == "CREATE TABLE"
    r = cat.sql("INSERT INTO t VALUES (1, [0.5, 1]), (2, [2, 3])", message="two")
    assert r["statement"] == "INSERT" and r["rows"] == 2
    ds = cat.open_table("t")
    assert ds.version == r["version"] and ds.log()[0].message == "two"
    assert cat.sql("UPDATE t SET e = [9, 9] WHERE id = 2")["rows"] == 1
    q = cat.sql("SELECT id, e FROM t ORDER BY id")
    assert q["statement"] == "QUERY" and q["result"] == [{"id": 1, "e": [0.5, 1.0]}, {"id": 2, "e": [9.0, 9.0]}]
    with pytest.raises(loch.InvalidArgument, match='row 1, column "e"'):
        cat.sql("INSERT INTO t VALUES (3, [1, 2, 3])")
    with pytest.raises(loch.NotFound):
        cat.sql("DROP TABLE nope")


def test_product_workflow(tmp_path: Path) -> None:
    """The workflow of the product description, as written: a table made
    and filled with SQL, then cat.dataloader(...).batch_size(64).shuffle(True).to_torch()."""
    torch = pytest.importorskip("torch")
    cat = loch.connect(str(tmp_path / "lake"))
    cat.sql("CREATE TABLE training_samples (id BIGINT, embedding EMBEDDING(4), image IMAGE, label INT, meta JSON)")
    cat.sql(
        "INSERT INTO training_samples SELECT i, [i, i, i, i], "
        "[[[i % 256, 0, 0], [0, i % 256, 0]], [[0, 0, i % 256], [1, 2, 3]]], i % 5, "
        "json_object('quality', CASE WHEN i % 2 = 0 THEN 'high' ELSE 'low' END) FROM range(300) r(i)",
        message="300 samples",
    )
    want = sorted(i for i in range(300) if i % 2 == 0 and i % 5 in (0, 1, 2))
    loader = (
        cat.dataloader(
            "SELECT embedding, image, label FROM training_samples WHERE meta->>'quality' = 'high' AND label IN (0, 1, 2) ORDER BY RANDOM()"
        )
        .batch_size(64)
        .shuffle(True)
        .to_torch()
    )
    seen = []
    for batch in loader:
        assert set(batch) >= {"embedding", "image", "label"}
        assert batch["image"].shape[1:] == (2, 2, 3) and batch["image"].dtype == torch.uint8
        assert batch["embedding"].shape[1:] == (4,)
        ids = batch["embedding"][:, 0].long()
        assert torch.equal(batch["image"][:, 0, 0, 0].long(), ids % 256)
        assert torch.equal(batch["label"].long(), ids % 5)
        seen += ids.tolist()
    assert sorted(seen) == want, "every selected row once"


def test_join_selects_base_rows(lake: Path) -> None:
    """A join's result trains as a selection of the table whose row id it
    carries; the other table filters the rows."""
    cat = loch.connect(str(lake), create=False)
    cat.sql("INSERT INTO other SELECT i FROM range(0, 100, 10) r(i)")
    b = cat.dataloader("SELECT f._rowid, f.id, f.x FROM frames f JOIN other o USING (id) ORDER BY f.id", table="frames").batch_size(4)
    ids = np.concatenate([batch["id"] for batch in b.to_numpy()])
    assert ids.tolist() == list(range(0, 100, 10))
    with pytest.raises(loch.InvalidArgument, match="a selection is of one table"):
        cat.query("SELECT f._rowid FROM frames f JOIN other o USING (id)")


@pytest.mark.slow
def test_torchrun_over_join(tmp_path: Path, lake: Path) -> None:
    """A join's result trains under torchrun --nproc_per_node=2: together
    the ranks read each selected row, only those, once (no padding: the
    count is even)."""
    pytest.importorskip("torch")
    cat = loch.connect(str(lake), create=False)
    cat.sql("INSERT INTO other SELECT i FROM range(0, 100, 3) r(i)")  # 34 ids
    q = "SELECT f._rowid, f.id, f.x FROM frames f JOIN other o USING (id) ORDER BY random()"
    shards = catalog_ddp_rows(tmp_path, lake, q, "id")
    assert len(shards) == 2 and len(shards[0]) == len(shards[1]) == 17
    seen = Counter(r[0] for s in shards for r in s)
    assert sorted(seen) == list(range(0, 100, 3)) and set(seen.values()) == {1}
