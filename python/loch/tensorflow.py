"""TensorFlow: a dataset's batches as a ``tf.data.Dataset``.

    tfds = ds.tensorflow(batch_size=64, columns=["image", "label"])
    model.fit(tfds.map(lambda b: (b["image"], b["label"])), epochs=3)

Each pass over the ``tf.data.Dataset`` is the next epoch of the Go loader,
from ``epoch`` on (the rule of every loch loader, see :mod:`loch.epochs`;
a ``tf.data.Dataset`` has no ``set_epoch``: make another to start over).
The element spec comes from
the schema: ragged dimensions and the batch dimension are None; text, json
(as its JSON text) and bytes columns are ``tf.string`` vectors.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import tensorflow as tf

from . import dtypes
from .adapter import Adapter
from .loader import Batch, Loader, LoaderOptions, LoaderSettings, Source
from .schema import Schema

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["dataset", "TFDataset"]

TFDataset = tf.data.Dataset


def _strings(dtype: str, values: list[Any]) -> np.ndarray:
    def enc(v: Any) -> bytes:
        if v is None:
            return b""
        if dtype == "json":
            return json.dumps(v).encode()
        return v.encode() if isinstance(v, str) else bytes(v)

    return np.array([enc(v) for v in values], dtype=object)


def _tf_dtype(dt: np.dtype) -> tf.DType:
    return tf.bfloat16 if dt.name == "bfloat16" else tf.as_dtype(dt)


class _Elements(Adapter):
    """One :class:`loch.Loader` whose batches become elements of
    :attr:`spec`: its keys only, text, json and bytes as string vectors.
    tf.data makes the tensors, so :meth:`convert` leaves the batches as they
    are (a callable ``transform`` sees numpy arrays) and they are fitted to
    the spec last."""

    def __init__(self, loader: Loader, schema: Schema) -> None:
        super().__init__(loader)
        self.spec: dict[str, tf.TensorSpec] = {k: tf.TensorSpec(shape=(None,), dtype=tf.int64) for k in loader.row_keys}
        self._kinds: dict[str, str] = {}
        for name in loader.columns:
            col = schema[name]
            self._kinds[name] = col.dtype or ""
            if col.dtype in dtypes.VARIABLE:
                self.spec[name] = tf.TensorSpec(shape=(None,), dtype=tf.string)
                continue
            npdt = dtypes.numpy_dtype(col.dtype or "")
            tfdt = tf.bfloat16 if col.dtype == "bfloat16" else tf.as_dtype(npdt)  # also without ml_dtypes
            shape = None if col.shape is None else (None, *col.shape)
            self.spec[name] = tf.TensorSpec(shape=shape, dtype=tfdt)
            if name in loader.ragged_columns:
                ndim = None if col.shape is None else len(col.shape)
                self.spec[name + ".shapes"] = tf.TensorSpec(shape=(None, ndim), dtype=tf.int64)
        for name, (dtype, shape) in loader.joined.items():
            self._kinds[name] = dtype
            if dtype in dtypes.VARIABLE:
                self.spec[name] = tf.TensorSpec(shape=(None,), dtype=tf.string)
            else:
                self.spec[name] = tf.TensorSpec(shape=(None, *shape), dtype=_tf_dtype(np.dtype(dtypes.numpy_dtype(dtype))))
        transforms = loader.config().get("transforms") or {}
        if transforms:
            # Go transforms change dtypes and shapes: take them from a first batch.
            first = loader.peek()
            for name in transforms:
                if first is not None and isinstance(first.get(name), np.ndarray):
                    v = first[name]
                    self.spec[name] = tf.TensorSpec(shape=(None, *v.shape[1:]), dtype=_tf_dtype(v.dtype))

    def __iter__(self) -> Iterator[Batch]:
        for batch in super().__iter__():
            yield {k: _strings(self._kinds[k], batch[k]) if s.dtype == tf.string else batch[k]
                   for k, s in self.spec.items()}  # fmt: skip


def dataset(ds: Source, **options: Unpack[LoaderOptions]) -> tf.data.Dataset:
    """Returns a tf.data.Dataset of the batches of a :class:`loch.Loader`
    of ``ds`` (a dataset or a :class:`loch.Mixture`) made with ``options``
    (as dicts of tensors; see :mod:`loch.loader` for the keys, but
    ``"<column>.null"``, which is left out). Each pass over it
    is the next epoch, from ``epoch`` (default 0) on."""
    elements = _Elements(Loader.from_settings(ds, LoaderSettings(**options)), ds.schema)

    def generate() -> Iterator[Batch]:
        yield from elements

    return tf.data.Dataset.from_generator(generate, output_signature=elements.spec)
