"""Sample memory handed over by Go, as numpy arrays without a copy.

Go allocates sample and batch buffers in C memory. A :class:`Buffer` owns
one; numpy arrays made from it keep it alive (it is their ``base``), and
when the last of them is gone the buffer goes back to Go
(``loch_buffer_free``), which recycles it for later batches.
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from . import _library, dtypes
from ._library import DENSE, Library, TensorOut

# The process's memory as one read-only view of bytes. The library hands
# over C structs and arrays by address; reading them through this view
# (struct.unpack_from, a slice) costs no foreign call, where
# ctypes.string_at took about a tenth of a loader consumer's time per batch
# in argument conversion alone (bench/history/2026-11-26-issue-17.md). Like string_at,
# it must only be read at addresses the library gave and still owns.
MEMORY = memoryview((ctypes.c_char * sys.maxsize).from_address(0)).cast("B").toreadonly()

# Column values as this module returns them: an array, or a list of
# per-sample values (arrays, str, bytes, JSON values or None) when the
# samples do not form one array.
Value = Any


class Buffer:
    """Owns one C buffer at ``ptr``; ``np.asarray`` views it without a copy:
    ``nbytes`` bytes (uint8), or, given ``typestr`` (a numpy dtype's
    ``str``) and ``shape``, an array of them (which must fit). Its memory
    goes back to Go when the last array over it is gone
    (:meth:`loch._library.Library.free_buffer`: with a loader's next report
    to Go, at the latest within a bounded amount of memory)."""

    __slots__ = ("_lib", "_ptr", "_nbytes", "__array_interface__")

    def __init__(self, lib: Library, ptr: int, nbytes: int, typestr: str = "|u1",
                 shape: tuple[int, ...] | None = None) -> None:  # fmt: skip
        self._lib = lib
        self._ptr = ptr
        self._nbytes = nbytes
        self.__array_interface__ = {
            "version": 3,
            "shape": (nbytes,) if shape is None else shape,
            "typestr": typestr,  # a numpy dtype's str (built anew each time it is read: cached in _dtype)
            "data": (ptr, False),
        }

    def __del__(self) -> None:
        ptr, self._ptr = self._ptr, 0
        if ptr:
            try:
                self._lib.free_buffer(ptr, self._nbytes)
            except Exception:  # noqa: BLE001, S110 (at interpreter shutdown)
                pass

    def array(self) -> np.ndarray:
        """The buffer's bytes as a writable uint8 array."""
        return np.asarray(self)


def _ints(p: Any, n: int) -> np.ndarray:
    """Copies n integers from a C array (a ctypes pointer; empty when
    NULL)."""
    if n == 0 or not p:
        return np.zeros(0, dtype=np.int64)
    return ints_at(ctypes.cast(p, ctypes.c_void_p).value or 0, n, _ctype_dtype(p._type_))


# numpy dtypes of ctypes integer types: np.dtype(ctypes type) takes about
# 20 µs, several times per batch.
_CTYPE_DTYPES: dict[Any, np.dtype] = {}


def _ctype_dtype(t: Any) -> np.dtype:
    dt = _CTYPE_DTYPES.get(t)
    if dt is None:
        dt = _CTYPE_DTYPES[t] = np.dtype(t)
    return dt


I64, I32, BOOL = np.dtype(np.int64), np.dtype(np.int32), np.dtype(np.bool_)


def ints_at(addr: int, n: int, dt: np.dtype = I64) -> np.ndarray:
    """Copies n numbers of dtype ``dt`` from C memory at ``addr`` (empty
    when NULL) into a writable array."""
    if n <= 0 or not addr:
        return np.zeros(0, dtype=dt)
    return np.frombuffer(bytearray(MEMORY[addr : addr + n * dt.itemsize]), dtype=dt)


# loch_tensor (loch.h; _library.TensorOut) read in one piece (native layout, as the C compiler lays it out): name, dtype,
# layout, ndim, reserved, n, shape, data, nbytes, sample_shapes,
# sample_ndims, offsets, nulls (pointers as ints, NULL as 0).
TENSOR = struct.Struct("@PiiiiqPPqPPPP")
assert TENSOR.size == ctypes.sizeof(TensorOut)
_SHAPES: dict[int, struct.Struct] = {}


def tensor_fields(addr: int) -> tuple[Any, ...]:
    """The fields of the loch_tensor at ``addr`` (see TENSOR)."""
    return TENSOR.unpack_from(MEMORY, addr)


def tensors_fields(addr: int, n: int) -> Iterator[tuple[Any, ...]]:
    """The fields of the n loch_tensors of the array at ``addr``, read as
    the iterator goes (through MEMORY): finish it while the array is
    alive."""
    return TENSOR.iter_unpack(MEMORY[addr : addr + n * TENSOR.size]) if n else iter(())


def _shape(addr: int, ndim: int) -> tuple[int, ...]:
    st = _SHAPES.get(ndim)
    if st is None:
        st = _SHAPES[ndim] = struct.Struct(f"@{ndim}q")
    return st.unpack_from(MEMORY, addr) if ndim else ()


# dtype code -> (name, numpy dtype or None, the dtype's typestr when an
# array can be made from the buffer with it, else None).
_DTYPES: dict[int, tuple[str, np.dtype | None, str | None]] = {}


def _dtype(code: int) -> tuple[str, np.dtype | None, str | None]:
    got = _DTYPES.get(code)
    if got is None:
        name = dtypes.name(code)
        dt = dtypes.numpy_dtype(name)
        got = _DTYPES[code] = (name, dt, dt.str if dt is not None and dt.kind != "V" else None)
    return got


def _decode(dtype: str, raw: bytes) -> Any:
    if dtype == "text":
        return raw.decode("utf-8")
    if dtype == "json":
        return json.loads(raw)
    return raw


def tensor_value(lib: Library, t: TensorOut, *, stack: bool) -> tuple[Value, np.ndarray | None, np.ndarray | None]:
    """Converts a tensor handed over by Go into (value, sample shapes,
    null flags), taking ownership of its data buffer.

    Dense tensors become one array (padded when ragged: the sample shapes
    are then returned). Packed tensors become a list of per-sample values,
    or, with ``stack`` and samples of one shape and no nulls, one array.
    """
    return fields_value(lib, tensor_fields(ctypes.addressof(t)), stack=stack)


def fields_value(lib: Library, f: tuple[Any, ...], *, stack: bool) -> tuple[Value, np.ndarray | None, np.ndarray | None]:
    """:func:`tensor_value` of a tensor read with :func:`tensor_fields`."""
    _, code, layout, ndim, _, n, shape_p, data, nbytes, sample_shapes, sample_ndims, offsets_p, nulls_p = f
    name, npdt, typestr = _dtype(code)
    nulls = ints_at(nulls_p, n, BOOL) if nulls_p else None  # Go writes 0 or 1
    if layout == DENSE:
        shape = _shape(shape_p, ndim)
        if data and typestr:
            # One array straight over the buffer (the common case).
            arr = np.asarray(Buffer(lib, data, nbytes, typestr, shape))
        else:
            raw = Buffer(lib, data, nbytes).array() if data else np.zeros(0, dtype=np.uint8)
            assert npdt is not None, name
            arr = raw.view(npdt).reshape(shape)
        shapes = ints_at(sample_shapes, n * (ndim - 1)).reshape(n, ndim - 1) if sample_shapes else None
        return arr, shapes, nulls
    raw = Buffer(lib, data, nbytes).array() if data else np.zeros(0, dtype=np.uint8)
    offsets = ints_at(offsets_p, n + 1)
    if npdt is None:
        data_b = raw.tobytes()
        out = [
            None if nulls is not None and nulls[i] else _decode(name, data_b[offsets[i] : offsets[i + 1]])
            for i in range(n)
        ]
        return out, None, nulls
    ndims = ints_at(sample_ndims, n, I32)
    flat = ints_at(sample_shapes, int(ndims.sum()))
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


# The compiled batch conversion (python/loch/_convert.c, libloch_py.so in
# loch/_lib): a loader batch made into its dict of arrays in one call, with
# about a fifth less of the consuming thread's CPU
# (bench/history/2026-11-26-issue-17.md). Built with the package where there is a C compiler and
# Python >= 3.11 (it uses the limited API of 3.11 and links to no
# libpython, so one build serves later versions too); absent, or with
# LOCH_PY_CONVERT=0 in the environment, batches are converted in Python.
CONVERT_LIB = "libloch_py.so"
_fast: Any = False  # not looked for yet; then the function, or None


def fast_convert() -> Any:
    """``loch_py_convert(batch address, ctx)`` of the compiled conversion
    (see _convert.c for ctx), or None where there is none: it is looked
    for beside the library in use, then in the package, and used only when
    it was built for the library's C ABI version (the layout of the
    batches it reads) and loads."""
    global _fast
    if _fast is False:
        _fast = None
        # Not on a free-threaded build, whose objects the stable ABI of 3.11
        # does not describe.
        free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
        if os.environ.get("LOCH_PY_CONVERT", "1") != "0" and sys.version_info >= (3, 11) and not free_threaded:
            for path in (_library.library_path().parent / CONVERT_LIB, Path(__file__).parent / "_lib" / CONVERT_LIB):
                if not path.exists():
                    continue
                try:
                    dll = ctypes.PyDLL(str(path))
                    if dll.loch_py_abi_version() != _library.ABI_VERSION:
                        continue
                    fn = dll.loch_py_convert
                except (OSError, AttributeError):  # not loadable here: convert in Python
                    continue
                fn.restype, fn.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.py_object]
                _fast = fn
                break
    return _fast


_FORMATS: dict[int, tuple[str, int]] = {}


def convert_context(lib: Library, ragged: frozenset[str]) -> tuple[Any, ...]:
    """The ctx of fast_convert for a loader's batches: its ragged columns,
    the buffer formats of the dtypes an array is made over directly (those
    _dtype gives a typestr), where sample buffers go back to Go, and
    numpy.asarray."""
    if not _FORMATS:
        for code in map(dtypes.code, dtypes.DTYPES):
            _, dt, typestr = _dtype(code)
            if typestr is not None and dt is not None:
                _FORMATS[code] = (dt.char, dt.itemsize)
    return (ragged, _FORMATS, lib.free_buffer, np.asarray)


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
    lib.flush_buffers()
    live, pooled = ctypes.c_int64(), ctypes.c_int64()
    lib.cdll.loch_buffer_stats(ctypes.byref(live), ctypes.byref(pooled))
    return {"live": live.value, "pooled": pooled.value}


def trim_buffers() -> None:
    """Frees the sample buffers Go keeps for reuse (at most 512 MiB), for
    example after a loader of large batches is done."""
    lib = _library.library()
    lib.flush_buffers()
    lib.cdll.loch_buffer_trim()
