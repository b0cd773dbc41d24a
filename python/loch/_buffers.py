"""Sample memory handed over by Go, as numpy arrays without a copy.

Go allocates sample and batch buffers in C memory. A :class:`Buffer` owns
one; numpy arrays made from it keep it alive (it is their ``base``), and
when the last of them is gone the buffer goes back to Go
(``loch_buffer_free``), which recycles it for later batches.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
from typing import Any

import numpy as np

from . import _library, dtypes
from ._library import DENSE, Library, TensorOut

# Column values as this module returns them: an array, or a list of
# per-sample values (arrays, str, bytes, JSON values or None) when the
# samples do not form one array.
Value = Any


class Buffer:
    """Owns one C buffer of ``nbytes`` bytes at ``ptr``; ``np.asarray``
    views it without a copy."""

    __slots__ = ("_lib", "_ptr", "__array_interface__")

    def __init__(self, lib: Library, ptr: int, nbytes: int) -> None:
        self._lib = lib
        self._ptr = ptr
        self.__array_interface__ = {
            "version": 3,
            "shape": (nbytes,),
            "typestr": "|u1",
            "data": (ptr, False),
        }

    def __del__(self) -> None:
        ptr, self._ptr = self._ptr, 0
        if ptr:
            with contextlib.suppress(Exception):  # at interpreter shutdown
                self._lib.free_buffer(ptr)

    def array(self) -> np.ndarray:
        """The buffer's bytes as a writable uint8 array."""
        return np.asarray(self)


# numpy dtypes of ctypes integer types: np.dtype(ctypes type) takes about
# 20 µs, several times per batch.
_CTYPE_DTYPES: dict[Any, np.dtype] = {}


def _ints(p: Any, n: int) -> np.ndarray:
    """Copies n integers from a C array (empty when NULL)."""
    if n == 0 or not p:
        return np.zeros(0, dtype=np.int64)
    dt = _CTYPE_DTYPES.get(p._type_)
    if dt is None:
        dt = _CTYPE_DTYPES[p._type_] = np.dtype(p._type_)
    addr = ctypes.cast(p, ctypes.c_void_p).value or 0
    return np.frombuffer(ctypes.string_at(addr, n * dt.itemsize), dtype=dt).copy()


def _decode(dtype: str, raw: bytes) -> Any:
    if dtype == "text":
        return raw.decode("utf-8")
    if dtype == "json":
        return json.loads(raw)
    return raw


def _array_dtype(name: str) -> np.dtype:
    dt = dtypes.numpy_dtype(name)
    assert dt is not None, name
    return dt


def tensor_value(lib: Library, t: TensorOut, *, stack: bool) -> tuple[Value, np.ndarray | None, np.ndarray | None]:
    """Converts a tensor handed over by Go into (value, sample shapes,
    null flags), taking ownership of its data buffer.

    Dense tensors become one array (padded when ragged: the sample shapes
    are then returned). Packed tensors become a list of per-sample values,
    or, with ``stack`` and samples of one shape and no nulls, one array.
    """
    n = int(t.n)
    name = dtypes.name(int(t.dtype))
    buf = Buffer(lib, int(t.data or 0), int(t.nbytes)) if t.data else None
    raw = buf.array() if buf is not None else np.zeros(0, dtype=np.uint8)
    nulls = _ints(t.nulls, n).astype(bool) if t.nulls else None
    if t.layout == DENSE:
        ndim = int(t.ndim)
        shape = tuple(t.shape[:ndim])
        arr = raw.view(_array_dtype(name)).reshape(shape)
        shapes = _ints(t.sample_shapes, n * (ndim - 1)).reshape(n, ndim - 1) if t.sample_shapes else None
        return arr, shapes, nulls
    offsets = _ints(t.offsets, n + 1)
    if name in dtypes.VARIABLE:
        data = raw.tobytes()
        out = [
            None if nulls is not None and nulls[i] else _decode(name, data[offsets[i] : offsets[i + 1]])
            for i in range(n)
        ]
        return out, None, nulls
    ndims = _ints(t.sample_ndims, n)
    flat = _ints(t.sample_shapes, int(ndims.sum()))
    npdt = _array_dtype(name)
    starts = np.concatenate([[0], np.cumsum(ndims)])
    shapes_list = [tuple(int(d) for d in flat[starts[i] : starts[i + 1]]) for i in range(n)]
    if stack and nulls is None and n > 0 and all(s == shapes_list[0] for s in shapes_list):
        return raw.view(npdt).reshape((n, *shapes_list[0])), None, None
    values: list[Any] = []
    for i in range(n):
        if nulls is not None and nulls[i]:
            values.append(None)
        else:
            values.append(raw[offsets[i] : offsets[i + 1]].view(npdt).reshape(shapes_list[i]))
    return values, None, nulls


def free_tensor(lib: Library, p: ctypes._Pointer) -> None:  # type: ignore[type-arg]
    """Frees a tensor's description (its data is owned by a Buffer)."""
    lib.cdll.loch_tensor_free(p)


def buffer_stats() -> dict[str, int]:
    """The bytes of sample buffers in use (held by arrays and loaders) and
    kept by Go for reuse::

        >>> loch.buffer_stats()            # doctest: +SKIP
        {'live': 12582912, 'pooled': 4194304}
    """
    lib = _library.library()
    live, pooled = ctypes.c_int64(), ctypes.c_int64()
    lib.cdll.loch_buffer_stats(ctypes.byref(live), ctypes.byref(pooled))
    return {"live": live.value, "pooled": pooled.value}


def trim_buffers() -> None:
    """Frees the sample buffers Go keeps for reuse (at most 512 MiB), for
    example after a loader of large batches is done."""
    _library.library().cdll.loch_buffer_trim()
