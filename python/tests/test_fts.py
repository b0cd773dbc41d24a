"""Full-text search from Python: ds.create_index(kind="fts") and
ds.search(text=...) against the hand-computed BM25 scores of the Go test,
phrases and boolean queries, versions, a where filter, requested columns,
SQL, and bad input."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import loch

CAPTIONS = ["Red car", "red, RED truck", "Blue car car car.", "green bicycles"]


def _bm25(tf: int, dl: int, n: int, big_n: int = 4, avgdl: float = 11 / 4) -> float:
    idf = math.log(1 + (big_n - n + 0.5) / (n + 0.5))
    return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))


@pytest.fixture()
def text_ds(tmp_path: Path) -> loch.Dataset:
    ds = loch.create(str(tmp_path / "txt"), schema={"caption": loch.Text(), "label": loch.Tensor("int64", ())})
    ds.extend({"caption": CAPTIONS, "label": np.arange(4) % 2})
    ds.commit("captions")
    return ds


@pytest.mark.parametrize("indexed", [False, True])
def test_scores_match_formula(text_ds: loch.Dataset, indexed: bool) -> None:
    if indexed:
        info = text_ds.create_index(column="caption", kind="fts")
        assert info.key.endswith(".bm25") and info.docs == 4 and info.tokens == 11
    r = text_ds.search(text="red car", column="caption", k=10)
    assert (r.index is not None) == indexed and r.warnings == []
    assert r.row_ids.tolist() == [0, 2, 1]
    want = [2 * _bm25(1, 2, 2), _bm25(3, 4, 2), _bm25(2, 3, 2)]
    np.testing.assert_allclose(r.scores, want, rtol=1e-9)


def test_phrase_boolean_where_columns(text_ds: loch.Dataset) -> None:
    text_ds.create_index(column="caption", kind="fts")
    assert text_ds.search(text='"red car"', column="caption").row_ids.tolist() == [0]
    assert sorted(text_ds.search(text="(car OR truck) -blue", column="caption").row_ids.tolist()) == [0, 1]
    assert text_ds.search(text="red AND truck", column="caption").row_ids.tolist() == [1]
    r = text_ds.search(text="car", column="caption", where="label = 0", columns=["caption"])
    assert r.row_ids.tolist() == [2, 0]
    assert r.columns["caption"] == ["Blue car car car.", "Red car"]
    assert len(text_ds.search(text="airplane", column="caption")) == 0


def test_versions_and_update(text_ds: loch.Dataset) -> None:
    v1 = text_ds.version
    text_ds.create_index(column="caption", kind="fts")
    text_ds.extend({"caption": ["red scooter"], "label": np.array([0])})
    text_ds.commit("one more")
    assert sorted(text_ds.search(text="red", column="caption").row_ids.tolist()) == [0, 1, 4]
    info = text_ds.update_index("caption", kind="fts")
    assert info.base == v1 and info.segments == 2
    text_ds.delete([0])
    text_ds.commit("drop row 0")
    assert sorted(text_ds.search(text="red", column="caption").row_ids.tolist()) == [1, 4]
    old = loch.open(text_ds.url, version=v1)
    assert sorted(old.search(text="red", column="caption").row_ids.tolist()) == [0, 1]


def test_sql(text_ds: loch.Dataset) -> None:
    text_ds.create_index(column="caption", kind="fts")
    sel = text_ds.query("SELECT * FROM ds WHERE fts_match(caption, 'car') ORDER BY fts_score(caption, 'car') DESC")
    assert sel.row_ids.tolist() == [2, 0]


def test_bad_input(text_ds: loch.Dataset) -> None:
    with pytest.raises(loch.InvalidArgument, match="not closed"):
        text_ds.search(text='"red car', column="caption")
    with pytest.raises(loch.InvalidArgument, match="want a text or json column"):
        text_ds.search(text="red", column="label")
    with pytest.raises(loch.InvalidArgument, match="either vector or text"):
        text_ds.search(column="caption")
    with pytest.raises(loch.InvalidArgument, match="index kind"):
        text_ds.create_index(column="caption", kind="bm42")
    with pytest.raises(loch.InvalidArgument, match="k = 0"):
        text_ds.search(text="red", column="caption", k=0)
