"""ds.merge_insert upserts rows by key columns as one commit: matched rows
are updated in place (row id and position kept), the others appended in
input order; keys given twice raise loch.InvalidArgument naming the key,
and nothing is committed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import loch

SCHEMA = {
    "id": loch.Tensor("int64", shape=()),
    "name": loch.Text(),
    "n": loch.Tensor("int32", shape=()),
}


@pytest.fixture
def ds(tmp_path: Path) -> loch.Dataset:
    d = loch.create(str(tmp_path / "ds"), schema=SCHEMA)
    d.extend({"id": np.arange(5), "name": [f"row {i}" for i in range(5)], "n": np.arange(5, dtype=np.int32)})
    d.commit("five")
    return d


def names(d: loch.Dataset) -> list[str | None]:
    return [d["name"][i] for i in range(len(d))]


def test_merge_insert_updates_in_place_and_appends(ds: loch.Dataset) -> None:
    ids_before = ds.row_ids().tolist()
    commits = len(ds.log())
    rep = ds.merge_insert(
        {"id": np.array([3, 9, 1, 7]), "name": ["three", "nine", "one", "seven"]}, on="id", message="upsert people"
    )
    assert rep == loch.UpsertReport(version=ds.version, updated=2, inserted=2)
    assert names(ds) == ["row 0", "one", "row 2", "three", "row 4", "nine", "seven"]
    assert ds.row_ids().tolist()[:5] == ids_before, "updated rows keep their row ids and positions"
    assert int(ds["n"][3]) == 3, "columns the input lacks are kept"
    assert ds["n"][5] is None or np.size(ds["n"][5]) == 0, "an inserted row's missing columns are empty"
    log = ds.log()
    assert len(log) == commits + 1, "one commit"
    assert log[0].message == "upsert people"


def test_merge_insert_forms_and_options(ds: loch.Dataset) -> None:
    # a list of row dicts; only updates
    rep = ds.merge_insert([{"id": 0, "name": "zero"}, {"id": 11, "name": "eleven"}], on=["id"], when_not_matched="nothing")
    assert (rep.updated, rep.inserted) == (1, 0)
    # a pyarrow table; only inserts
    pa = pytest.importorskip("pyarrow")
    rep = ds.merge_insert(pa.table({"id": [1, 12], "name": ["uno", "twelve"]}), on="id", when_matched="nothing")
    assert (rep.updated, rep.inserted) == (0, 1)
    assert names(ds) == ["zero", "row 1", "row 2", "row 3", "row 4", "twelve"]
    # a composite key
    rep = ds.merge_insert({"id": np.array([2, 2]), "name": ["row 2", "other"], "n": np.array([20, 21], np.int32)}, on=["id", "name"])
    assert (rep.updated, rep.inserted) == (1, 1)
    assert int(ds["n"][2]) == 20
    # nothing to do: no commit
    version = ds.version
    assert ds.merge_insert({"id": np.array([99]), "name": ["x"]}, on="id", when_not_matched="nothing").version == version


def test_merge_insert_refuses_duplicate_keys(ds: loch.Dataset) -> None:
    version, commits = ds.version, len(ds.log())
    with pytest.raises(loch.InvalidArgument, match=r"input rows 0 and 2 have the same key \(id=2\)"):
        ds.merge_insert({"id": np.array([2, 50, 2]), "name": ["a", "new", "b"]}, on="id")
    with pytest.raises(loch.InvalidArgument, match='no key column "nope"'):
        ds.merge_insert({"id": np.array([2])}, on="nope")
    with pytest.raises(loch.InvalidArgument, match="when matched \"delete\""):
        ds.merge_insert({"id": np.array([2])}, on="id", when_matched="delete")  # type: ignore[arg-type]
    assert ds.version == version and len(ds.log()) == commits and len(ds) == 5
    # staged writes must be committed or discarded first
    ds.extend({"id": np.array([70])})
    with pytest.raises(loch.InvalidArgument, match="writes are staged"):
        ds.merge_insert({"id": np.array([2])}, on="id")
