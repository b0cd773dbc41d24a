"""A loader's arguments are checked when it is made: a value of the wrong
type raises loch.InvalidArgument naming the parameter, what it takes and
what was given (in Python, not by Go's JSON decoding of the
configuration), as one out of range does (in Python where Go cannot tell,
else by Go's own checks), and a misspelt keyword a TypeError naming the
method called and the closest known name."""

from __future__ import annotations

import inspect
import pydoc
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import loch
from loch.loader import LoaderOptions, check_keywords


@pytest.fixture(scope="module")
def ds() -> loch.Dataset:
    scalar = loch.Tensor("int64", shape=())
    ds = loch.create("mem://arguments", schema={"img": scalar, "n": scalar})
    ds.extend({"img": np.arange(10), "n": np.arange(10) * 10})
    ds.commit()
    return ds


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch_size": "64"}, "batch_size='64': want an int, got str"),
        ({"batch_size": 2.5}, "batch_size=2.5: want an int, got float"),
        ({"batch_size": True}, "batch_size=True: want an int, got bool"),
        ({"batch_size": -1}, "batch size -1: want 1 to 2147483647"),  # Go's check
        # Settings that size buffers, channels or goroutines are bounded
        # (issue 35 item 3: these aborted the process out of memory).
        ({"batch_size": 2**34}, "batch size 17179869184: want 1 to 2147483647"),
        ({"batch_size": 2**70}, "batch_size=1180591620717411303424: want an int in [-2**63, 2**63)"),
        ({"workers": 2**40}, "workers 1099511627776: want at most 4096"),
        ({"fetch_concurrency": 2**40}, "fetch concurrency 1099511627776: want at most 4096"),
        ({"prefetch_batches": 2**40}, "prefetch batches 1099511627776: want at most 65536"),
        ({"workers": "4"}, "workers='4': want an int, got str"),
        ({"workers": -4}, "workers -4: want none negative"),
        ({"prefetch_bytes": 1.5e9}, "prefetch_bytes=1500000000.0: want an int, got float"),
        ({"shuffle": 1}, "shuffle=1: want True, False or a mode ('none', 'block', 'full'), got int"),
        ({"seed": -1}, "seed=-1: want an int in [0, 2**64)"),
        ({"seed": "a"}, "seed='a': want an int in [0, 2**64), got str"),
        ({"epoch": -2}, "epoch -2: want at least 0"),
        ({"epoch": "1"}, "epoch='1': want an int, got str"),
        ({"world_size": 0}, "world_size=0: want an int >= 1"),
        ({"world_size": -1}, "world_size=-1: want an int >= 1"),
        ({"rank": 2, "world_size": 2}, "rank 2: want 0 <= rank < world size 2"),
        ({"rank": "0"}, "rank='0': want an int, got str"),
        ({"drop_last": "no"}, "drop_last='no': want True or False, got str"),
        ({"skip_bad_samples": 1}, "skip_bad_samples=1: want True or False, got int"),
        ({"columns": []}, "columns=[]: name at least one column"),
        ({"columns": ["img", 3]}, "columns=['img', 3]: want column names (str), got int 3"),
        ({"columns": 3}, "columns=3: want a column name or a list of them, got int"),
        ({"columns": ["im"]}, "no column 'im'"),
        ({"sample_transform": "decode"}, "sample_transform='decode': want a callable"),
    ],
    ids=lambda v: str(v) if isinstance(v, dict) else "",
)
def test_bad_options_are_refused_naming_them(ds: loch.Dataset, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(loch.InvalidArgument, match=re.escape(message)) as e:
        ds.numpy(**kwargs)
    assert "json" not in str(e.value) and "Go struct" not in str(e.value)


def test_options_of_numpy_types_are_taken(ds: loch.Dataset) -> None:
    loader = ds.numpy(batch_size=np.int64(4), seed=np.uint64(2**64 - 1), drop_last=np.bool_(True))
    assert loader.batch_size == 4
    assert [len(b["index"]) for b in loader] == [4, 4]
    assert type(loader.config()["seed"]) is int  # JSON-able


def test_one_column_name_is_one_column(ds: loch.Dataset) -> None:
    loader = ds.numpy(batch_size=10, columns="img")
    assert loader.columns == ["img"]
    (b,) = list(loader)
    assert sorted(b) == ["img", "index"]


def test_world_size_zero_is_refused_not_read_whole(ds: loch.Dataset) -> None:
    with pytest.raises(loch.InvalidArgument, match="world_size=0"):
        ds.numpy(batch_size=10, world_size=0)
    loader = ds.numpy(batch_size=10)
    with pytest.raises(loch.InvalidArgument, match="world_size=0"):
        loader.set_rank(0, 0)
    with pytest.raises(loch.InvalidArgument, match=re.escape("rank=1.0: want an int, got float")):
        loader.set_rank(1.0, 2)  # type: ignore[arg-type]
    assert (loader.rank, loader.world_size) == (0, 1)  # a refused set_rank changes nothing
    loader.set_rank(3, 2)
    with pytest.raises(loch.InvalidArgument, match="rank 3: want 0 <= rank < world size 2"):
        next(iter(loader))  # Go checks the range when the iteration starts


@pytest.mark.parametrize(
    ("method", "kwargs", "hint"),
    [
        ("numpy", {"batch_sise": 8}, " (did you mean 'batch_size'?)"),
        ("numpy", {"suffle": True}, " (did you mean 'shuffle'?)"),
        ("numpy", {"zzz": 1}, ""),
        ("pytorch", {"pin_memroy": True}, " (did you mean 'pin_memory'?)"),
        ("jax", {"devices": None}, " (did you mean 'device'?)"),
        ("tensorflow", {"batchsize": 8}, " (did you mean 'batch_size'?)"),
    ],
)
def test_a_misspelt_keyword_names_the_method_and_the_closest_name(
    ds: loch.Dataset, method: str, kwargs: dict[str, Any], hint: str
) -> None:
    if method != "numpy":
        pytest.importorskip({"pytorch": "torch"}.get(method, method))
    with pytest.raises(TypeError) as e:
        getattr(ds, method)(**kwargs)
    (key,) = kwargs
    assert str(e.value) == f"ds.{method}() got an unexpected keyword argument {key!r}{hint}"


def test_a_misspelt_keyword_of_a_mixture(ds: loch.Dataset) -> None:
    mixture = loch.mix([ds], [1.0])
    with pytest.raises(TypeError, match=re.escape("mixture.numpy() got an unexpected keyword argument 'sed' (did")):
        mixture.numpy(sed=1)


def test_check_keywords_takes_what_an_adapter_refuses_itself() -> None:
    check_keywords("ds.pytorch()", {"batch_size": 1, "rank": 0}, LoaderOptions)  # rank: the adapter's message
    with pytest.raises(TypeError, match="'nope'"):
        check_keywords("ds.numpy()", {"nope": 0}, LoaderOptions)


def test_an_adapter_still_says_to_use_distributed(ds: loch.Dataset) -> None:
    pytest.importorskip("torch")
    with pytest.raises(loch.InvalidArgument, match="takes distributed=\\(rank, world_size\\), not rank="):
        ds.pytorch(rank=1)


def _keywords(method: Any) -> dict[str, Any]:
    """The keyword-only parameters of a (bound or unbound) method, by name,
    as (default, annotation)."""
    params = inspect.signature(method).parameters.values()
    return {p.name: (p.default, p.annotation) for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}


def test_loader_methods_show_their_keywords_at_runtime(ds: loch.Dataset) -> None:
    """help(), inspect.signature and notebooks' completion see the keywords
    of ds.numpy() and the others by name, with their defaults (their
    **kwargs are typed with Unpack, which only type checkers read)."""
    import loch.jax as ljax
    import loch.torch as ltorch

    loader = _keywords(loch.Loader.__init__)
    assert _keywords(ds.numpy) == loader
    assert _keywords(ds.tensorflow) == loader
    assert _keywords(ds.numpy)["batch_size"][0] == 32
    for method, cls, options in [(ds.pytorch, ltorch.TorchLoader, ltorch.TorchOptions),
                                 (ds.jax, ljax.JaxLoader, ljax.JaxOptions)]:  # fmt: skip
        got = _keywords(method)
        # exactly the keywords its TypedDict declares (the one definition)...
        assert set(got) == set(options.__optional_keys__), method
        # ...with the adapter's own defaults and annotations, and the
        # loader's for the rest
        own = _keywords(cls.__init__)
        for name, value in got.items():
            assert value == own.get(name, loader.get(name)), (method, name)
    from loch.query import Selection

    mix = loch.mix([ds, ds], weights=[1, 1])
    for obj in (Selection, mix):
        assert _keywords(obj.numpy) == loader
        assert set(_keywords(obj.pytorch)) == set(ltorch.TorchOptions.__optional_keys__)
    assert "batch_size: 'int' = 32" in pydoc.render_doc(ds.pytorch, renderer=pydoc.plaintext)


def test_a_loader_says_what_it_loads(ds: loch.Dataset) -> None:
    assert repr(ds.numpy(batch_size=4, columns="n")) == (
        "<loch.Loader mem://arguments columns=['n'] batch_size=4 shuffle='none' epoch=0 rank=0/1>"
    )
    assert repr(ds.pytorch(shuffle="full", epoch=3)) == (
        "<loch.torch.TorchLoader mem://arguments columns=['img', 'n'] batch_size=32 shuffle='full' epoch=3 rank=0/1>"
    )


def test_a_parallelism_above_the_bound_is_refused(tmp_path: Path) -> None:
    """A dataset's parallelism above Go's loch.MaxParallelism (4096) is
    refused naming it and the bound (issue 35 item 3), before anything is
    created; the bound itself is taken."""
    schema = {"n": loch.Tensor("int64", shape=())}
    with pytest.raises(loch.InvalidArgument, match=re.escape("parallelism 1099511627776: want at most 4096")):
        loch.create(str(tmp_path / "ds"), schema=schema, parallelism=2**40)
    assert not (tmp_path / "ds").exists()
    loch.create(str(tmp_path / "ds"), schema=schema, parallelism=4096).close()
    with pytest.raises(loch.InvalidArgument, match=re.escape("parallelism 4097: want at most 4096")):
        loch.open(str(tmp_path / "ds"), parallelism=4097)
