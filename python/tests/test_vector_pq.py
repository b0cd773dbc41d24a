"""The ivf-pq index kind from Python (issue 37): create_index(kind="ivf-pq")
answers as exact search when every row is re-ranked, and the result says
which index served it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import loch

DIM = 16


def test_create_pq_index_and_search(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(8, DIM))
    vecs = (centres[rng.integers(0, 8, 300)] + rng.normal(scale=0.5, size=(300, DIM))).astype(np.float32)
    ds = loch.create(str(tmp_path / "emb"), schema={"embedding": loch.Embedding(DIM)})
    ds.extend({"embedding": vecs})
    ds.commit("300 vectors")
    info = ds.create_index("embedding", metric="l2", nlist=4, kind="ivf-pq", m=4, seed=1)
    assert info.kind == "ivf-pq" and info.m == 4 and info.rows == 300 and info.nlist == 4
    q = vecs[17] + 0.01
    got = ds.search(q, k=5, column="embedding", metric="l2", nprobe=4, rerank=300)
    assert got.index == info.key and got.warnings == []
    want = np.argsort(np.linalg.norm(vecs - q, axis=1), kind="stable")[:5]
    assert got.row_ids.tolist() == want.tolist()
    flat = ds.create_index("embedding", metric="cosine", nlist=4)
    assert flat.kind == "ivf-flat" and flat.m is None


def test_bad_kind(tmp_path: Path) -> None:
    ds = loch.create(str(tmp_path / "emb"), schema={"embedding": loch.Embedding(DIM)})
    ds.extend({"embedding": np.ones((10, DIM), dtype=np.float32)})
    ds.commit("rows")
    with pytest.raises(loch.InvalidArgument, match="want ivf-flat or ivf-pq"):
        ds.create_index("embedding", kind="hnsw")
    with pytest.raises(loch.InvalidArgument, match="divisor of the dimension"):
        ds.create_index("embedding", kind="ivf-pq", m=5)


def test_update_index_by_kind(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    ds = loch.create(str(tmp_path / "emb"), schema={"embedding": loch.Embedding(DIM)})
    ds.extend({"embedding": rng.normal(size=(100, DIM)).astype(np.float32)})
    ds.commit("100 vectors")
    ds.create_index("embedding", metric="l2", nlist=4, kind="ivf-pq", m=4, seed=1)
    ds.extend({"embedding": rng.normal(size=(20, DIM)).astype(np.float32)})
    ds.commit("20 more")
    # the kind names the vector index, which keeps the kind it was built with
    info = ds.update_index("embedding", metric="l2", kind="ivf-pq")
    assert info.kind == "ivf-pq" and info.rows == 120
    with pytest.raises(loch.InvalidArgument, match="index kind 'hnsw'"):
        ds.update_index("embedding", kind="hnsw")
