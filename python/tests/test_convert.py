"""The batch conversion in C (loch/_convert.c, libloch_py.so): built with
the package on Python >= 3.11, it gives the batches the Python conversion
gives, takes the sample buffers (they go back to Go as the arrays go), and
leaves the batches it does not handle to the Python conversion."""

from __future__ import annotations

import gc
import pickle
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import loch
from loch import _buffers


@pytest.fixture
def python_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches converted in Python, as without libloch_py.so."""
    monkeypatch.setattr(_buffers, "_fast", None)


def batches(ds: loch.Dataset, **options: Any) -> list[dict[str, Any]]:
    return list(ds.numpy(batch_size=5, shuffle=True, seed=3, **options))


def assert_same_batches(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert len(got) == len(want) > 0
    for g, w in zip(got, want, strict=True):
        assert sorted(g) == sorted(w)
        for k in w:
            if isinstance(w[k], np.ndarray):
                assert isinstance(g[k], np.ndarray) and g[k].dtype == w[k].dtype and g[k].shape == w[k].shape, k
                assert np.array_equal(g[k], w[k]), k
                assert g[k].flags.writeable and g[k].flags.c_contiguous, k
            else:
                assert g[k] == w[k], k


def test_built_where_the_package_can(monkeypatch: pytest.MonkeyPatch) -> None:
    # The test environment (make venv) builds it: Python 3.11 with its
    # headers and gcc, as cgo needs.
    monkeypatch.setattr(_buffers, "_fast", False)  # look again
    if sys.version_info >= (3, 11):
        assert _buffers.fast_convert() is not None
    monkeypatch.setenv("LOCH_PY_CONVERT", "0")
    monkeypatch.setattr(_buffers, "_fast", False)
    assert _buffers.fast_convert() is None


def test_a_library_of_another_abi_or_not_loadable_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Looked for beside the library in use first: one built for another
    # C ABI version (another batch layout), or not a library at all, is
    # passed over for the package's.
    from loch import _library

    lib = tmp_path / "libloch.so"
    lib.write_bytes(b"")
    monkeypatch.setattr(_library, "library_path", lambda: lib)
    (tmp_path / _buffers.CONVERT_LIB).write_bytes(b"not an ELF file")
    monkeypatch.setattr(_buffers, "_fast", False)
    packaged = _buffers.fast_convert()
    assert packaged is not None  # the package's, skipping the broken one
    monkeypatch.setattr(_library, "ABI_VERSION", _library.ABI_VERSION + 1)
    monkeypatch.setattr(_buffers, "_fast", False)
    assert _buffers.fast_convert() is None  # the package's is of another ABI now


def plain_dataset(path: Path) -> loch.Dataset:
    """Dense columns of many dtypes, an image column (ragged: it gets
    .shapes) and a class label: the form the C conversion handles."""
    rng = np.random.default_rng(0)
    n = 23
    ds = loch.create(str(path), schema={
        "img": loch.Image("lz4"),  # no fixed shape: ragged, with .shapes
        "y": loch.ClassLabel(["a", "b", "c"]),
        "f16": loch.Tensor("float16", shape=(2,)),
        "f64": loch.Tensor("float64", shape=()),
        "flag": loch.Tensor("bool", shape=(3,)),
        "u16": loch.Tensor("uint16", shape=(2, 2)),
        "i8": loch.Tensor("int8", shape=(4,)),
    })  # fmt: skip
    ds.extend({
        "img": rng.integers(0, 256, (n, 6, 5, 3), dtype=np.uint8),
        "y": rng.integers(0, 3, n),
        "f16": rng.standard_normal((n, 2)).astype(np.float16),
        "f64": rng.standard_normal(n),
        "flag": rng.integers(0, 2, (n, 3)).astype(bool),
        "u16": rng.integers(0, 65535, (n, 2, 2), dtype=np.uint16),
        "i8": rng.integers(-128, 127, (n, 4), dtype=np.int8),
    })  # fmt: skip
    ds.commit()
    return ds


def test_same_batches_as_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ds = plain_dataset(tmp_path / "ds")
    fast = batches(ds)
    assert "img.shapes" in fast[0] and fast[0]["img.shapes"].tolist()[0] == [6, 5, 3]
    monkeypatch.setattr(_buffers, "_fast", None)
    assert_same_batches(fast, batches(ds))


def test_the_c_conversion_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # It, not the Python conversion, makes plain batches: the arrays'
    # buffers are exported by its objects.
    fast = _buffers.fast_convert()
    assert fast is not None
    calls: list[bool] = []

    def counting(addr: int, ctx: tuple[Any, ...]) -> Any:
        out = fast(addr, ctx)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(_buffers, "_fast", counting)
    got = batches(plain_dataset(tmp_path / "ds"))
    assert calls and all(calls) and len(calls) == len(got)
    assert type(got[0]["img"].base).__name__ == "memoryview"


def test_other_batches_go_to_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Text (packed), nulls and per-sample shapes are the Python
    # conversion's: the C one declines them, taking nothing.
    boxes = [np.arange(4 * k, dtype=np.float32).reshape(k, 4) for k in (0, 3, 1, 2, 5, 1, 0)]
    schema = {
        "t": loch.Text(),
        "boxes": loch.BBox("xywh"),
        "emb": loch.Embedding(4),
        "n": loch.Tensor("int64", shape=()),
    }
    ds = loch.create(str(tmp_path / "ds"), schema=schema)
    ds.extend({"t": [f"row {i}" if i % 3 else None for i in range(7)], "boxes": boxes,
               "emb": [np.full(4, i, np.float32) if i % 2 else None for i in range(7)], "n": np.arange(7)})  # fmt: skip
    ds.commit()
    fast = _buffers.fast_convert()
    assert fast is not None
    declined: list[bool] = []

    def counting(addr: int, ctx: tuple[Any, ...]) -> Any:
        out = fast(addr, ctx)
        declined.append(out is None)
        return out

    for columns in (["t", "n"], ["boxes"], ["emb", "n"]):
        declined.clear()
        monkeypatch.setattr(_buffers, "_fast", counting)
        got = batches(ds, columns=columns)
        assert declined and all(declined), columns
        monkeypatch.setattr(_buffers, "_fast", None)
        assert_same_batches(got, batches(ds, columns=columns))


def test_buffers_go_back(tmp_path: Path) -> None:
    ds = plain_dataset(tmp_path / "ds")
    got = batches(ds)
    assert loch.buffer_stats()["live"] > 0
    kept = got[1]["img"]  # an array keeps its buffer, and the other batches go
    del got
    gc.collect()
    live = loch.buffer_stats()["live"]
    assert 0 < live <= 2 * kept.nbytes + 64 * 1024
    assert kept.sum() >= 0
    del kept
    gc.collect()
    assert loch.buffer_stats()["live"] == 0


def test_torch_tensors_share_the_buffers(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    ds = plain_dataset(tmp_path / "ds")
    got = list(ds.pytorch(batch_size=8))
    b = got.pop(0)
    del got
    assert isinstance(b["img"], torch.Tensor) and b["img"].dtype == torch.uint8
    assert tuple(b["img"].shape) == (8, 6, 5, 3)
    assert b["index"].dtype == torch.int64 and b["img.shapes"].tolist()[0] == [6, 5, 3]
    b["img"][0, 0, 0, 0] = 7  # writable, as the Python conversion's
    assert int(b["img"][0, 0, 0, 0]) == 7
    del b
    gc.collect()
    assert loch.buffer_stats()["live"] == 0


def test_loader_pickles_without_its_context(tmp_path: Path) -> None:
    ds = plain_dataset(tmp_path / "ds")
    loader = ds.numpy(batch_size=5)
    first = next(iter(loader))
    assert loader._fast_ctx is not None
    copy = pickle.loads(pickle.dumps(loader))
    assert copy._fast_ctx is None
    del first
