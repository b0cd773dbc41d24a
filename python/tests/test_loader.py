"""The numpy loader: order, sharding, resume, transforms, statistics."""

from __future__ import annotations

import pickle
from typing import Any
from collections import Counter

import numpy as np
import pytest
from conftest import ROWS

import loch


def ids(loader: loch.Loader) -> list[int]:
    return [i for b in loader for i in b["index"].tolist()]


def test_columns_match_rows(rows_ds: loch.Dataset) -> None:
    for b in rows_ds.numpy(batch_size=64, shuffle="full", seed=3):
        i = b["index"]
        assert np.array_equal(b["x"][:, 1], 2 * i.astype(np.float32))
        assert np.array_equal(b["y"], i)
        assert b["s"] == [f"row {k}" for k in i]


@pytest.mark.parametrize("shuffle", [False, True, "none", "block", "full"])
def test_one_epoch_is_a_permutation(rows_ds: loch.Dataset, shuffle: bool | str) -> None:
    got = ids(rows_ds.numpy(batch_size=32, shuffle=shuffle, seed=1))
    assert sorted(got) == list(range(ROWS))
    if shuffle in (False, "none"):
        assert got == list(range(ROWS))
    else:
        assert got != list(range(ROWS))


def test_epochs_and_seeds_change_the_order(rows_ds: loch.Dataset) -> None:
    first = ids(rows_ds.numpy(batch_size=50, shuffle="full", seed=7))
    assert ids(rows_ds.numpy(batch_size=50, shuffle="full", seed=7)) == first, "deterministic"
    assert ids(rows_ds.numpy(batch_size=50, shuffle="full", seed=7, epoch=1)) != first
    assert ids(rows_ds.numpy(batch_size=50, shuffle="full", seed=8)) != first


def epoch_order(ds: loch.Dataset, epoch: int) -> list[int]:
    """The rows of one epoch, from a loader made for it."""
    return ids(ds.numpy(batch_size=50, shuffle="full", seed=7, epoch=epoch))


def test_iterating_again_advances_the_epoch(rows_ds: loch.Dataset) -> None:
    loader = rows_ds.numpy(batch_size=50, shuffle="full", seed=7)
    assert loader.epoch == 0
    assert ids(loader) == epoch_order(rows_ds, 0)
    assert loader.epoch == 1
    assert ids(loader) == epoch_order(rows_ds, 1)
    it = iter(loader)
    next(it)
    assert loader.epoch == 3, "an iteration that started took its epoch"
    it.close()
    assert ids(loader) == epoch_order(rows_ds, 3), "an iteration left early counts too"


def test_set_epoch_sets_the_next_iteration(rows_ds: loch.Dataset) -> None:
    loader = rows_ds.numpy(batch_size=50, shuffle="full", seed=7)
    for e in (0, 1, 5, 2):  # the DistributedSampler pattern
        loader.set_epoch(e)
        assert ids(loader) == epoch_order(rows_ds, e)
    assert ids(loader) == epoch_order(rows_ds, 3)


def test_state_dict_between_iterations(rows_ds: loch.Dataset) -> None:
    loader = rows_ds.numpy(batch_size=50, shuffle="full", seed=7)
    ids(loader)
    start = loader.state_dict()
    assert start["epoch"] == 1 and start["loader"]["epoch"] == 1, "after a whole epoch: the start of the next"
    assert start["loader"]["version"] == rows_ds.version and all(st["batches_done"] == 0 for st in start["loader"].get("stages", []))
    it = iter(loader)
    head = next(it)["index"].tolist()
    it.close()
    stopped = loader.state_dict()
    assert stopped["epoch"] == 1 and stopped["loader"] is not None, "after an early stop: where it stopped"
    resumed = rows_ds.numpy(batch_size=50, shuffle="full", seed=7)
    resumed.load_state_dict(stopped)
    assert head + ids(resumed) == epoch_order(rows_ds, 1), "resumes the saved epoch"
    assert ids(resumed) == epoch_order(rows_ds, 2), "then goes on with the next"


@pytest.mark.parametrize("stop", [False, True])
def test_state_dict_after_the_last_batch(rows_ds: loch.Dataset, stop: bool) -> None:
    """The loop has every batch of epoch 2 but has not asked for the end
    (or broke off there): the state is the start of epoch 3, and a resume
    goes on with epoch 3 rather than repeat epoch 2."""
    loader = rows_ds.numpy(batch_size=50, shuffle="full", seed=7, epoch=2)
    it = iter(loader)
    got = [next(it)["index"].tolist() for _ in range(len(loader))]
    if stop:
        it.close()
    state = loader.state_dict()
    assert state["epoch"] == 3 and state["loader"]["epoch"] == 3
    assert [i for b in got for i in b] == epoch_order(rows_ds, 2)
    resumed = rows_ds.numpy(batch_size=50, shuffle="full", seed=7)
    resumed.load_state_dict(state)
    assert ids(resumed) == epoch_order(rows_ds, 3)


@pytest.mark.parametrize("world", [2, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_sharding(rows_ds: loch.Dataset, world: int, drop_last: bool) -> None:
    shards = [ids(rows_ds.numpy(batch_size=16, shuffle="block", seed=2, rank=r, world_size=world,
                                drop_last=drop_last)) for r in range(world)]  # fmt: skip
    assert len({len(s) for s in shards}) == 1, "every rank gets as many rows"
    count = Counter(i for s in shards for i in s)
    if drop_last:
        assert max(count.values()) == 1, "no row twice"
        assert ROWS - len(count) < world * 16
        assert len(shards[0]) % 16 == 0
    else:
        assert set(count) == set(range(ROWS)), "every row"
        assert sum(count.values()) - ROWS == -ROWS % world, "padding only"


def test_len(rows_ds: loch.Dataset) -> None:
    loader = rows_ds.numpy(batch_size=100)
    assert len(loader) == 11
    assert len(list(loader)) == 11
    assert len(rows_ds.numpy(batch_size=100, drop_last=True)) == 10


@pytest.mark.parametrize("shuffle", ["none", "block", "full"])
def test_resume_equals_uninterrupted(rows_ds: loch.Dataset, shuffle: str) -> None:
    def make() -> loch.Loader:
        return rows_ds.numpy(batch_size=30, shuffle=shuffle, seed=5, epoch=2)

    whole = [b["index"].tolist() for b in make()]
    loader = make()
    it = iter(loader)
    head = [next(it)["index"].tolist() for _ in range(7)]
    state = loader.state_dict()
    it.close()
    again = make()
    again.load_state_dict(state)
    tail = [b["index"].tolist() for b in again]
    assert head + tail == whole


def test_resume_in_another_world_size(rows_ds: loch.Dataset) -> None:
    loader = rows_ds.numpy(batch_size=10, shuffle="full", seed=1)
    it = iter(loader)
    seen = [i for _ in range(20) for i in next(it)["index"].tolist()]
    state = loader.state_dict()
    it.close()
    rest = []
    for r in range(2):
        part = rows_ds.numpy(batch_size=10, shuffle="full", seed=1, rank=r, world_size=2)
        part.load_state_dict(state)
        rest += ids(part)
    assert set(seen) | set(rest) == set(range(ROWS))
    assert not set(seen) & set(rest)


def test_transforms(rows_ds: loch.Dataset) -> None:
    def double(row: dict) -> dict:
        return {"x2": row["x"] * 2, "index": row["index"]}

    (b,) = list(rows_ds.numpy(batch_size=ROWS, columns=["x"], sample_transform=double))
    assert b["x2"].shape == (ROWS, 3) and b["x2"][5, 0] == 10
    (b,) = list(rows_ds.numpy(batch_size=ROWS, columns=["y"], transform=lambda b: {"n": len(b["y"])}))
    assert b == {"n": ROWS}


def test_sample_transform_keeps_columns_with_dots(tmp_path) -> None:
    # WebDataset ingest names columns by file extension ("emb.npy").
    ds = loch.create(str(tmp_path / "ds"), schema={
        "emb.npy": loch.Tensor("float32", shape=(None,)),
        "cls.txt": loch.Text(),
        "n": loch.Tensor("int64", shape=()),
    })  # fmt: skip
    ds.extend({
        "emb.npy": [np.full(k + 1, k, np.float32) for k in range(6)],
        "cls.txt": [f"c{k}" if k % 2 else None for k in range(6)],
        "n": np.arange(6),
    })  # fmt: skip
    ds.commit()
    rows = []
    (b,) = list(ds.numpy(batch_size=6, sample_transform=lambda r: rows.append(r) or r))
    assert [sorted(r) for r in rows] == [["cls.txt", "emb.npy", "index", "n"]] * 6
    for k, r in enumerate(rows):
        assert r["index"] == r["n"] == k
        assert r["emb.npy"].tolist() == [float(k)] * (k + 1), "padding removed"
        assert r["cls.txt"] == (f"c{k}" if k % 2 else None)
    assert sorted(b) == ["cls.txt", "emb.npy", "index", "n"]
    assert [len(e) for e in b["emb.npy"]] == [1, 2, 3, 4, 5, 6]


def test_stats(rows_ds: loch.Dataset) -> None:
    loader = rows_ds.numpy(batch_size=100)
    assert loader.stats() == {}
    for _ in loader:
        pass
    s = loader.stats()
    assert s["batches"] == 11 and s["samples"] == ROWS
    assert 0 <= s["wait_share"] <= 1
    assert s["retries"] == 0 and s["retry_wait_ns"] == 0, "no storage failure to ride out"


def test_break_stops_the_go_loader(rows_ds: loch.Dataset) -> None:
    before = loch.buffer_stats()["live"]
    loader = rows_ds.numpy(batch_size=10, prefetch_batches=8)
    for batch in loader:
        assert len(batch["index"]) == 10
        break
    del batch
    assert loader._active is None
    assert loch.buffer_stats()["live"] == before


def test_kept_batches_stay_valid_while_freed_buffers_are_reused(rows_ds: loch.Dataset) -> None:
    # A batch's buffers go back to Go only when its last array is gone,
    # with a later batch's call (loch_loader_next_batch): arrays kept
    # across the rest of the epoch, and after the loader is closed, keep
    # their values while the buffers of the batches dropped are reused.
    before = loch.buffer_stats()["live"]
    loader = rows_ds.numpy(batch_size=10, columns=["x", "y"])
    kept: list[dict[str, Any]] = []
    for k, batch in enumerate(loader):
        if k % 3 == 0:
            kept.append(batch)
    del batch
    assert loader._active is None
    assert len(kept) == 34  # of 101 batches (ROWS = 1001)
    assert loch.buffer_stats()["live"] > before
    for b in kept:
        i = b["index"]
        assert np.array_equal(b["y"], i)
        assert np.array_equal(b["x"][:, 1], 2 * i.astype(np.float32))
    views = [b["x"][:, 1] for b in kept]  # a view keeps its buffer too
    del kept, b, i
    assert loch.buffer_stats()["live"] > before
    assert all(len(v) == 10 for v in views)
    del views
    assert loch.buffer_stats()["live"] == before


def test_disk_cache(rows_ds: loch.Dataset, tmp_path) -> None:
    loader = rows_ds.numpy(batch_size=100, cache_dir=str(tmp_path / "cache"), cache_bytes=1 << 20)
    first = ids(loader)
    assert ids(loader) == first
    assert any(p.is_file() for p in (tmp_path / "cache").rglob("*"))


def test_closing_the_dataset_stops_its_loaders(rows_path) -> None:
    ds = loch.open(str(rows_path))
    it = iter(ds.numpy(batch_size=10))
    next(it)
    ds.close()
    with pytest.raises(loch.Closed):
        next(it)


def test_convert_runs_between_the_sample_and_batch_transforms(rows_ds: loch.Dataset) -> None:
    seen = []

    def batch_transform(b: dict) -> dict:
        seen.append(sorted(b))
        return b

    loader = rows_ds.numpy(batch_size=500, columns=["y"], sample_transform=lambda r: {"y": r["y"], "index": r["index"]},
                           transform=batch_transform)  # fmt: skip
    out = list(loader.batches(lambda b: {"converted": b["y"] + 1, "index": b["index"]}))
    assert seen == [["converted", "index"]] * 3
    assert np.array_equal(out[0]["converted"], out[0]["index"] + 1)


def test_peek_leaves_the_loader_where_it_was(rows_ds: loch.Dataset) -> None:
    loader = rows_ds.numpy(batch_size=100, shuffle="full", seed=4)
    first = loader.peek()
    assert first is not None and loader.stats() == {} and all(st["batches_done"] == 0 for st in loader.state_dict()["loader"].get("stages", []))
    assert list(first["index"]) == ids(loader)[:100]


def test_set_rank(rows_ds: loch.Dataset) -> None:
    loader = rows_ds.numpy(batch_size=16, shuffle="block", seed=2)
    loader.set_rank(1, 3)
    assert (loader.rank, loader.world_size) == (1, 3)
    assert ids(loader) == ids(rows_ds.numpy(batch_size=16, shuffle="block", seed=2, rank=1, world_size=3))


def test_pickled_loader_reads_the_snapshot_it_was_made_on(tmp_path) -> None:
    ds = loch.create(str(tmp_path / "ds"), schema={"n": loch.Tensor("int64", shape=())})
    ds.extend({"n": np.arange(10)})
    ds.commit()
    loader = ds.numpy(batch_size=4)
    ds.extend({"n": np.arange(10, 15)})
    ds.commit()
    copy = pickle.loads(pickle.dumps(loader))
    assert copy.dataset is None
    assert ids(copy) == list(range(10)), "the version the dataset had when the loader was made"
    assert copy.dataset is not None and copy.dataset is not ds
    assert ids(loader) == list(range(15)), "the original reads through the dataset's handle"


def test_state_before_the_first_batch_pins_the_version(tmp_path: Any) -> None:
    """A state taken before any iteration records the snapshot and the order
    settings, and resuming it on another shuffle mode is refused."""
    ds = loch.create(str(tmp_path / "pin"), schema={"n": loch.Tensor("int64", shape=())})
    ds.extend({"n": np.arange(40)})
    ds.commit("rows")
    loader = ds.numpy(batch_size=4, shuffle="block", seed=2)
    state = loader.state_dict()
    assert state["loader"]["version"]
    assert state["loader"]["mode"] == "block"
    again = ds.numpy(batch_size=4, shuffle="block", seed=2)
    again.load_state_dict(state)
    assert [b["n"].tolist() for b in again] == [b["n"].tolist() for b in ds.numpy(batch_size=4, shuffle="block", seed=2)]
    other = ds.numpy(batch_size=4, shuffle="full", seed=2)
    other.load_state_dict(state)
    with pytest.raises(loch.InvalidArgument, match="shuffle mode block, resumed with full"):
        next(iter(other))


def test_resume_with_another_seed_is_refused(tmp_path: Any) -> None:
    """A state saved with seed 3 resumed by a loader built with seed 4 is
    refused, naming both seeds (it silently went on with seed 3's order),
    and the same state still resumes a seed-3 loader."""
    ds = loch.create(str(tmp_path / "seeds"), schema={"n": loch.Tensor("int64", shape=())})
    ds.extend({"n": np.arange(40)})
    ds.commit("rows")
    loader = ds.numpy(batch_size=4, shuffle="full", seed=3)
    it = iter(loader)
    first = next(it)["n"].tolist()
    state = loader.state_dict()
    rest = [b["n"].tolist() for b in it]
    other = ds.numpy(batch_size=4, shuffle="full", seed=4)
    other.load_state_dict(state)
    with pytest.raises(loch.InvalidArgument, match="saved with seed 3, resumed with seed 4"):
        next(iter(other))
    same = ds.numpy(batch_size=4, shuffle="full", seed=3)
    same.load_state_dict(state)
    assert [b["n"].tolist() for b in same] == rest
    assert sorted(first + [n for b in rest for n in b]) == list(range(40))
