"""loch.ray.create_index on a real local Ray cluster: the index built by
encode and merge tasks and committed once by the driver is the index
built in one process (the same centroids, the same list objects, the same
answers), for ivf-flat and ivf-pq; a task that fails for good commits
nothing; and the steps from Python refuse parts that do not cover the
rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import ray

import loch
import loch.ray as lray

DIM, ROWS = 16, 6000


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def _dataset(path: Path) -> tuple[loch.Dataset, np.ndarray]:
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(20, DIM))
    vecs = (centres[rng.integers(0, 20, ROWS)] + rng.normal(scale=0.4, size=(ROWS, DIM))).astype(np.float32)
    ds = loch.create(str(path), schema={"embedding": loch.Embedding(DIM)})
    for lo in range(0, ROWS, 2000):  # three fragments
        ds.extend({"embedding": vecs[lo : lo + 2000]})
        ds.commit(f"rows from {lo}")
    return ds, vecs


def _objects(path: Path) -> set[str]:
    return {p.name for p in (path / "vectors").rglob("*") if p.is_file()}


def _recall(ds: loch.Dataset, vecs: np.ndarray, queries: np.ndarray) -> tuple[float, list[list[int]]]:
    got = ds.search(queries, k=10, column="embedding", metric="l2", nprobe=4)
    hits, found = [], 0
    for q, res in zip(queries, got, strict=True):
        truth = set(np.argsort(np.linalg.norm(vecs - q, axis=1), kind="stable")[:10].tolist())
        found += len(truth & set(res.row_ids.tolist()))
        hits.append(res.row_ids.tolist())
    return found / (10 * len(queries)), hits


@pytest.mark.parametrize("kind", ["ivf-flat", "ivf-pq"])
def test_create_index_equals_one_process(cluster: None, tmp_path: Path, kind: str) -> None:
    path = tmp_path / "emb"
    ds, vecs = _dataset(path)
    queries = vecs[::600] + 0.05
    one = ds.create_index("embedding", "l2", nlist=24, seed=3, kind=kind, m=4)
    objects = _objects(path)
    recall, hits = _recall(ds, vecs, queries)
    assert recall >= 0.9

    info = lray.create_index(str(path), "embedding", "l2", nlist=24, seed=3, kind=kind, m=4, part_rows=1000, merge_tasks=3)
    assert (info.key, info.rows, info.nlist, info.kind) == (one.key, ROWS, 24, kind)
    # The same centroids and lists: the same objects, and no part left over.
    assert _objects(path) == objects
    assert _recall(ds, vecs, queries) == (recall, hits)
    # A handle works as a URL does.
    assert lray.create_index(ds, "embedding", "l2", nlist=24, seed=3, kind=kind, m=4, part_rows=2500).key == one.key
    assert _objects(path) == objects


def test_failed_task_commits_nothing(cluster: None, tmp_path: Path) -> None:
    path = tmp_path / "emb"
    ds, vecs = _dataset(path)
    # Tasks that cannot load loch's library fail for good (no retries).
    broken = {"runtime_env": {"env_vars": {"LOCH_LIBRARY": str(tmp_path / "missing.so")}}, "max_retries": 0}
    with pytest.raises(Exception, match="missing.so"):
        lray.create_index(str(path), "embedding", "l2", nlist=8, part_rows=1500, task_options=broken)
    res = ds.search(vecs[0], k=3, column="embedding", metric="l2")
    assert res.index is None and res.row_ids[0] == 0  # no index: searched exactly


def test_commit_refuses_parts_that_miss_rows(tmp_path: Path) -> None:
    path = tmp_path / "emb"
    ds, vecs = _dataset(path)
    t = ds.train_index("embedding", "l2", nlist=8, part_rows=2500)
    assert [tuple(p) for p in t["parts"]] == [(0, 2500), (2500, 5000), (5000, 6000)]
    parts = [ds.encode_index_part(t, a, b) for a, b in t["parts"]]
    assert ds.encode_index_part(t, 0, 2500) == parts[0]  # run again: the same part
    lists = ds.merge_index_lists(t, parts, 0, t["nlist"])
    with pytest.raises(loch.InvalidArgument, match="do not tile"):
        ds.commit_index(t, parts[:1] + parts[2:], lists)
    assert ds.search(vecs[0], k=3, column="embedding", metric="l2").index is None
    info = ds.commit_index(t, parts, lists)
    assert info.rows == ROWS and ds.search(vecs[0], k=3, column="embedding", metric="l2").index == info.key
