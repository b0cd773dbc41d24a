"""Mixtures (loch.mix): the quotas of loader/order's "Mixtures", each row
from the dataset its batch names, resume, the adapters and DataLoader
workers."""

from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from conftest import run_script

import loch

# Dataset d's column "n" holds OFFSET * d + the row's position (= its row id).
OFFSET = 10_000


def make(path: str, d: int, rows: int, *, dtype: str = "int64", dim: int = 2, extra: str | None = None) -> loch.Dataset:
    """Dataset number d of a mixture: "n" encodes (d, row); "v" is a vector
    of dim values; an optional extra column only this dataset has."""
    schema = {"n": loch.Tensor(dtype, shape=(), chunk_bytes=1024), "v": loch.Tensor("float32", shape=(dim,))}
    if extra:
        schema[extra] = loch.Tensor("float32", shape=(2,))
    ds = loch.create(path, schema=schema)
    i = np.arange(rows)
    cols = {"n": (OFFSET * d + i).astype(dtype), "v": np.full((rows, dim), d, np.float32)}
    if extra:
        cols[extra] = np.zeros((rows, 2), np.float32)
    ds.extend(cols)
    ds.commit()
    return ds


@pytest.fixture
def pair(tmp_path: Path) -> list[loch.Dataset]:
    """Two datasets on disk: 300 rows of 2-vectors and 40 rows of 3-vectors."""
    return [make(str(tmp_path / "a"), 0, 300), make(str(tmp_path / "b"), 1, 40, dim=3)]


def quotas(rows: int, weights: list[str]) -> list[int]:
    """The rows each dataset gets in an epoch of `rows` rows, as
    loader/order/doc.go defines them: the weights as integers in the same
    proportions (their decimal forms at a common power of ten), floor(T *
    u_d / U) each, plus one for the datasets with the largest remainders,
    the lower index first among equals."""
    units = [Fraction(w) for w in weights]
    scale = max(f.denominator for f in units)
    u = [int(f * scale) for f in units]
    total = sum(u)
    q = [rows * x // total for x in u]
    by_remainder = sorted(range(len(u)), key=lambda d: (-(rows * u[d] % total), d))
    for d in by_remainder[: rows - sum(q)]:
        q[d] += 1
    return q


def rows_of(batches: list[dict]) -> list[tuple[int, int]]:
    """(dataset, row id) of every row, checking each row's values against
    the dataset and row its batch names."""
    out = []
    for b in batches:
        ds, ids = np.asarray(b["dataset"]).tolist(), np.asarray(b["index"]).tolist()
        assert np.asarray(b["n"]).tolist() == [OFFSET * d + i for d, i in zip(ds, ids, strict=True)]
        out += list(zip(ds, ids, strict=True))
    return out


@pytest.mark.parametrize(
    ("weights", "epoch_rows"),
    [(["0.8", "0.2"], 250), (["0.7", "0.3"], 101), (["1", "1", "2"], 10), (["0.5", "0.25", "0.25"], 333)],
)
def test_weights_give_exact_quotas(tmp_path: Path, weights: list[str], epoch_rows: int) -> None:
    datasets = [make(str(tmp_path / str(d)), d, 50 + 30 * d) for d in range(len(weights))]
    mixed = loch.mix(datasets, weights=[float(w) for w in weights], epoch_rows=epoch_rows)
    rows = rows_of(list(mixed.numpy(batch_size=16, shuffle=True, seed=3)))
    assert len(rows) == epoch_rows
    counts = Counter(d for d, _ in rows)
    assert [counts[d] for d in range(len(weights))] == quotas(epoch_rows, weights)


def test_default_epoch_exhausts_every_dataset(pair: list[loch.Dataset]) -> None:
    # T is the largest of ceil(rows_d * U / u_d): 300 * 10 / 8 = 375 for a,
    # 40 * 10 / 2 = 200 for b. So a delivers each row once and b, 75 rows,
    # goes round its 40 rows about twice.
    rows = rows_of(list(loch.mix(pair, weights=[0.8, 0.2]).numpy(batch_size=32, shuffle=True, seed=1)))
    counts = Counter(d for d, _ in rows)
    assert [counts[0], counts[1]] == quotas(375, ["0.8", "0.2"]) == [300, 75]
    assert sorted(i for d, i in rows if d == 0) == list(range(300)), "the largest share delivers each row once"
    b = Counter(i for d, i in rows if d == 1)
    assert set(b) == set(range(40)) and set(b.values()) == {1, 2}, "the other cycles"


def test_batches_are_deterministic_and_epochs_differ(pair: list[loch.Dataset]) -> None:
    def run(epoch: int) -> list[tuple[int, int]]:
        return rows_of(list(loch.mix(pair, weights=[0.5, 0.5], epoch_rows=200).numpy(
            batch_size=20, shuffle=True, seed=9, epoch=epoch)))  # fmt: skip

    loader = loch.mix(pair, weights=[0.5, 0.5], epoch_rows=200).numpy(batch_size=20, shuffle=True, seed=9)
    first, second = rows_of(list(loader)), rows_of(list(loader))
    assert first == run(0) and second == run(1) and first != second


def test_shapes_may_differ(pair: list[loch.Dataset]) -> None:
    mixed = loch.mix(pair, weights=[0.5, 0.5], epoch_rows=64)
    assert mixed.schema["v"].shape == (None,) and list(mixed.schema) == ["n", "v"]
    for b in mixed.numpy(batch_size=64, shuffle=True):
        assert b["v"].shape == (64, 3)
        assert b["v.shapes"][:, 0].tolist() == [2 + d for d in b["dataset"].tolist()]
        for k, d in enumerate(b["dataset"].tolist()):
            assert b["v"][k, : 2 + d].tolist() == [d] * (2 + d), "each row's own values, padded"


@pytest.mark.parametrize("shuffle", ["none", "block", "full"])
def test_resume_continues_exactly(pair: list[loch.Dataset], shuffle: str) -> None:
    def make_loader() -> loch.Loader:
        return loch.mix(pair, weights=[0.6, 0.4], epoch_rows=230).numpy(batch_size=16, shuffle=shuffle, seed=5)

    whole = rows_of(list(make_loader()))
    loader = make_loader()
    it = iter(loader)
    head = rows_of([next(it) for _ in range(6)])
    state = json.loads(json.dumps(loader.state_dict()))
    it.close()
    resumed = make_loader()
    resumed.load_state_dict(state)
    assert head + rows_of(list(resumed)) == whole


def test_resume_through_torch(pair: list[loch.Dataset]) -> None:
    pytest.importorskip("torch")

    def make_loader():  # noqa: ANN202
        return loch.mix(pair, weights=[0.6, 0.4], epoch_rows=230).pytorch(batch_size=16, shuffle=True, seed=5)

    whole = rows_of(list(make_loader()))
    loader = make_loader()
    it = iter(loader)
    head = rows_of([next(it) for _ in range(4)])
    state = loader.state_dict()
    del it
    resumed = make_loader()
    resumed.load_state_dict(state)
    assert head + rows_of(list(resumed)) == whole


def test_a_column_one_dataset_lacks(tmp_path: Path) -> None:
    a = make(str(tmp_path / "a"), 0, 30, extra="emb.npy")
    b = make(str(tmp_path / "b"), 1, 30)
    mixed = loch.mix([a, b], weights=[1, 1])
    assert list(mixed.schema) == ["n", "v"], "a mixture has the columns all its datasets have"
    assert sum(len(b["n"]) for b in mixed.numpy(batch_size=8)) == 60
    with pytest.raises(loch.InvalidArgument, match=r"no column 'emb.npy'"):
        mixed.numpy(columns=["n", "emb.npy"])


def test_dtypes_must_agree(tmp_path: Path) -> None:
    a = make(str(tmp_path / "a"), 0, 30)
    b = make(str(tmp_path / "b"), 1, 30, dtype="float32")
    loader = loch.mix([a, b], weights=[1, 1]).numpy(batch_size=8)
    with pytest.raises(loch.InvalidArgument, match=r'column "n" is int64 in dataset 0 and float32 in dataset 1'):
        list(loader)


def test_bad_arguments(pair: list[loch.Dataset]) -> None:
    with pytest.raises(loch.InvalidArgument, match="2 datasets with 3 weights"):
        loch.mix(pair, weights=[1, 2, 3])
    with pytest.raises(loch.InvalidArgument, match="loch.Dataset"):
        loch.mix([pair[0], "b"], weights=[1, 1])  # type: ignore[list-item]
    for weights in ([1, -1], [0, 0]):
        with pytest.raises(loch.InvalidArgument, match="weight"):
            len(loch.mix(pair, weights=weights).numpy())
    with pytest.raises(loch.InvalidArgument, match="row subset"):
        list(loch.mix(pair, weights=[1, 1]).numpy(rows=[1, 2]))


def test_a_column_named_dataset_clashes(tmp_path: Path) -> None:
    a, b = (make(str(tmp_path / k), d, 10, extra="dataset") for d, k in enumerate("ab"))
    mixed = loch.mix([a, b], weights=[1, 1])
    with pytest.raises(loch.InvalidArgument, match='a column named "dataset" clashes'):
        mixed.numpy()
    assert sum(len(b["n"]) for b in mixed.numpy(columns=["n"])) == 20
    assert sum(len(b["n"]) for b in a.numpy(columns=["n", "dataset"])) == 10, "a dataset's batches have no such key"


def test_jax_and_tensorflow_carry_the_dataset(pair: list[loch.Dataset]) -> None:
    jax = pytest.importorskip("jax")
    tf = pytest.importorskip("tensorflow")
    mixed = loch.mix(pair, weights=[0.5, 0.5], epoch_rows=64)
    want = rows_of(list(mixed.numpy(batch_size=16, shuffle=True, seed=2)))
    jb = list(mixed.jax(batch_size=16, shuffle=True, seed=2))
    assert isinstance(jb[0]["dataset"], jax.Array) and rows_of(jb) == want
    tfds = mixed.tensorflow(batch_size=16, shuffle=True, seed=2, columns=["n"])
    assert tfds.element_spec["dataset"].dtype == tf.int64
    assert rows_of([{k: v.numpy() for k, v in b.items()} for b in tfds]) == want


DATALOADER = """
    import json, sys
    import torch, loch

    def main():
        method, a, b = sys.argv[1:4]
        mixed = loch.mix([loch.open(a), loch.open(b)], weights=[0.7, 0.3], epoch_rows=500)

        def rows(over):
            return [[d, i, n] for batch in over
                    for d, i, n in zip(batch["dataset"].tolist(), batch["index"].tolist(), batch["n"].tolist())]

        alone = rows(mixed.pytorch(batch_size=16, shuffle=True, seed=4))
        dl = torch.utils.data.DataLoader(mixed.pytorch(batch_size=16, shuffle=True, seed=4), batch_size=None,
                                         num_workers=2, multiprocessing_context=method)
        print(json.dumps({"alone": alone, "workers": rows(dl)}))

    if __name__ == "__main__":
        main()
"""


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_dataloader_workers_deliver_the_same_rows(tmp_path: Path, pair: list[loch.Dataset], method: str) -> None:
    proc = run_script(tmp_path, DATALOADER, method, pair[0].url, pair[1].url, timeout=180)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(out["alone"]) == 500
    assert sorted(out["workers"]) == sorted(out["alone"]), "the same rows, each as often"
    assert all(n == OFFSET * d + i for d, i, n in out["workers"])
