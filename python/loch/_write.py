"""Python values of a write (extend, append, update) as the C ABI's
column input (loch_column_in), without copying numpy arrays that already
have the column's dtype and C layout."""

from __future__ import annotations

import ctypes
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import dtypes
from ._library import DENSE, ENCODING_JPEG, ENCODING_NONE, ENCODING_PNG, NULLS, PACKED, ColumnIn
from .errors import InvalidArgument
from .schema import Column

__all__ = ["EncodedImage", "columns_in", "columns_of"]


@dataclass(frozen=True)
class EncodedImage:
    """An image already encoded as png or jpeg, to store as is in an image
    column of the same compression (no decode, no re-encode) or decoded
    into any other::

        >>> ds.append({"image": loch.EncodedImage(open("cat.png", "rb").read())})  # doctest: +SKIP
    """

    data: bytes
    format: str | None = None  # "png" or "jpeg"; None: from the bytes

    def encoding(self) -> int:
        fmt = self.format
        if fmt is None:
            if self.data[:8] == b"\x89PNG\r\n\x1a\n":
                fmt = "png"
            elif self.data[:2] == b"\xff\xd8":
                fmt = "jpeg"
            else:
                raise InvalidArgument("EncodedImage: the bytes are neither png nor jpeg")
        if fmt not in ("png", "jpeg"):
            raise InvalidArgument(f"EncodedImage format {fmt!r}: want png or jpeg")
        return ENCODING_PNG if fmt == "png" else ENCODING_JPEG


class _Keep:
    """Keeps the Python objects whose memory the C input points to alive
    until the call returns."""

    def __init__(self) -> None:
        self.objects: list[Any] = []

    def __call__(self, obj: Any) -> Any:
        self.objects.append(obj)
        return obj


def _int64s(keep: _Keep, values: Sequence[int] | np.ndarray) -> Any:
    arr = keep(np.ascontiguousarray(values, dtype=np.int64))
    return arr.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))


def _nulls(keep: _Keep, flags: Sequence[bool] | np.ndarray) -> Any:
    if not any(flags):
        return None
    arr = keep(np.ascontiguousarray(flags, dtype=np.uint8))
    return arr.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8))


@dataclass(frozen=True)
class _PandasNumbers:
    """A numeric or boolean pandas column: its values as numpy holds them
    (no copy) and which of them are missing (``pandas.isna``: NaN), None
    when none is. A missing value is an empty sample, as in a pyarrow
    Table made with ``pyarrow.Table.from_pandas``."""

    values: np.ndarray
    missing: np.ndarray | None

    def __len__(self) -> int:
        return len(self.values)

    def tolist(self) -> list[Any]:
        """The values as Python's, None where missing."""
        items: list[Any] = self.values.tolist()
        if self.missing is not None:
            for i in np.flatnonzero(self.missing):
                items[i] = None
        return items


def _pandas_as_dtype(name: str, col: _PandasNumbers, npdt: np.dtype) -> np.ndarray:
    """A pandas column's values as the loch column's dtype, missing ones
    zero: cast within their kind as numpy arrays are (:func:`_as_dtype`),
    and a float column into an integer one when its values are whole
    numbers in the integer's range (pandas makes an integer column with a
    missing value float64), cast exactly."""
    values = col.values
    if col.missing is not None:
        values = np.where(col.missing, values.dtype.type(0), values)
    if npdt.kind not in "iu" or values.dtype.kind != "f":
        return _as_dtype(name, values, npdt)
    present = values if col.missing is None else values[~col.missing]
    bits = 8 * npdt.itemsize
    low, high = (-(2.0 ** (bits - 1)), 2.0 ** (bits - 1)) if npdt.kind == "i" else (0.0, 2.0**bits)
    with np.errstate(invalid="ignore"):
        bad = ~((present == np.trunc(present)) & (present >= low) & (present < high))
    if bad.any():
        v = present[np.flatnonzero(bad)[0]].item()
        raise InvalidArgument(
            f"column {name!r} holds {npdt}, got the {values.dtype} value {v!r} from a pandas column: "
            f"want whole numbers in {npdt}'s range (missing values, NaN or None, are empty samples)"
        )
    return values.astype(npdt)


def _as_dtype(name: str, value: Any, npdt: np.dtype) -> np.ndarray:
    """Converts value to an array of the column's dtype: numpy arrays are
    cast only within their kind (float64 to float32, int64 to int32, ...),
    other values converted by numpy."""
    if isinstance(value, np.ndarray):
        if value.dtype == npdt:
            return value
        if not np.can_cast(value.dtype, npdt, "same_kind"):
            raise InvalidArgument(f"column {name!r} holds {npdt}, got a {value.dtype} array: cast it with .astype()")
        return value.astype(npdt)
    try:
        return np.asarray(value, dtype=npdt)
    except (TypeError, ValueError, OverflowError) as e:
        raise InvalidArgument(f"column {name!r} holds {npdt}: {e}") from None


def _contiguous(a: np.ndarray) -> np.ndarray:
    """a, C-contiguous (np.ascontiguousarray would make 0-d arrays 1-d)."""
    return a if a.flags.c_contiguous else a.copy(order="C")


def _encode_item(name: str, dtype: str, v: Any) -> bytes:
    if dtype == "json":
        try:
            return json.dumps(v, separators=(",", ":")).encode()
        except (TypeError, ValueError) as e:
            raise InvalidArgument(f"column {name!r}: value is not JSON-encodable: {e}") from None
    if dtype == "text":
        if not isinstance(v, str):
            raise InvalidArgument(f"column {name!r} holds text, got {type(v).__name__}")
        return v.encode("utf-8")
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    raise InvalidArgument(f"column {name!r} holds bytes, got {type(v).__name__}")


def _class_indices(name: str, col: Column, value: Any) -> Any:
    """A class label column's values with its class names given for labels
    (``["cat", "dog"]``, or lists of names for several labels a row) as
    their indices in ``col.class_names``, as Hugging Face's ClassLabel
    takes them; other values as they are. An unknown name is refused,
    naming it and the column's names."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "US":
            return value
        items = value.tolist()
    elif isinstance(value, _PandasNumbers | str | bytes | Mapping) or not hasattr(value, "__len__"):
        return value  # numbers, or refused below
    else:
        items = list(value)

    def named(v: Any) -> bool:
        return isinstance(v, str) or (isinstance(v, list | tuple) and any(isinstance(x, str) for x in v))

    if not any(named(v) for v in items):
        return value
    index = {n: i for i, n in enumerate(col.class_names or ())}

    def one(v: Any) -> Any:
        if isinstance(v, str):
            if v not in index:
                raise InvalidArgument(f"column {name!r}: {v!r} is not one of its class names {list(index)}")
            return index[v]
        if isinstance(v, list | tuple):
            return [one(x) for x in v]
        return v

    return [one(v) for v in items]


def _column_in(name: str, col: Column | None, value: Any, keep: _Keep) -> tuple[int, ColumnIn]:
    """Returns (rows, input) for one column's values."""
    dtype = col.dtype if col is not None and col.dtype is not None else None
    c = ColumnIn(name=keep(name.encode()), encoding=ENCODING_NONE)
    if col is not None and col.class_names:
        value = _class_indices(name, col, value)
    if dtype is None:
        if isinstance(value, np.ndarray | _PandasNumbers):
            dtype = dtypes.from_numpy(value.dtype if isinstance(value, np.ndarray) else value.values.dtype)
        else:
            raise InvalidArgument(
                f"column {name!r} is not in the dataset's committed schema: add it with add_column() first "
                "(a column added and not committed yet takes numpy arrays only, whose dtype it is given)"
            )
    c.dtype = dtypes.code(dtype)
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__len__"):
        raise InvalidArgument(
            f"column {name!r}: want a sequence of values, one per row (got {type(value).__name__}); "
            "use append() for a single row"
        )
    if dtype in dtypes.VARIABLE:
        items = value.tolist() if isinstance(value, _PandasNumbers) else list(value)
        return len(items), _bytes_in(c, keep, [None if v is None else _encode_item(name, dtype, v) for v in items])
    npdt = dtypes.numpy_dtype(dtype)
    assert npdt is not None
    if isinstance(value, _PandasNumbers):
        if value.missing is not None:
            c.nulls = _nulls(keep, value.missing)
        value = _pandas_as_dtype(name, value, npdt)
    if isinstance(value, np.ndarray) and value.dtype != object:
        arr = _contiguous(_as_dtype(name, value, npdt))
        if arr.ndim == 0:
            raise InvalidArgument(f"column {name!r}: want one value per row, got a 0-d array")
        return arr.shape[0], _dense_in(c, keep, arr)
    return _samples_in(name, c, keep, list(value), npdt)


def _bytes_in(c: ColumnIn, keep: _Keep, parts: Sequence[bytes | None]) -> ColumnIn:
    """``c`` filled with samples of bytes, packed (None: an empty sample)."""
    data = keep(b"".join(b"" if p is None else p for p in parts))
    c.layout, c.ndim = PACKED, 1
    c.data, c.nbytes = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p), len(data)
    c.offsets = _int64s(keep, np.concatenate([[0], np.cumsum([0 if p is None else len(p) for p in parts])]))
    c.nulls = _nulls(keep, [p is None for p in parts])
    return c


def _dense_in(c: ColumnIn, keep: _Keep, arr: np.ndarray) -> ColumnIn:
    """``c`` filled with ``arr`` (C-contiguous, of the column's dtype), its
    first axis the rows, passed without a copy."""
    arr = keep(arr)
    c.layout, c.ndim = DENSE, arr.ndim - 1
    c.shape = _int64s(keep, arr.shape[1:])
    c.data, c.nbytes = arr.ctypes.data, arr.nbytes
    return c


def _samples_in(name: str, c: ColumnIn, keep: _Keep, items: list[Any], npdt: np.dtype) -> tuple[int, ColumnIn]:
    """(rows, input) of a numeric column given sample by sample: arrays
    (stacked when all have one shape, else packed with their shapes),
    :class:`EncodedImage` values, or None for an empty sample."""
    n = len(items)
    flags = [v is None for v in items]
    present = [v for v in items if v is not None]
    if not present:
        c.layout = NULLS
        return n, c
    if any(isinstance(v, EncodedImage) for v in present):
        if not all(isinstance(v, EncodedImage) for v in present):
            raise InvalidArgument(f"column {name!r}: mixes EncodedImage and array samples in one call")
        encs = {v.encoding() for v in present}
        if len(encs) > 1:
            raise InvalidArgument(f"column {name!r}: mixes png and jpeg samples in one call")
        _bytes_in(c, keep, [None if v is None else v.data for v in items])
        c.ndim, c.encoding = 3, encs.pop()
        return n, c
    arrays = [_contiguous(_as_dtype(name, v, npdt)) for v in present]
    if len({a.shape for a in arrays}) == 1 and not any(flags):
        return n, _dense_in(c, keep, np.stack(arrays))
    ndims = {a.ndim for a in arrays}
    if len(ndims) > 1:
        raise InvalidArgument(f"column {name!r}: samples of {sorted(ndims)} dimensions in one call")
    ndim = ndims.pop()
    it = iter(arrays)
    full = [np.zeros((0,) * ndim, dtype=npdt) if f else next(it) for f in flags]
    data_arr = keep(np.concatenate([a.reshape(-1) for a in full]) if full else np.zeros(0, dtype=npdt))
    c.layout, c.ndim = PACKED, ndim
    c.shape = _int64s(keep, [d for a in full for d in a.shape])
    c.data, c.nbytes = data_arr.ctypes.data, data_arr.nbytes
    c.offsets = _int64s(keep, np.concatenate([[0], np.cumsum([a.nbytes for a in full])]))
    c.nulls = _nulls(keep, flags)
    return n, c


def columns_in(schema: Mapping[str, Column], values: Mapping[str, Any]) -> tuple[int, Any, _Keep]:
    """Converts column values (one sequence of rows per column) to a ctypes
    array of ColumnIn; returns (rows, array, keep-alive)."""
    if not isinstance(values, Mapping):
        raise InvalidArgument(f"want a mapping of column names to values, got {type(values).__name__}")
    keep = _Keep()
    rows: int | None = None
    ins = []
    for name, value in values.items():
        n, c = _column_in(name, schema.get(name), value, keep)
        if rows is not None and n != rows:
            raise InvalidArgument(f"column {name!r} has {n} rows, the others {rows}")
        rows = n
        ins.append(c)
    arr = (ColumnIn * len(ins))(*ins)
    return rows or 0, arr, keep


def _missing(v: Any) -> bool:
    """Whether a value of a pandas object column stands for no sample:
    None, pandas.NA or NaT, or a float NaN."""
    if v is None:
        return True
    if isinstance(v, float):
        return math.isnan(v)
    pd = sys.modules.get("pandas")
    return pd is not None and (v is pd.NA or v is pd.NaT)


def _is_instance(value: Any, module: str, names: tuple[str, ...]) -> bool:
    """Whether value is one of module's classes ``names``, without
    importing the module: a value of its class means it is imported."""
    mod = sys.modules.get(module)
    return mod is not None and isinstance(value, tuple(getattr(mod, n) for n in names))


def _from_pandas(df: Any) -> dict[str, Any]:
    """A DataFrame's columns: where pandas holds a numeric or boolean
    column as a numpy array, that array (no copy when its dtype is the loch
    column's and nothing is missing) with its missing values (NaN) marked
    (:class:`_PandasNumbers`), else a list with None for missing values
    (NaN, None, pandas.NA). A missing value is an empty sample, as in a
    pyarrow Table made from the DataFrame."""
    out: dict[str, Any] = {}
    for name in df.columns:
        if not isinstance(name, str):
            raise InvalidArgument(f"DataFrame column {name!r}: loch column names are strings")
        s = df[name]
        if isinstance(s.dtype, np.dtype) and s.dtype.kind in "biuf":
            missing = s.isna().to_numpy() if s.dtype.kind == "f" else None
            out[name] = _PandasNumbers(s.to_numpy(), missing if missing is not None and missing.any() else None)
        else:
            out[name] = [None if _missing(v) else v for v in s.tolist()]
    return out


def _from_arrow(table: Any) -> dict[str, Any]:
    """A pyarrow Table's (or RecordBatch's) columns: a numpy array each for
    a numeric or boolean column, or a fixed-size list of one, without
    nulls; else a list of Python values (lists, str, bytes, dicts) with
    None for nulls."""
    import pyarrow as pa

    out: dict[str, Any] = {}
    for name in table.column_names:
        col = table.column(name)
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        typ, shape = col.type, [len(col)]
        while pa.types.is_fixed_size_list(typ) and col.null_count == 0:
            shape.append(typ.list_size)
            col, typ = col.flatten(), typ.value_type
        if col.null_count == 0 and (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_boolean(typ)):
            out[name] = col.to_numpy(zero_copy_only=False).reshape(shape)
        else:
            out[name] = table.column(name).to_pylist()
    return out


def _from_rows(rows: Sequence[Any]) -> dict[str, list[Any]]:
    """Rows given as mappings of column names to samples, as columns: a
    column a row leaves out is empty (None) there."""
    names: dict[str, None] = {}
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise InvalidArgument(
                f"row {i} is a {type(row).__name__}: want rows as dicts of column names to values "
                "(or one dict of columns)"
            )
        names.update(dict.fromkeys(row))
    return {name: [row.get(name) for row in rows] for name in names}


def columns_of(data: Any) -> Mapping[str, Any]:
    """The columns of a write's data (see :meth:`loch.Dataset.extend`): a
    mapping of column names to values is itself; a list of row dicts, a
    pandas DataFrame or a pyarrow Table (or RecordBatch) is converted.
    pandas and pyarrow are not imported unless such a value is given."""
    if isinstance(data, Mapping):
        return data
    if _is_instance(data, "pandas", ("DataFrame",)):
        return _from_pandas(data)
    if _is_instance(data, "pyarrow", ("Table", "RecordBatch")):
        return _from_arrow(data)
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        return _from_rows(data)
    raise InvalidArgument(
        f"want a dict of columns, a list of row dicts, a pandas DataFrame or a pyarrow Table, got {type(data).__name__}"
    )
