"""A dataset's version as Arrow record batches or a Hugging Face
``datasets.Dataset``: :meth:`loch.Dataset.to_arrow` and
:meth:`loch.Dataset.to_huggingface`, with the types of docs/interchange.md
(:mod:`loch.interchange` goes the other way). pyarrow and ``datasets`` are
imported when these are called.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from .errors import InvalidArgument
from .schema import Column

__all__ = ["to_arrow", "to_huggingface"]

BATCH_ROWS = 4096


class Dataset(Protocol):
    """What this module uses of a :class:`loch.Dataset` (which imports this
    module: it cannot import it back)."""

    url: str
    schema: Mapping[str, Column]

    def __len__(self) -> int: ...
    def __getitem__(self, key: Any) -> Any: ...


def _arrow_type(col: Column) -> Any:
    """The Arrow type of a loch column (see the module's table), or None
    for a column of any shape (then taken from the data)."""
    import pyarrow as pa

    if col.dtype in ("text", "json") or col.kind in ("text", "json", "link"):
        return pa.string()
    if col.dtype == "bytes":
        return pa.binary()
    if col.shape is None or col.dtype is None:
        return None
    typ = pa.from_numpy_dtype(np.dtype(col.dtype))
    for d in reversed(col.shape):
        typ = pa.list_(typ) if d is None else pa.list_(typ, d)
    return typ


def _arrow_column(values: Any, col: Column) -> Any:
    """A column read from loch as an Arrow array (see the module's table)."""
    import pyarrow as pa

    typ = _arrow_type(col)
    if isinstance(values, np.ndarray) and values.dtype != object and (values.ndim == 1 or not col.ragged):
        if values.ndim == 1:
            return pa.array(values, type=typ)
        arr = pa.array(values.reshape(-1))
        for size in reversed(values.shape[1:]):
            arr = pa.FixedSizeListArray.from_arrays(arr, size)
        return arr
    out = []
    for v in values:
        if v is None:
            out.append(None)
        elif col.kind == "json":
            out.append(json.dumps(v))
        elif isinstance(v, np.ndarray):
            out.append(v.tolist())
        elif isinstance(v, np.generic):
            out.append(v.item())
        else:
            out.append(v)
    return pa.array(out, type=typ)


def to_arrow(ds: Dataset, columns: Sequence[str] | None = None, batch_rows: int = BATCH_ROWS) -> Any:
    """The handle's version as a ``pyarrow.RecordBatchReader`` of batches
    of ``batch_rows`` rows, read as the reader is consumed (see the module's
    table for the types). ``reader.read_all()`` makes one Table."""
    import pyarrow as pa

    names = list(columns) if columns is not None else list(ds.schema)
    for c in names:
        if c not in ds.schema:
            raise InvalidArgument(f"to_arrow {ds.url}: no column {c!r} (have {list(ds.schema)})")
    n = len(ds)
    types = [_arrow_type(ds.schema[c]) for c in names]
    if any(t is None for t in types):  # a column of any shape: its first rows say
        first = [_arrow_column(ds[c][0:min(n, 1)], ds.schema[c]) for c in names]
        types = [t if t is not None else a.type for t, a in zip(types, first)]
    sch = pa.schema([pa.field(c, t) for c, t in zip(names, types)])

    def gen() -> Iterator[Any]:
        for a in range(0, n, batch_rows):
            b = min(n, a + batch_rows)
            arrays = [_arrow_column(ds[c][a:b], ds.schema[c]) for c in names]
            yield pa.RecordBatch.from_arrays([x.cast(f.type) if x.type != f.type else x for x, f in zip(arrays, sch)], schema=sch)

    return pa.RecordBatchReader.from_batches(sch, gen())


def _hf_feature(col: Column) -> Any:
    import datasets

    if col.kind == "class_label":
        return datasets.ClassLabel(names=list(col.class_names or ()))
    if col.kind == "image":
        return datasets.Image()
    if col.dtype == "text" or col.kind in ("text", "json", "link"):
        return datasets.Value("string")
    if col.dtype == "bytes":
        return datasets.Value("binary")
    shape = list(col.shape) if col.shape is not None else None
    if shape == []:
        return datasets.Value(col.dtype)
    if shape is not None and len(shape) == 1:
        return datasets.List(datasets.Value(col.dtype), length=-1 if shape[0] is None else shape[0])
    if shape is not None and 2 <= len(shape) <= 5 and all(d is not None for d in shape):
        return getattr(datasets, f"Array{len(shape)}D")(shape=tuple(shape), dtype=col.dtype)
    if shape is not None and 2 <= len(shape) <= 5 and all(d is not None for d in shape[1:]):
        return getattr(datasets, f"Array{len(shape)}D")(shape=(None, *shape[1:]), dtype=col.dtype)
    raise InvalidArgument(f"to_huggingface: a {col.kind} column of shape {shape} has no Hugging Face feature")


def to_huggingface(ds: Dataset, columns: Sequence[str] | None = None) -> Any:
    """The handle's version as an in-memory ``datasets.Dataset`` (for
    datasets that fit in memory), with the features of the module's table:
    images decoded to HWC arrays (``Image`` re-encodes them), class labels
    with their names."""
    import datasets

    names = list(columns) if columns is not None else list(ds.schema)
    n = len(ds)
    feats = datasets.Features({c: _hf_feature(ds.schema[c]) for c in names})
    data: dict[str, Any] = {}
    for c in names:
        col = ds.schema[c]
        values = ds[c][0:n]
        if col.kind == "json":
            values = [json.dumps(v) for v in values]
        elif isinstance(values, np.ndarray) and values.dtype != object and values.ndim > 1 and col.kind != "image":
            values = list(values)
        elif not isinstance(values, list):
            values = list(values)
        data[c] = values
    return datasets.Dataset.from_dict(data, features=feats)
