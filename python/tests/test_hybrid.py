"""Hybrid search from Python: ds.search(vector=..., text=...) fused by
reciprocal rank and by weighted scores against hand-computed rankings, a
where filter on both sides, either side alone, the indexes, the result as
a selection that a loader reads in fused order and that saves, the same
search in SQL, and bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import loch
from loch.hybrid import HybridSearchResult

# Row i's embedding is at angle 0.3 i, so its cosine distance to [1, 0]
# grows with i: the vector ranking is 0, 1, ..., 7. Only rows 5 ("boat",
# one word) and 7 (three words) hold "boat": the text ranking is 5, 7.
CAPTIONS = ["red car", "blue car", "green truck", "red truck", "small car", "boat", "old bicycle", "old boat trip"]
Q = np.array([1.0, 0.0], dtype=np.float32)


@pytest.fixture()
def hyb_ds(tmp_path: Path) -> loch.Dataset:
    angles = 0.3 * np.arange(8)
    emb = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    ds = loch.create(str(tmp_path / "hyb"), schema={"emb": loch.Embedding(2), "caption": loch.Text(), "label": loch.Tensor("int64", ())})
    ds.extend({"emb": emb, "caption": CAPTIONS, "label": np.arange(8) % 2})
    ds.commit("8 rows")
    return ds


def test_rrf_hand_computed(hyb_ds: loch.Dataset) -> None:
    r = hyb_ds.search(Q, text="boat", k=8)
    assert isinstance(r, HybridSearchResult)
    assert r.vector_column == "emb" and r.text_column == "caption"  # the only columns of their kind
    # 5: 1/(60+6) + 1/(60+1); 7: 1/68 + 1/62; the others 1/(60 + i + 1)
    want = {5: 1 / 66 + 1 / 61, 7: 1 / 68 + 1 / 62} | {i: 1 / (61 + i) for i in (0, 1, 2, 3, 4, 6)}
    order = sorted(want, key=lambda i: -want[i])
    assert order == [5, 7, 0, 1, 2, 3, 4, 6]
    assert r.row_ids.tolist() == order
    np.testing.assert_allclose(r.scores, [want[i] for i in order], rtol=1e-12)
    assert r.vector_ranks.tolist() == [6, 8, 1, 2, 3, 4, 5, 7]
    assert r.text_ranks.tolist() == [1, 2, 0, 0, 0, 0, 0, 0]
    assert r.text_scores[0] > r.text_scores[1] > 0 and r.text_scores[2] == 0
    np.testing.assert_allclose(r.distances, 1 - np.cos(0.3 * r.row_ids.astype(np.float64)), atol=1e-6)
    # rrf_k changes the constant: 1/(1+6) + 1/(1+1) for row 5
    r = hyb_ds.search(Q, text="boat", k=1, rrf_k=1, rank_window=8)
    np.testing.assert_allclose(r.scores, [1 / 7 + 1 / 2], rtol=1e-12)


def test_weighted_hand_computed(hyb_ds: loch.Dataset) -> None:
    r = hyb_ds.search(Q, text="boat", k=8, fusion="weighted", weight=0.5)
    # min-max: vector 1 - d_i / d_7 (d_0 = 0), text 1 for row 5, 0 for 7
    d = 1 - np.cos(0.3 * np.arange(8))
    want = 0.5 * (1 - d / d[7]) + 0.5 * (np.arange(8) == 5)
    order = np.argsort(-want, kind="stable").tolist()
    assert r.row_ids.tolist() == order
    np.testing.assert_allclose(r.scores, want[order], atol=1e-6)
    # weight 1: the vector ranking; weight 0: the text side's best first
    # (its last, row 7, normalises to 0 like a row it did not rank)
    assert hyb_ds.search(Q, text="boat", k=8, fusion="weighted", weight=1.0).row_ids.tolist() == list(range(8))
    assert hyb_ds.search(Q, text="boat", k=2, fusion="weighted", weight=0.0, rank_window=8).row_ids.tolist() == [5, 0]


def test_where_and_either_side(hyb_ds: loch.Dataset) -> None:
    # label = 1: rows 1, 3, 5, 7; vector ranks 1..4 among them, text 5, 7
    r = hyb_ds.search(Q, text="boat", where="label = 1", k=4, columns=["caption"])
    assert r.row_ids.tolist() == [5, 7, 1, 3]
    assert r.vector_ranks.tolist() == [3, 4, 1, 2] and r.text_ranks.tolist() == [1, 2, 0, 0]
    assert r.columns["caption"] == ["boat", "old boat trip", "blue car", "red truck"]
    assert "filter := 'label = 1'" in r.sql
    r = hyb_ds.search(text="car", where="label = 0", fusion="rrf", k=5)
    assert sorted(r.row_ids.tolist()) == [0, 4] and set(r.vector_ranks.tolist()) == {0}
    r = hyb_ds.search(Q, fusion="rrf", k=3, column="emb")
    assert r.row_ids.tolist() == [0, 1, 2] and r.text_column is None
    np.testing.assert_allclose(r.scores, [1 / 61, 1 / 62, 1 / 63])


def test_indexes_used(hyb_ds: loch.Dataset) -> None:
    before = hyb_ds.search(Q, text="boat", k=5)
    hyb_ds.create_index("emb", nlist=2)
    hyb_ds.create_index(column="caption", kind="fts")
    r = hyb_ds.search(Q, text="boat", k=5, nprobe=2)
    assert r.vector_index is not None and r.vector_index.endswith(".cosine")
    assert r.text_index is not None and r.text_index.endswith(".bm25")
    assert r.row_ids.tolist() == before.row_ids.tolist() and r.warnings == []


def test_selection_trains_and_saves(hyb_ds: loch.Dataset) -> None:
    r = hyb_ds.search(Q, text="boat", k=5, rank_window=8)
    sel = r.selection()
    assert isinstance(sel, loch.Selection) and sel.version == hyb_ds.version == r.version
    assert sel.row_ids.tolist() == [5, 7, 0, 1, 2]
    got = np.concatenate([b["index"] for b in sel.numpy(batch_size=2)])
    assert got.tolist() == [5, 7, 0, 1, 2]  # the row ids of this dataset are its positions
    assert sel[0]["caption"] == "boat"
    sel.save("boats")
    back = hyb_ds.selection("boats")
    assert back.row_ids.tolist() == [5, 7, 0, 1, 2] and back.sql == r.sql
    # The result's SQL runs as a query, with the same rows in fused order.
    assert hyb_ds.query(r.sql).row_ids.tolist() == [5, 7, 0, 1, 2]


def test_sql(hyb_ds: loch.Dataset) -> None:
    r = hyb_ds.search(Q, text="boat", k=3, where="label = 1", fusion="weighted", weight=0.3)
    sel = hyb_ds.query("SELECT * FROM hybrid_search('emb', [1.0, 0.0], 'caption', 'boat', k := 3, "
                       "filter := 'label = 1', fusion := 'weighted', weight := 0.3) ORDER BY rank")  # fmt: skip
    assert sel.row_ids.tolist() == r.row_ids.tolist()
    t = hyb_ds.sql("SELECT _rowid, score, text_rank FROM hybrid_search('', NULL, '', 'boat', k := 2) ORDER BY rank")
    assert t.column("_rowid").to_pylist() == [5, 7] and t.column("text_rank").to_pylist() == [1, 2]


def test_bad_input(hyb_ds: loch.Dataset) -> None:
    with pytest.raises(loch.InvalidArgument, match="fusion 'max': want one of rrf, weighted"):
        hyb_ds.search(Q, text="boat", fusion="max")
    with pytest.raises(loch.InvalidArgument, match=r"weight = 2: want a number in \[0, 1\]"):
        hyb_ds.search(Q, text="boat", fusion="weighted", weight=2)
    with pytest.raises(loch.InvalidArgument, match="a hybrid search takes one vector"):
        hyb_ds.search(np.stack([Q, Q]), text="boat")
    with pytest.raises(loch.InvalidArgument, match="has 3 dimensions, the column has 2"):
        hyb_ds.search(np.ones(3), text="boat")
    with pytest.raises(loch.InvalidArgument, match="want a text or json column"):
        hyb_ds.search(Q, text="boat", text_column="label")
    with pytest.raises(loch.InvalidArgument, match="no query"):
        hyb_ds.search(fusion="rrf")
    with pytest.raises(loch.InvalidArgument, match="k = 0"):
        hyb_ds.search(Q, text="boat", k=0)
    with pytest.raises(loch.InvalidArgument, match="give column="):
        hyb_ds.search(Q)
