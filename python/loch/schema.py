"""Column types: what ``loch.create(url, schema={...})`` takes and
``ds.schema`` returns.

Each helper returns a :class:`Column`; the Go core validates it (kinds,
dtypes, shapes, compressions) when the dataset is created::

    >>> import loch
    >>> loch.Image()                                   # lossless png
    Column(kind='image', dtype='uint8', sample_compression='png')
    >>> loch.Tensor("float32", shape=(7,))
    Column(kind='generic', dtype='float32', shape=(7,))
    >>> loch.BBox("xywh").shape                        # [boxes, 4], boxes ragged
    (None, 4)
"""

from __future__ import annotations

import collections
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from . import dtypes
from .errors import InvalidArgument

__all__ = [
    "Column",
    "Schema",
    "Tensor",
    "Image",
    "Video",
    "Audio",
    "Mask",
    "ClassLabel",
    "BBox",
    "Embedding",
    "PointCloud",
    "Text",
    "JSON",
    "Bytes",
    "Link",
]

Shape = tuple[int | None, ...]

_SAMPLE_CODECS = ("png", "jpeg")
_CHUNK_CODECS = ("lz4", "zstd")


@dataclass(frozen=True)
class Column:
    """One column: its kind, dtype, declared shape (None in a dimension:
    ragged; ``shape=None``: any shape) and compression. The fields after
    ``bbox_normalized`` are statistics that ``ds.schema`` reports and
    :func:`loch.create` ignores."""

    kind: str = "generic"
    dtype: str | None = None
    shape: Shape | None = None
    sample_compression: str | None = None
    chunk_compression: str | None = None
    chunk_bytes: int | None = None
    class_names: tuple[str, ...] | None = None
    bbox_format: str | None = None
    bbox_normalized: bool = False
    min_shape: tuple[int, ...] | None = field(default=None, compare=False)
    max_shape: tuple[int, ...] | None = field(default=None, compare=False)
    samples: int = field(default=0, compare=False)
    stored_bytes: int = field(default=0, compare=False)
    raw_bytes: int = field(default=0, compare=False)

    def __repr__(self) -> str:
        parts = [f"kind={self.kind!r}"]
        for f in fields(self)[1:9]:
            v = getattr(self, f.name)
            if v != f.default:
                parts.append(f"{f.name}={v!r}")
        return f"Column({', '.join(parts)})"

    @property
    def ragged(self) -> bool:
        """Whether samples may differ in shape."""
        return self.shape is None or any(d is None for d in self.shape)

    def to_json(self, name: str) -> dict[str, Any]:
        """The column as an entry of a Go schema (without statistics)."""
        out: dict[str, Any] = {"name": name, "kind": self.kind}
        if self.dtype is not None:
            out["dtype"] = self.dtype
        if self.shape is not None:
            out["shape"] = list(self.shape)
        for key in ("sample_compression", "chunk_compression", "chunk_bytes", "bbox_format"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.class_names is not None:
            out["class_names"] = list(self.class_names)
        if self.bbox_normalized:
            out["bbox_normalized"] = True
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Column:
        """Reads a column entry of a Go schema."""

        def tup(v: Any) -> Any:
            return None if v is None else tuple(v)

        return cls(
            kind=d.get("kind") or "generic",
            dtype=d.get("dtype"),
            shape=tup(d.get("shape")),
            sample_compression=_none(d.get("sample_compression")),
            chunk_compression=_none(d.get("chunk_compression")),
            chunk_bytes=d.get("chunk_bytes"),
            class_names=tup(d.get("class_names")),
            bbox_format=d.get("bbox_format") or None,
            bbox_normalized=bool(d.get("bbox_normalized")),
            min_shape=tup(d.get("min_shape")),
            max_shape=tup(d.get("max_shape")),
            samples=d.get("samples", 0),
            stored_bytes=d.get("stored_bytes", 0),
            raw_bytes=d.get("raw_bytes", 0),
        )


def _none(v: str | None) -> str | None:
    return None if v in (None, "", "none") else v


class Schema(Mapping[str, Column]):
    """The columns of a dataset, in order, by name::

    >>> s = loch.Schema({"label": loch.ClassLabel(["cat", "dog"])})
    >>> list(s), s["label"].dtype
    (['label'], 'int64')
    """

    def __init__(self, columns: Mapping[str, Column]) -> None:
        self._columns = dict(columns)
        for name, col in self._columns.items():
            if not isinstance(col, Column):
                raise InvalidArgument(
                    f"schema column {name!r}: want a loch column type such as loch.Tensor(...), got {col!r}"
                )

    def __getitem__(self, name: str) -> Column:
        try:
            return self._columns[name]
        except KeyError:
            raise KeyError(f"no column {name!r} (have {list(self._columns)})") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    def __repr__(self) -> str:
        inner = ",\n".join(f"    {n!r}: {c!r}" for n, c in self._columns.items())
        return "Schema({\n" + inner + "\n})"

    def to_json(self) -> str:
        """The schema as the JSON the Go core parses."""
        return json.dumps({"columns": [c.to_json(n) for n, c in self._columns.items()]})

    @classmethod
    def from_json(cls, text: str) -> Schema:
        """Reads the JSON of a Go schema."""
        d = json.loads(text)
        return cls({c["name"]: Column.from_json(c) for c in d.get("columns") or []})


#: What a column's ``dtype`` argument may be: a loch dtype name, or a numpy
#: dtype or scalar type (``np.float32``, ``np.dtype("int64")``).
DType = str | np.dtype | type


def _dtype(dtype: DType) -> str:
    """A column's dtype as its loch name: a str as given (the Go core
    checks it), a numpy dtype or type as its name, refused with
    :class:`loch.InvalidArgument` where loch has no dtype for it."""
    if isinstance(dtype, str):
        return dtype
    if dtype is None:  # np.dtype(None) is float64
        raise InvalidArgument(f"dtype None: want a loch dtype name ({', '.join(dtypes.DTYPES)}) or a numpy dtype")
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise InvalidArgument(
            f"dtype {dtype!r}: want a loch dtype name ({', '.join(dtypes.DTYPES)}) or a numpy dtype"
        ) from None
    if dt.name in dtypes.DTYPES and dt.name not in dtypes.VARIABLE:
        return dt.name
    raise InvalidArgument(
        f"dtype {dtype!r}: loch has no dtype for numpy's {dt} "
        f"(numeric ones: {', '.join(d for d in dtypes.DTYPES if d not in dtypes.VARIABLE)}; "
        "for strings use loch.Text(), for bytes loch.Bytes())"
    )


def _shape(shape: int | Sequence[int | None] | None) -> Shape | None:
    """A declared shape: None (any), an int ``n`` (the 1-d ``(n,)``, as
    numpy takes it), or a sequence of ints and Nones (ragged dimensions)."""
    if shape is None:
        return None
    if isinstance(shape, int | np.integer) and not isinstance(shape, bool):
        return (int(shape),)
    if isinstance(shape, str | bytes) or not isinstance(shape, Sequence):
        raise InvalidArgument(
            f"shape={shape!r}: want a tuple of ints and Nones (None: a ragged dimension), an int, or None"
        )
    for d in shape:
        if d is not None and (isinstance(d, bool) or not isinstance(d, int | np.integer)):
            raise InvalidArgument(f"shape={shape!r}: dimension {d!r} is not an int or None")
    return tuple(None if d is None else int(d) for d in shape)


def _compression(compression: str | None, *, images: bool) -> dict[str, Any]:
    """Splits a compression name into sample or chunk compression."""
    if compression is None or compression == "none":
        return {}
    if compression in _SAMPLE_CODECS:
        if not images:
            raise InvalidArgument(f"compression {compression!r} is for uint8 images; use lz4 or zstd")
        return {"sample_compression": compression}
    if compression in _CHUNK_CODECS:
        return {"chunk_compression": compression}
    raise InvalidArgument(f"compression {compression!r}: want none, png, jpeg, lz4 or zstd")


def Tensor(  # noqa: N802 (a column type, named like a class)
    dtype: DType,
    shape: int | Sequence[int | None] | None = None,
    *,
    compression: str | None = None,
    chunk_bytes: int | None = None,
) -> Column:
    """A generic tensor column of ``dtype`` (a loch dtype name, or a numpy
    dtype or type): ``shape`` fixed (``(7,)``, or ``7``), ragged in some
    dimensions (``(None, 4)``) or None for any shape; ``compression`` is
    ``lz4``, ``zstd`` or None::

        >>> loch.Tensor("float32", shape=(7,), compression="lz4").chunk_compression
        'lz4'
        >>> loch.Tensor(np.float32, shape=7)
        Column(kind='generic', dtype='float32', shape=(7,))
    """
    return Column(
        kind="generic", dtype=_dtype(dtype), shape=_shape(shape), chunk_bytes=chunk_bytes,
        **_compression(compression, images=True),
    )  # fmt: skip


def Image(  # noqa: N802
    compression: str = "png",
    *,
    dtype: DType = "uint8",
    shape: Sequence[int | None] | None = None,
    chunk_bytes: int | None = None,
) -> Column:
    """An image column of HWC samples. ``compression`` is ``png``
    (lossless, the default) or ``jpeg`` per image, or ``lz4``, ``zstd`` or
    ``none`` per chunk (images stored decoded: the fastest to train on)::

        >>> loch.Image("lz4").chunk_compression
        'lz4'
    """
    return Column(
        kind="image", dtype=_dtype(dtype), shape=_shape(shape), chunk_bytes=chunk_bytes,
        **_compression(compression, images=True),
    )  # fmt: skip


def Video(compression: str | None = None, *, shape: Sequence[int | None] | None = None) -> Column:  # noqa: N802
    """A video column of uint8 [frames, height, width, channels] samples."""
    return Column(kind="video", dtype="uint8", shape=_shape(shape), **_compression(compression, images=False))


def Audio(  # noqa: N802
    dtype: DType = "float32", *, shape: Sequence[int | None] | None = None, compression: str | None = None
) -> Column:
    """An audio column of [samples] or [samples, channels] samples."""
    return Column(kind="audio", dtype=_dtype(dtype), shape=_shape(shape), **_compression(compression, images=False))


def Mask(  # noqa: N802
    dtype: DType = "bool", *, shape: Sequence[int | None] | None = None, compression: str | None = None
) -> Column:
    """A mask column of [height, width] or [height, width, n] samples."""
    name = _dtype(dtype)
    return Column(kind="mask", dtype=name, shape=_shape(shape), **_compression(compression, images=name == "uint8"))


def ClassLabel(  # noqa: N802
    names: Sequence[str] | None = None, *, dtype: DType = "int64", multi: bool = False
) -> Column:
    """A class label column: one label per row (shape ``()``), or several
    with ``multi=True``; labels are checked against ``names`` when given
    (each name once: label ``i`` is ``names[i]``)::

        >>> loch.ClassLabel(["cat", "dog"]).class_names
        ('cat', 'dog')
    """
    if isinstance(names, str):
        raise InvalidArgument(f"ClassLabel({names!r}): want a list of class names, got a single str")
    if names is not None:
        names = tuple(names)
        twice = sorted(n for n, k in collections.Counter(names).items() if k > 1)  # linear: 21k ImageNet classes
        if twice:
            raise InvalidArgument(
                f"ClassLabel: class names {twice} are given more than once: each label stands for one name"
            )
    return Column(
        kind="class_label", dtype=_dtype(dtype), shape=(None,) if multi else (),
        class_names=None if names is None else tuple(names),
    )  # fmt: skip


def BBox(format: str = "xyxy", *, dtype: DType = "float32", normalized: bool = False) -> Column:  # noqa: N802, A002
    """A bounding box column of [boxes, 4] samples in ``format``: ``xyxy``,
    ``xywh`` (COCO) or ``cxcywh`` (YOLO)."""
    return Column(kind="bbox", dtype=_dtype(dtype), shape=(None, 4), bbox_format=format, bbox_normalized=normalized)


def Embedding(dim: int, *, dtype: DType = "float32", compression: str | None = None) -> Column:  # noqa: N802
    """An embedding column of [dim] vectors (float, or int8/uint8 quantized)."""
    return Column(kind="embedding", dtype=_dtype(dtype), shape=(int(dim),), **_compression(compression, images=False))


def PointCloud(  # noqa: N802
    channels: int | None = 3, *, dtype: DType = "float32", compression: str | None = None
) -> Column:
    """A point cloud column of [points, channels] samples (channels >= 3)."""
    return Column(
        kind="point_cloud", dtype=_dtype(dtype), shape=(None, channels), **_compression(compression, images=False)
    )


def Text(*, compression: str | None = None) -> Column:  # noqa: N802
    """A UTF-8 text column; samples are ``str``."""
    return Column(kind="text", dtype="text", **_compression(compression, images=False))


def JSON(*, compression: str | None = None) -> Column:  # noqa: N802
    """A JSON column; samples are any JSON-encodable value."""
    return Column(kind="json", dtype="json", **_compression(compression, images=False))


def Bytes(*, compression: str | None = None) -> Column:  # noqa: N802
    """A column of opaque byte strings; samples are ``bytes``."""
    return Column(kind="generic", dtype="bytes", **_compression(compression, images=False))


def Link() -> Column:  # noqa: N802
    """A link column: a URL or path per row, fetched on demand
    (:meth:`loch.Dataset.fetch`)."""
    return Column(kind="link", dtype="text")
