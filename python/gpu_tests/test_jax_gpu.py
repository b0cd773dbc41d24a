"""ds.jax() on a GPU: ``device=`` puts every array on that device,
``sharding=`` on that sharding (a one-device mesh here), no argument on
JAX's default device; values are the numpy loader's (same seed), lists of
text and json stay lists."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from conftest import BATCH, DRY_RUN, ROWS, expected

import loch

jax = pytest.importorskip("jax")  # on the GPU machine: a failure below if it lacks its CUDA plugin
jnp = jax.numpy
from jax.sharding import Mesh, NamedSharding, PartitionSpec  # noqa: E402

ARRAYS = ("x", "img", "y", "h", "index")


@pytest.fixture(scope="session")
def gpu() -> Any:
    """The JAX GPU (the first; the CPU in a dry run); fails without one."""
    if DRY_RUN:
        return jax.devices("cpu")[0]
    try:
        return jax.devices("gpu")[0]
    except RuntimeError as e:
        why = str(e)
    pytest.fail(f"JAX has no GPU (jax {jax.__version__}: {why}): the GPU tests need a CUDA GPU and JAX's CUDA plugin; "
                "LOCH_TEST_DEVICE=cpu is a dry run of their logic without one", pytrace=False)  # fmt: skip


def check(got: dict[str, Any], want: dict[str, Any], placed: Any) -> None:
    """got is the numpy batch want as jax arrays, each placed as placed(a)
    asserts."""
    assert sorted(got) == sorted(want)
    for k, w in want.items():
        g = got[k]
        if isinstance(w, np.ndarray):
            assert isinstance(g, jax.Array), f"{k}: {type(g)}"
            placed(k, g)
            # int64 is int32 unless jax_enable_x64 (JAX's rule, not loch's).
            dtype = jax.dtypes.canonicalize_dtype(w.dtype)
            assert g.dtype == dtype and g.shape == w.shape, f"{k}: {g.dtype} {g.shape}, want {dtype} {w.shape}"
            np.testing.assert_array_equal(np.asarray(g), w, err_msg=k)
        else:
            assert isinstance(g, list) and g == w, f"{k}: {type(g)}"
    e = expected(np.asarray(got["index"]))
    np.testing.assert_array_equal(np.asarray(got["img"]), e["img"])
    np.testing.assert_array_equal(np.asarray(got["h"]).astype(np.float32), e["h"])
    assert got["s"] == e["s"] and got["j"] == e["j"]


def numpy_batches(ds: loch.Dataset, seed: int) -> list[dict[str, Any]]:
    return list(ds.numpy(batch_size=BATCH, shuffle=True, seed=seed))


def test_device(ds: loch.Dataset, gpu: Any) -> None:
    def placed(k: str, a: Any) -> None:
        assert a.devices() == {gpu}, f"{k} is on {a.devices()}, want {gpu}"

    want = numpy_batches(ds, 1)
    got = list(ds.jax(batch_size=BATCH, shuffle=True, seed=1, device=gpu))
    assert len(got) == len(want) == -(-ROWS // BATCH)
    for g, w in zip(got, want):
        check(g, w, placed)
    assert got[0]["h"].dtype == jnp.bfloat16


def test_sharding_over_a_one_device_mesh(ds: loch.Dataset, gpu: Any) -> None:
    mesh = Mesh(np.array([gpu]), ("batch",))
    sharding = NamedSharding(mesh, PartitionSpec("batch"))

    def placed(k: str, a: Any) -> None:
        assert a.devices() == {gpu}, f"{k} is on {a.devices()}"
        assert a.sharding.is_equivalent_to(sharding, a.ndim), f"{k}: {a.sharding}, want {sharding}"

    want = numpy_batches(ds, 2)
    got = list(ds.jax(batch_size=BATCH, shuffle=True, seed=2, sharding=sharding))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        check(g, w, placed)
    # A jitted step takes the batches as they come.
    total = jax.jit(lambda x: x.sum())
    assert sum(float(total(g["x"])) for g in got) == float(sum(w["x"].sum() for w in want))


def test_no_device_is_jaxs_default(ds: loch.Dataset, gpu: Any) -> None:
    default = jax.devices()[0]
    if not DRY_RUN:
        assert default.platform == "gpu", f"JAX's default device is {default}, not a GPU"

    def placed(k: str, a: Any) -> None:
        assert a.devices() == {default}, f"{k} is on {a.devices()}"

    want = numpy_batches(ds, 3)
    for g, w in zip(list(ds.jax(batch_size=BATCH, shuffle=True, seed=3)), want, strict=True):
        check(g, w, placed)


def test_resume_mid_epoch(ds: loch.Dataset, gpu: Any) -> None:
    whole = [b["index"].tolist() for b in numpy_batches(ds, 4)]
    loader = ds.jax(batch_size=BATCH, shuffle=True, seed=4, device=gpu)
    it = iter(loader)
    head = [np.asarray(next(it)["index"]).tolist() for _ in range(3)]
    state = loader.state_dict()
    del it
    resumed = ds.jax(batch_size=BATCH, shuffle=True, seed=4, device=gpu)
    resumed.load_state_dict(state)
    assert head + [np.asarray(b["index"]).tolist() for b in resumed] == whole


def test_no_preallocation() -> None:
    """conftest keeps JAX from taking 75% of the GPU (the torch tests share it)."""
    assert os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE") == "false"
