"""The JAX adapter."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from conftest import ROWS  # noqa: E402

import loch  # noqa: E402


def test_batches_are_jax_arrays(rows_ds: loch.Dataset) -> None:
    n = 0
    for b in rows_ds.jax(batch_size=128, shuffle=True, seed=1):
        assert isinstance(b["x"], jax.Array) and b["x"].dtype == np.float32
        assert np.array_equal(np.asarray(b["y"]), np.asarray(b["index"]))
        assert isinstance(b["s"], list)
        n += b["x"].shape[0]
    assert n == ROWS


def test_sharding(rows_ds: loch.Dataset) -> None:
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("batch",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("batch"))
    loader = rows_ds.jax(batch_size=100, columns=["x"], sharding=sharding, drop_last=True)
    b = next(iter(loader))
    assert b["x"].sharding == sharding
    assert b["x"].shape == (100, 3)


def test_jit_step(rows_ds: loch.Dataset) -> None:
    @jax.jit
    def total(x: jax.Array) -> jax.Array:
        return x.sum()

    s = sum(float(total(b["x"][:, 0])) for b in rows_ds.jax(batch_size=256, columns=["x"]))
    assert s == sum(range(ROWS))


def test_iterating_again_advances_the_epoch(rows_ds: loch.Dataset) -> None:
    def order(epoch: int) -> list[int]:
        return [i for b in rows_ds.numpy(batch_size=100, shuffle=True, seed=3, epoch=epoch) for i in b["index"]]

    loader = rows_ds.jax(batch_size=100, shuffle=True, seed=3, columns=["y"])
    passes = [[i for b in loader for i in np.asarray(b["index"]).tolist()] for _ in range(2)]
    assert passes == [order(0), order(1)]
    loader.set_epoch(0)
    assert [i for b in loader for i in np.asarray(b["index"]).tolist()] == order(0)


def test_distributed_as_a_list_is_a_rank(rows_ds: loch.Dataset) -> None:
    def ids(distributed: Any) -> list[int]:
        return [i for b in rows_ds.jax(batch_size=100, columns=["y"], distributed=distributed)
                for i in np.asarray(b["index"]).tolist()]  # fmt: skip

    half = ids([1, 2])
    assert half == ids((1, 2))
    assert len(half) == (ROWS + 1) // 2


@pytest.mark.parametrize("distributed", ["yes", [1], (0, 1, 2), (0.0, 1)])
def test_bad_distributed_values_are_refused(rows_ds: loch.Dataset, distributed: Any) -> None:
    with pytest.raises(loch.InvalidArgument, match=re.escape(f"distributed={distributed!r}: want None (detect)")):
        rows_ds.jax(batch_size=10, distributed=distributed)


@pytest.mark.parametrize("device", ["cuda", "gpu", "tpu", "bogus", "cpu:7"])
def test_a_device_jax_lacks_is_refused_when_made(rows_ds: loch.Dataset, device: str) -> None:
    platform, _, index = device.partition(":")
    try:
        if len(jax.devices(platform)) > int(index or 0):
            pytest.skip(f"JAX has {device} here")
    except RuntimeError:  # no such platform here
        pass
    with pytest.raises(loch.InvalidArgument, match=re.escape(f"device={device!r}: JAX has")) as e:
        rows_ds.jax(batch_size=10, device=device)
    assert str(jax.devices()) in str(e.value)


def test_a_device_by_platform_name(rows_ds: loch.Dataset) -> None:
    loader = rows_ds.jax(batch_size=10, columns=["y"], device="cpu")
    assert loader.device == jax.devices("cpu")[0]
    b = next(iter(loader))
    assert b["y"].devices() == {jax.devices("cpu")[0]}
    with pytest.raises(loch.InvalidArgument, match="want a jax.Device or a platform name, got int"):
        rows_ds.jax(device=0)


@pytest.fixture
def wide_ds(tmp_path: Any) -> loch.Dataset:
    """Int64 and uint64 columns that 32 bits hold (small) and do not (big)."""
    ds = loch.create(str(tmp_path / "wide"), schema={
        "small": loch.Tensor("int64", shape=()), "big": loch.Tensor("int64", shape=()),
        "ubig": loch.Tensor("uint64", shape=())})  # fmt: skip
    ds.extend({"small": np.arange(-5, 5, dtype=np.int64), "big": np.arange(10, dtype=np.int64) + 2**40,
               "ubig": np.arange(10, dtype=np.uint64) + 2**32})  # fmt: skip
    ds.commit("wide")
    return ds


@pytest.fixture
def x64(request: pytest.FixtureRequest) -> Any:
    """jax_enable_x64 set to the test's parameter, and back afterwards."""
    was = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", request.param)
    yield
    jax.config.update("jax_enable_x64", was)


@pytest.mark.parametrize("x64", [False], indirect=True)
def test_64_bit_integers_that_jax_would_wrap_are_refused(wide_ds: loch.Dataset, x64: Any) -> None:
    b = next(iter(wide_ds.jax(batch_size=10, columns=["small"])))
    assert b["small"].dtype == np.int32 and np.asarray(b["small"]).tolist() == list(range(-5, 5))
    assert b["index"].dtype == np.int32 and np.asarray(b["index"]).tolist() == list(range(10))
    for col, dtype, value in (("big", "int64", 2**40), ("ubig", "uint64", 2**32)):
        loader = wide_ds.jax(batch_size=10, columns=[col])
        want = f"column {col!r}: {dtype} value {value} does not fit JAX's {dtype[:-2]}32"
        with pytest.raises(loch.InvalidArgument, match=re.escape(want)) as e:
            next(iter(loader))
        assert "columns=" in str(e.value)  # a column of the user's can be left out
    # The refusal leaves the dataset readable.
    assert np.asarray(next(iter(wide_ds.jax(batch_size=10, columns=["small"])))["small"]).tolist()[0] == -5


@pytest.mark.parametrize("x64", [True], indirect=True)
def test_64_bit_integers_arrive_whole_with_x64(wide_ds: loch.Dataset, x64: Any) -> None:
    b = next(iter(wide_ds.jax(batch_size=10, columns=["big", "ubig"])))
    assert b["big"].dtype == np.int64 and int(b["big"][0]) == 2**40
    assert b["ubig"].dtype == np.uint64 and int(b["ubig"][9]) == 2**32 + 9
    assert b["index"].dtype == np.int64


@pytest.mark.parametrize("x64", [False], indirect=True)
def test_row_ids_past_2_31_are_refused_with_the_one_fix(x64: Any) -> None:
    # A dataset of 2^31 rows is out of a test's reach: the check itself,
    # on the ids a batch of one would carry.
    from loch.jax import _fits

    _fits("index", np.array([0, 2**31 - 1], np.int64))  # fits
    with pytest.raises(loch.InvalidArgument, match=re.escape("column 'index': int64 value 2147483648")) as e:
        _fits("index", np.array([5, 2**31, 2**32], np.int64))
    assert "jax_enable_x64" in str(e.value) and "columns=" not in str(e.value)  # the row ids always come
