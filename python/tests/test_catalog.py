"""Catalogs: loch.connect, tables as ordinary datasets, names, drop and gc."""

from __future__ import annotations

import gc
import pickle
from pathlib import Path

import numpy as np
import pytest

import loch

SCHEMA = {"x": loch.Tensor("float32", shape=(2,)), "label": loch.ClassLabel(["cat", "dog"])}


def fill(ds: loch.Dataset, n: int) -> None:
    i = np.arange(n)
    ds.extend({"x": np.stack([i, -i], axis=1).astype(np.float32), "label": i % 2})
    ds.commit(f"{n} rows")


def test_round_trip(tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    with pytest.raises(loch.NotFound):
        loch.connect(root, create=False)
    cat = loch.connect(root)
    assert cat.tables() == []
    frames = cat.create_table("Frames", SCHEMA)
    fill(frames, 10)
    v1 = frames.version
    fill(frames, 2)
    labels = cat.create_table("labels", 'columns: [{name: n, dtype: int64}]')
    assert [t.name for t in cat.tables()] == ["Frames", "labels"]
    assert "FRAMES" in cat and "nope" not in cat

    t = cat.open_table("frames")
    assert isinstance(t, loch.Dataset)
    assert len(t) == 12 and t.current_branch == "main"
    assert t.url == cat.tables()[0].url
    np.testing.assert_array_equal(t["x"][3], [3, -3])
    pinned = cat.open_table("Frames", ref=v1)
    assert len(pinned) == 10 and pinned.read_only
    # The table's URL opens the same dataset without the catalog, and a
    # table pickles as any dataset (reopened by URL at its version).
    assert len(loch.open(t.url)) == 12
    again = pickle.loads(pickle.dumps(pinned))
    assert len(again) == 10 and again.version == v1

    # The ordinary loader works on a table.
    seen = []
    for batch in t.numpy(batch_size=4, shuffle=False):
        seen.extend(batch["index"].tolist())
    assert sorted(seen) == list(range(12))
    import torch
    (b,) = list(cat.open_table("frames", ref=v1).pytorch(batch_size=10, columns=["x", "label"]))
    assert isinstance(b["x"], torch.Tensor) and tuple(b["x"].shape) == (10, 2)

    with pytest.raises(loch.AlreadyExists, match='already exists \\(as "Frames"\\)'):
        cat.create_table("frames", SCHEMA)
    cat.rename_table("frames", "clips")
    assert [x.name for x in cat.tables()] == ["clips", "labels"]
    with pytest.raises(loch.NotFound):
        cat.open_table("frames")
    with pytest.raises(loch.AlreadyExists):
        cat.rename_table("clips", "LABELS")
    assert len(cat.open_table("clips")) == 12

    cat.drop_table("labels")
    with pytest.raises(loch.NotFound):
        cat.drop_table("labels")
    assert [x.name for x in cat.tables()] == ["clips"]
    for ds in (frames, labels, t, pinned, again):
        ds.close()
    cat.close()


@pytest.mark.parametrize("bad", ["", "a/b", "../up", "a..b", ".", "tab\there", " lead", "_loch_x", "n" * 256])
def test_bad_names(bad: str) -> None:
    cat = loch.connect("mem://catalog-bad-names")
    with pytest.raises(loch.InvalidArgument):
        cat.create_table(bad, SCHEMA)
    with pytest.raises(loch.InvalidArgument):
        cat.open_table(bad)
    with pytest.raises(loch.InvalidArgument):
        cat.drop_table(bad)
    assert cat.tables() == []


def test_drop_keeps_readers_until_gc(tmp_path: Path) -> None:
    cat = loch.connect(str(tmp_path / "lake"))
    fill(cat.create_table("doomed", SCHEMA), 5)
    reader = cat.open_table("doomed")
    cat.drop_table("doomed")
    rep = cat.gc(grace=3600)
    assert rep.deleted == [] and not rep.dry_run
    assert len(reader) == 5
    np.testing.assert_array_equal(reader["x"][4], [4, -4])
    rep = cat.gc(grace=0, dry_run=True)
    assert rep.dry_run and [d.dir.split("-")[0] for d in rep.deleted] == ["doomed"]
    assert rep.deleted[0].objects > 0
    rep = cat.gc(grace=0)
    assert len(rep.deleted) == 1
    assert rep.log_entries == 2  # the creation of the catalog and of the table; the drop is the newest
    assert cat.tables() == []
    with pytest.raises(loch.NotFound):
        loch.open(reader.url)


def test_tables_outlive_the_catalog(tmp_path: Path) -> None:
    cat = loch.connect(str(tmp_path / "lake"))
    ds = cat.create_table("t", SCHEMA)
    cat.close()
    assert cat.closed
    with pytest.raises(loch.Closed):
        cat.tables()
    fill(ds, 3)  # the catalog's store is released only with its last table
    assert len(ds) == 3
    ds.close()

    # Dropping every Python reference to the catalog keeps its tables usable.
    t = loch.connect(str(tmp_path / "lake")).open_table("t")
    gc.collect()
    assert len(t) == 3
    t.close()


def test_connect_twice_shares_the_catalog() -> None:
    a = loch.connect("mem://catalog-shared")
    b = loch.connect("mem://catalog-shared")
    a.create_table("one", SCHEMA).close()
    assert [t.name for t in b.tables()] == ["one"]
    assert repr(b) == "<loch.Catalog mem://catalog-shared>"


def test_connect_refuses_a_dataset_folder(tmp_path: Path) -> None:
    """connect() on a dataset's folder is refused and writes nothing there
    (it wrote _catalog/, and loch serve then showed an empty catalog
    instead of the dataset); a dataset is not made in a catalog's root."""
    ds = loch.create(str(tmp_path / "ds"), schema={"n": loch.Tensor("int64", shape=())})
    ds.extend({"n": np.arange(3)})
    ds.commit("rows")
    with pytest.raises(loch.InvalidArgument, match="a catalog cannot share a dataset's folder"):
        loch.connect(str(tmp_path / "ds"))
    assert not (tmp_path / "ds" / "_catalog").exists()
    assert len(loch.open(str(tmp_path / "ds"))) == 3
    loch.connect(str(tmp_path / "lake")).close()
    with pytest.raises(loch.InvalidArgument, match="a dataset cannot share a catalog's folder"):
        loch.create(str(tmp_path / "lake"), schema={"n": loch.Tensor("int64", shape=())})
    with pytest.raises(loch.InvalidArgument, match="inside the folder tables/"):
        loch.create(str(tmp_path / "lake" / "tables" / "t"), schema={"n": loch.Tensor("int64", shape=())})
