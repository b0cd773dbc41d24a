"""Arrow, Parquet and Hugging Face ``datasets`` into loch (:mod:`loch.export`
goes the other way: ``ds.to_arrow()``, ``ds.to_huggingface()``).

One type mapping, in both directions (docs/interchange.md holds it with the
SQL types of docs/sql.md, the third face of the same table):

=============================  ============================  ==========================
loch column                    Arrow                         Hugging Face feature
=============================  ============================  ==========================
scalar bool/int*/uint*/float*  bool/int*/uint*/float*        ``Value(dtype)``
tensor of fixed shape ``s``    nested fixed-size lists       ``List(Value, length)``,
                                                             ``Array2D..5D(s, dtype)``
ragged tensor                  (nested) lists                ``List(Value)``
text                           string                        ``Value("string")``
json                           string (the JSON text)        ``Value("string")``
bytes                          binary                        ``Value("binary")``
class_label (names)            int64                         ``ClassLabel(names)``
image (png/jpeg kept as is)    HWC uint8 fixed-size lists    ``Image()``
=============================  ============================  ==========================

pyarrow and ``datasets`` are imported when these functions are called.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ._write import EncodedImage
from .dataset import Dataset, create
from .errors import InvalidArgument
from .export import BATCH_ROWS
from .schema import Bytes, ClassLabel, Column, Image, Tensor, Text

__all__ = ["schema_from_arrow", "from_arrow", "from_huggingface"]



def schema_from_arrow(schema: Any) -> dict[str, Column]:
    """A loch schema for the columns of a pyarrow schema: integers, floats
    and booleans become scalars of that dtype, strings text, binaries
    bytes, fixed-size lists (nested: several dimensions) and Ray's tensor
    extension type tensors of their element type and shape, variable lists
    of numbers ragged tensors. Any other type is
    :class:`loch.InvalidArgument` naming the column: give a schema then."""
    import pyarrow as pa

    out: dict[str, Column] = {}
    for field in schema:
        typ = field.type
        shape: list[int | None] = []
        if isinstance(typ, pa.ExtensionType) and hasattr(typ, "shape"):  # Ray's tensor types: lists of elements
            shape = [None if d is None or d < 0 else int(d) for d in typ.shape]
            typ = typ.storage_type
            while pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
                typ = typ.value_type
        while pa.types.is_fixed_size_list(typ) or pa.types.is_list(typ) or pa.types.is_large_list(typ):
            shape.append(typ.list_size if pa.types.is_fixed_size_list(typ) else None)
            typ = typ.value_type
        bad = InvalidArgument(f"column {field.name!r}: Arrow type {field.type} has no loch type (give a schema)")
        if pa.types.is_string(typ) or pa.types.is_large_string(typ):
            if shape:
                raise bad
            out[field.name] = Text()
        elif pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
            if shape:
                raise bad
            out[field.name] = Bytes()
        elif pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_boolean(typ):
            dtype = "bool" if pa.types.is_boolean(typ) else np.dtype(typ.to_pandas_dtype()).name
            out[field.name] = Tensor(dtype, shape=shape)
        else:
            raise bad
    return out


def _batches(data: Any) -> Iterator[Any]:
    """The record batches of a Table, RecordBatch, RecordBatchReader or an
    iterable of batches/tables."""
    import pyarrow as pa

    if isinstance(data, pa.Table):
        yield from data.to_batches(max_chunksize=BATCH_ROWS)
    elif isinstance(data, pa.RecordBatch):
        yield data
    elif isinstance(data, pa.RecordBatchReader):
        yield from data
    elif isinstance(data, Iterable):
        for b in data:
            yield from _batches(b)
    else:
        raise InvalidArgument(f"from_arrow: want a pyarrow Table, RecordBatch, RecordBatchReader or batches, got {type(data).__name__}")


def from_arrow(
    data: Any,
    url: str,
    *,
    schema: Mapping[str, Column] | None = None,
    message: str = "",
    storage_options: Mapping[str, str] | None = None,
) -> Dataset:
    """Creates a dataset at ``url`` from Arrow data (a Table, RecordBatch,
    RecordBatchReader or an iterable of batches, streamed: one batch in
    memory at a time) in one commit, and returns it. The schema comes from
    the first batch's (see :func:`schema_from_arrow`) unless given. A
    batch that does not fit the schema raises, and nothing is committed::

        >>> ds = loch.from_arrow(pyarrow.table({"n": [1, 2, 3]}), "mem://arrow-doc")  # doctest: +SKIP
    """
    it = _batches(data)
    first = next(it, None)
    if first is None:
        raise InvalidArgument("from_arrow: no record batches (an empty stream has no schema)")
    ds = create(url, schema if schema is not None else schema_from_arrow(first.schema), storage_options=storage_options)
    return _fill(ds, (b for b in _chain(first, it) if b.num_rows), message or "from_arrow")


def _fill(ds: Dataset, batches: Iterable[Any], message: str) -> Dataset:
    """Extends the new dataset ds with each of batches, commits them as one
    version and returns ds; on any failure, Ctrl-C too, it closes ds and
    raises again."""
    try:
        for b in batches:
            ds.extend(b)
        ds.commit(message)
    except BaseException:
        ds.close()
        raise
    return ds


def _chain(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


# Hugging Face datasets.


def _hf_column(name: str, feat: Any, first: Any) -> Column:
    """The loch column of a Hugging Face feature (see the module's table)."""
    import datasets

    kind = type(feat).__name__
    if isinstance(feat, datasets.ClassLabel):
        return ClassLabel(list(feat.names))
    if isinstance(feat, datasets.Image):
        data = (first or {}).get("bytes") or b""
        return Image("jpeg" if data[:2] == b"\xff\xd8" else "png")
    if isinstance(feat, datasets.Value):
        d = feat.dtype
        if d in ("string", "large_string"):
            return Text()
        if d in ("binary", "large_binary"):
            return Bytes()
        if d == "bool" or d.startswith(("int", "uint", "float")):
            return Tensor(d, shape=[])
    if kind in ("Array2D", "Array3D", "Array4D", "Array5D"):
        return Tensor(feat.dtype, shape=list(feat.shape))
    if kind in ("Sequence", "List", "LargeList"):
        inner = getattr(feat, "feature", None)
        length = getattr(feat, "length", -1)
        shape: list[int | None] = [None if length in (-1, None) else int(length)]
        while type(inner).__name__ in ("Sequence", "List", "LargeList"):
            ln = getattr(inner, "length", -1)
            shape.append(None if ln in (-1, None) else int(ln))
            inner = inner.feature
        if isinstance(inner, datasets.Value) and (inner.dtype == "bool" or inner.dtype.startswith(("int", "uint", "float"))):
            return Tensor(inner.dtype, shape=shape)
    raise InvalidArgument(f"from_huggingface: feature {name!r} ({feat!r}) has no loch column type")


def from_huggingface(
    hf: Any,
    url: str,
    *,
    message: str = "",
    batch_rows: int = 1000,
    storage_options: Mapping[str, str] | None = None,
) -> Dataset:
    """Creates a dataset at ``url`` from a Hugging Face ``datasets.Dataset``
    in one commit and returns it: ``Image`` features become image columns
    whose png or jpeg bytes are stored as they are (no decode), ``ClassLabel``
    class_label columns with their names, ``Sequence``/``List`` and
    ``ArrayND`` of numbers tensors, ``Value`` scalars, text or bytes. A
    feature loch cannot represent raises :class:`loch.InvalidArgument`
    before anything is created::

        >>> ds = loch.from_huggingface(datasets.load_dataset("cifar10", split="train"), "./cifar10")  # doctest: +SKIP
    """
    import datasets

    features = hf.features
    raw = hf
    for name, feat in features.items():
        if isinstance(feat, datasets.Image):
            raw = raw.cast_column(name, datasets.Image(decode=False))
    first = raw[0] if len(raw) else {}
    schema = {name: _hf_column(name, feat, first.get(name)) for name, feat in features.items()}
    images = [n for n, f in features.items() if isinstance(f, datasets.Image)]

    def batches() -> Iterator[dict[str, Any]]:
        for a in range(0, len(raw), batch_rows):
            batch = raw[a : a + batch_rows]
            cols: dict[str, Any] = {}
            for name, values in batch.items():
                if name in images:
                    cols[name] = [None if v is None else EncodedImage(_image_bytes(v)) for v in values]
                elif schema[name].dtype is not None and schema[name].kind != "text":
                    cols[name] = _stack(values, schema[name])
                else:
                    cols[name] = list(values)
            yield cols

    return _fill(create(url, schema, storage_options=storage_options), batches(), message or "from_huggingface")


def _image_bytes(v: Mapping[str, Any]) -> bytes:
    data = v.get("bytes")
    if data:
        return bytes(data)
    path = v.get("path")
    if path:
        with builtins.open(path, "rb") as f:
            return f.read()
    raise InvalidArgument("from_huggingface: an image with neither bytes nor a path")


def _stack(values: Sequence[Any], col: Column) -> Any:
    """Column values as one array when they share a shape, else a list of
    arrays (ragged)."""
    if col.kind in ("text", "json") or col.dtype in ("text", "json", "bytes"):
        return list(values)
    arrs = [None if v is None else np.asarray(v, dtype=col.dtype) for v in values]
    if arrs and all(a is not None for a in arrs) and len({a.shape for a in arrs if a is not None}) == 1:
        return np.stack(arrs)  # type: ignore[arg-type]
    return arrs


