"""Writers that recover: a commit rebases onto other writers' commits, a
conflict names the rows and leaves the handle usable (refresh, then
discard_conflicts or discard), through the C ABI's loch_dataset_discard and
loch_dataset_discard_conflicts."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

import loch


def make(path: Path, n: int = 10) -> str:
    """A dataset whose column "n" holds 0..n-1 (row ids 0..n-1)."""
    ds = loch.create(str(path), schema={"n": loch.Tensor("int64", shape=())})
    ds.extend({"n": np.arange(n)})
    ds.commit(f"{n} rows")
    ds.close()
    return str(path)


def by_id(url: str) -> dict[int, int]:
    """Row id to the value of "n" in the newest version."""
    with loch.open(url) as ds:
        return dict(zip(ds.row_ids().tolist(), ds["n"][:].tolist(), strict=True))


def test_commit_rebases_disjoint_rows(tmp_path: Path) -> None:
    url = make(tmp_path / "ds")
    mine, theirs = loch.open(url), loch.open(url)
    mine.update(1, {"n": 100})
    mine.delete([2])
    theirs.update(3, {"n": 300})
    theirs.delete([4])
    theirs.append({"n": 10})
    theirs.commit("theirs")
    mine.commit("mine")  # rebased: no conflict
    got = by_id(url)
    assert got[1] == 100 and got[3] == 300 and 2 not in got and 4 not in got and got[10] == 10
    mine.close()
    theirs.close()


def test_conflict_then_discard_conflicts(tmp_path: Path) -> None:
    url = make(tmp_path / "ds")
    mine, theirs = loch.open(url), loch.open(url)
    mine.update(1, {"n": 100})
    mine.update(3, {"n": 300})
    mine.delete([5])
    theirs.update(1, {"n": -1})
    theirs.delete([5])
    theirs.commit("theirs")

    with pytest.raises(loch.Conflict, match=r"2 staged row\(s\).*row ids 1, 5;") as info:
        mine.commit("mine")
    assert info.value.row_ids == [1, 5] and info.value.conflicts == []
    again = pickle.loads(pickle.dumps(info.value))
    assert again.row_ids == [1, 5] and str(again) == str(info.value)
    mine.refresh()
    assert len(mine) == 9, "the handle reads the new head"
    with pytest.raises(loch.Conflict, match="row ids 1, 5;"):
        mine.commit("mine")  # the conflicts stay staged
    assert mine.discard_conflicts() == [1, 5]
    assert mine.discard_conflicts() == []
    mine.append({"n": 11})
    mine.commit("the rest")
    got = by_id(url)
    assert got[1] == -1 and got[3] == 300 and 5 not in got and 11 in got.values()
    mine.close()
    theirs.close()


def test_conflict_then_refresh_discard_and_append(tmp_path: Path) -> None:
    url = make(tmp_path / "ds")
    mine, theirs = loch.open(url), loch.open(url)
    mine.delete([7])
    theirs.delete([7])
    theirs.commit("theirs")
    with pytest.raises(loch.Conflict, match="row ids 7;"):
        mine.commit("mine")
    mine.refresh()
    mine.discard()
    mine.append({"n": 12})
    mine.commit("a pure append after a conflict")
    assert sorted(by_id(url).values()) == [0, 1, 2, 3, 4, 5, 6, 8, 9, 12]
    mine.close()
    theirs.close()
