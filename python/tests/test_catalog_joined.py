"""A join's columns from the other table train: a catalog selection carries
them (Selection.joined) and every loader delivers them beside the base
table's columns, each row with its own value (docs/sql.md §8)."""

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


JOIN = "SELECT f._rowid, f.id, f.x, l.tag, l.note, l.kind, l.v FROM frames f JOIN labels l USING (id)"


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    """frames (id, x = [id, -id]) of 100 rows; labels of every third id:
    tag = 7 id + 1, note = "n<id>" (NULL when id % 9 == 0), kind (cat or
    dog: dog for even ids), v = [id / 2, 1]."""
    root = tmp_path / "lake"
    sql(root, "CREATE TABLE frames (id BIGINT, x FLOAT[2])")
    sql(root, "INSERT INTO frames SELECT i, [i, -i] FROM range(100) r(i)")
    sql(root, "CREATE TABLE labels (id BIGINT, tag BIGINT, note TEXT, kind CLASS_LABEL('cat', 'dog'), v FLOAT[2])")
    sql(root, """INSERT INTO labels SELECT i, 7 * i + 1, CASE WHEN i % 9 <> 0 THEN 'n' || i END,
                 CASE WHEN i % 2 = 0 THEN 'dog' ELSE 'cat' END, [i / 2, 1] FROM range(0, 100, 3) r(i)""")
    return root


def check_batch(batch: dict) -> list[int]:
    """Checks each row's joined values against its id; returns the ids."""
    ids = [int(i) for i in batch["id"]]
    for k, i in enumerate(ids):
        assert int(batch["tag"][k]) == 7 * i + 1
        assert batch["note"][k] == (None if i % 9 == 0 else f"n{i}")
        assert int(batch["kind"][k]) == (1 if i % 2 == 0 else 0)
        assert [float(v) for v in batch["v"][k]] == [i / 2, 1.0]
        assert [float(v) for v in batch["x"][k]] == [i, -i]
    return ids


def test_joined_selection(lake: Path) -> None:
    """The selection carries the joined values in result order; rows,
    slices, saving and loading back keep them; the numpy loader delivers
    them with shuffle."""
    cat = loch.connect(str(lake), create=False)
    sel = cat.query(JOIN + " ORDER BY f.id DESC", table="frames")
    assert sel.columns == ["id", "x"]
    assert [j["name"] for j in sel.joined] == ["tag", "note", "kind", "v"]
    kind = next(j for j in sel.joined if j["name"] == "kind")
    assert kind["dtype"] == "int64" and kind["class_names"] == ["cat", "dog"]
    values = sel.joined_values()
    ids = list(range(99, -1, -3))
    assert values["tag"].tolist() == [7 * i + 1 for i in ids]
    assert values["note"][:4] == [None, "n96", "n93", None]
    assert sel[0]["tag"] == 7 * 99 + 1 and sel[0]["id"] == 99 and sel[0]["note"] is None
    part = sel[2:5]
    assert part.joined_values()["tag"].tolist() == [7 * i + 1 for i in ids[2:5]]
    assert part.joined_values()["note"] == ["n93", None, "n87"]

    seen = []
    for batch in sel.numpy(batch_size=4, shuffle=True, seed=3):
        seen += check_batch(batch)
    assert sorted(seen) == sorted(ids)
    # Columns may name joined columns too.
    batch = next(iter(sel.numpy(batch_size=5, columns=["id", "tag"])))
    assert set(batch) == {"id", "tag", "index"}
    assert set(next(iter(sel.numpy(batch_size=5, columns="tag")))) >= {"tag", "index"}  # one name, a joined one
    assert set(next(iter(sel.numpy(batch_size=5, columns="id")))) == {"id", "index"}

    sel.save("joined")
    back = cat.open_table("frames").selection("joined")
    assert back.joined == sel.joined
    assert [i for b in back.numpy(batch_size=7) for i in check_batch(b)] == ids


def test_joined_adapters(lake: Path) -> None:
    """The builder's torch, jax and tensorflow loaders deliver the joined
    columns; a state saved mid-epoch resumes with them."""
    cat = loch.connect(str(lake), create=False)
    builder = cat.dataloader(JOIN + " ORDER BY random()", table="frames").batch_size(4).shuffle(True).seed(2)
    ids = []
    for batch in builder.to_torch():
        batch = {k: v.numpy() if hasattr(v, "numpy") else v for k, v in batch.items()}
        ids += check_batch(batch)
    assert sorted(ids) == list(range(0, 100, 3))
    pytest.importorskip("jax")
    assert sorted(i for b in builder.to_jax() for i in check_batch({k: np.asarray(v) if k != "note" else v for k, v in b.items()})) == sorted(ids)
    tf = pytest.importorskip("tensorflow")
    got = []
    for b in builder.to_tensorflow():
        b = {k: v.numpy() for k, v in b.items()}
        b["note"] = [None if s == b"" else s.decode() for s in b["note"]]
        got += check_batch(b)
    assert sorted(got) == sorted(ids)
    del tf

    loader = builder.to_numpy()
    it = iter(loader)
    first = [check_batch(next(it)) for _ in range(3)]
    state = loader.state_dict()
    again = builder.to_numpy()
    again.load_state_dict(state)
    rest = [i for b in again for i in check_batch(b)]
    assert sorted(sum(first, []) + rest) == sorted(ids)


def test_joined_refused(lake: Path) -> None:
    cat = loch.connect(str(lake), create=False)
    with pytest.raises(loch.InvalidArgument, match="is not frames's own column x"):
        cat.query("SELECT f._rowid, l.v AS x FROM frames f JOIN labels l USING (id)", table="frames")


@pytest.mark.slow
def test_torchrun_joined_column(tmp_path: Path, lake: Path) -> None:
    """A join with columns of the second table trains under torchrun
    --nproc_per_node=2: the ranks read each selected row once (34 rows, no
    padding), each with its own tag and note."""
    pytest.importorskip("torch")
    q = "SELECT f._rowid, f.id, l.tag, l.note FROM frames f JOIN labels l USING (id) ORDER BY random()"
    shards = catalog_ddp_rows(tmp_path, lake, q, "id,tag,note")
    assert len(shards) == 2 and len(shards[0]) == len(shards[1]) == 17
    seen = Counter(r[0] for s in shards for r in s)
    assert sorted(seen) == list(range(0, 100, 3)) and set(seen.values()) == {1}
    for s in shards:
        for i, tag, note in s:
            assert tag == 7 * i + 1
            assert note == (None if i % 9 == 0 else f"n{i}")


def test_catalog_selection_save_and_arrow(lake: Path) -> None:
    """A catalog selection saves into its table and converts to Arrow: the
    query again, with the table at the selection's version (a row added
    since is not in it), seeded as the selection was."""
    pa = pytest.importorskip("pyarrow")
    cat = loch.connect(str(lake), create=False)
    q = "SELECT f._rowid, f.id, l.tag FROM frames f JOIN labels l USING (id) WHERE f.id < 20 ORDER BY random()"
    sel = cat.query(q, table="frames", seed=4)
    cat.sql("INSERT INTO frames VALUES (3, [0, 0])")  # a second frame of id 3, after the selection
    table = sel.to_arrow()
    assert isinstance(table, pa.Table)
    assert table.column("_rowid").to_pylist() == [int(r) for r in sel.row_ids]
    assert table.column("tag").to_pylist() == sel.joined_values()["tag"].tolist()
    assert sel.to_pandas()["id"].tolist() == table.column("id").to_pylist()

    sel.save("small")
    back = cat.open_table("frames").selection("small")
    assert back.table == "frames" and back.version == sel.version
    assert back.to_arrow().equals(table)
    with pytest.raises(loch.InvalidArgument, match="not the result of its SQL"):
        sel[1:3].to_arrow()
    with pytest.raises(loch.AlreadyExists):
        sel.save("small")
