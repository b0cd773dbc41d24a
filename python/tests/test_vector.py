"""Vector search from Python: ds.search against a numpy brute force
(one vector and a batch, every metric, a where filter, requested
columns), create_index / update_index, and bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import loch

DIM = 16


def _brute(vecs: np.ndarray, q: np.ndarray, metric: str) -> np.ndarray:
    x, q = vecs.astype(np.float64), q.astype(np.float64)
    if metric == "cosine":
        return 1 - (x @ q) / (np.linalg.norm(x, axis=1) * np.linalg.norm(q))
    if metric == "l2":
        return np.linalg.norm(x - q, axis=1)
    return -(x @ q)


@pytest.fixture()
def emb_ds(tmp_path: Path) -> tuple[loch.Dataset, np.ndarray]:
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(8, DIM))
    vecs = (centres[rng.integers(0, 8, 600)] + rng.normal(scale=0.5, size=(600, DIM))).astype(np.float32)
    ds = loch.create(str(tmp_path / "emb"), schema={"embedding": loch.Embedding(DIM), "label": loch.Tensor("int64", ())})
    ds.extend({"embedding": vecs, "label": np.arange(600) % 5})
    ds.commit("600 vectors")
    return ds, vecs


@pytest.mark.parametrize("metric", ["cosine", "l2", "dot"])
def test_search_matches_brute_force(emb_ds: tuple[loch.Dataset, np.ndarray], metric: str) -> None:
    ds, vecs = emb_ds
    rng = np.random.default_rng(1)
    queries = rng.normal(size=(3, DIM)).astype(np.float32)
    got = ds.search(queries, k=7, column="embedding", metric=metric)
    assert isinstance(got, list) and len(got) == 3
    for q, r in zip(queries, got, strict=True):
        d = _brute(vecs, q, metric)
        want = np.argsort(d, kind="stable")[:7]
        assert r.index is None and r.warnings == []
        np.testing.assert_allclose(r.distances, d[want], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(d[r.row_ids.astype(np.int64)], r.distances, rtol=1e-4, atol=1e-4)

    one = ds.search(queries[0], k=3, column="embedding", metric=metric, columns=["label"])
    assert isinstance(one, loch.SearchResult) and len(one) == 3
    assert one.row_ids.dtype == np.uint64 and one.distances.dtype == np.float32
    assert [int(v) for v in one.columns["label"]] == [int(i) % 5 for i in one.row_ids]


def test_filtered_search(emb_ds: tuple[loch.Dataset, np.ndarray]) -> None:
    ds, vecs = emb_ds
    q = vecs[10] + 0.01
    got = ds.search(q, k=5, column="embedding", metric="l2", where="label = 3")
    allowed = np.arange(600)[np.arange(600) % 5 == 3]
    d = _brute(vecs[allowed], q, "l2")
    want = allowed[np.argsort(d, kind="stable")[:5]]
    assert sorted(got.row_ids.tolist()) == sorted(want.tolist())
    assert all(int(i) % 5 == 3 for i in got.row_ids)
    none = ds.search(q, k=5, column="embedding", where="label = 99")
    assert len(none) == 0


def test_index_and_update(emb_ds: tuple[loch.Dataset, np.ndarray]) -> None:
    ds, vecs = emb_ds
    info = ds.create_index("embedding", metric="l2", nlist=8, seed=1)
    assert isinstance(info, loch.IndexInfo)
    assert info.rows == 600 and info.nlist == 8 and info.dim == DIM and info.version == ds.version
    assert info.key.startswith(f"indexes/{ds.version}/")

    r = ds.search(vecs[42], k=1, column="embedding", metric="l2")
    assert r.index == info.key and r.row_ids.tolist() == [42] and r.distances[0] == 0

    # A row appended after the build is found at once, and after an update.
    new = np.full((1, DIM), 9.0, np.float32)
    ds.extend({"embedding": new, "label": np.array([1])})
    ds.commit("one more")
    r = ds.search(new[0], k=1, column="embedding", metric="l2")
    assert r.row_ids.tolist() == [600] and r.index == info.key
    up = ds.update_index("embedding", metric="l2")
    assert up.version == ds.version and up.rows == 601 and up.base == info.version
    r = ds.search(new[0], k=1, column="embedding", metric="l2")
    assert r.row_ids.tolist() == [600] and r.index == up.key

    # Deleted rows never come back.
    ds.delete([600, 42])
    ds.commit("delete two")
    r = ds.search(np.stack([new[0], vecs[42]]), k=5, column="embedding", metric="l2")
    assert all(600 not in x.row_ids.tolist() and 42 not in x.row_ids.tolist() for x in r)


def test_bad_input(emb_ds: tuple[loch.Dataset, np.ndarray]) -> None:
    ds, _ = emb_ds
    with pytest.raises(loch.InvalidArgument, match="has 3 dimensions, the column has 16"):
        ds.search(np.ones(3), column="embedding")
    with pytest.raises(loch.InvalidArgument, match="NaN"):
        ds.search(np.full(DIM, np.nan), column="embedding")
    with pytest.raises(loch.InvalidArgument, match="k = 0"):
        ds.search(np.ones(DIM), k=0, column="embedding")
    with pytest.raises(loch.InvalidArgument, match="want an embedding column"):
        ds.search(np.ones(DIM), column="label")
    with pytest.raises(loch.InvalidArgument, match="metric 'hamming'"):
        ds.search(np.ones(DIM), column="embedding", metric="hamming")
    with pytest.raises(loch.NotFound, match="no column"):
        ds.search(np.ones(DIM), column="nope")
    with pytest.raises(loch.NotFound):
        ds.update_index("embedding", metric="dot")
