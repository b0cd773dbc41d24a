"""TensorFlow: a dataset's batches as a ``tf.data.Dataset``.

    tfds = ds.tensorflow(batch_size=64, columns=["image", "label"])
    model.fit(tfds.map(lambda b: (b["image"], b["label"])), epochs=3)

Each pass over the ``tf.data.Dataset`` is one epoch of the Go loader
(numbered from ``epoch``, one more each pass). The element spec comes from
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
from .loader import Batch, Loader

if TYPE_CHECKING:
    from .dataset import Dataset

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


def dataset(ds: Dataset, *, epoch: int = 0, **options: Any) -> tf.data.Dataset:
    """Returns a tf.data.Dataset of the batches of a :class:`loch.Loader`
    made with ``options`` (as dicts of tensors; see :mod:`loch.loader` for
    the keys, but ``"<column>.null"``, which is left out)."""
    loader = Loader(ds, epoch=epoch, **options)
    schema = ds.schema
    spec: dict[str, tf.TensorSpec] = {"index": tf.TensorSpec(shape=(None,), dtype=tf.int64)}
    kinds: dict[str, str] = {}
    for name in loader.columns:
        col = schema[name]
        kinds[name] = col.dtype or ""
        if col.dtype in dtypes.VARIABLE:
            spec[name] = tf.TensorSpec(shape=(None,), dtype=tf.string)
            continue
        npdt = dtypes.numpy_dtype(col.dtype or "")
        tfdt = tf.bfloat16 if col.dtype == "bfloat16" else tf.as_dtype(npdt)
        shape = None if col.shape is None else (None, *col.shape)
        spec[name] = tf.TensorSpec(shape=shape, dtype=tfdt)
        if name in loader._ragged:
            ndim = None if col.shape is None else len(col.shape)
            spec[name + ".shapes"] = tf.TensorSpec(shape=(None, ndim), dtype=tf.int64)
    if loader._config.get("transforms"):
        # Go transforms change dtypes and shapes: take them from a first batch.
        probe = Loader(ds, epoch=epoch, **dict(options, prefetch_batches=1))
        first = next(iter(probe), None)
        probe.close()
        for name in loader._config["transforms"]:
            if first is not None and isinstance(first.get(name), np.ndarray):
                v = first[name]
                tfdt = tf.bfloat16 if v.dtype.name == "bfloat16" else tf.as_dtype(v.dtype)
                spec[name] = tf.TensorSpec(shape=(None, *v.shape[1:]), dtype=tfdt)
    epochs = iter(range(epoch, 1 << 62))

    def generate() -> Iterator[Batch]:
        loader.set_epoch(next(epochs))
        for batch in loader:
            out: Batch = {}
            for k, s in spec.items():
                v = batch[k]
                out[k] = _strings(kinds[k], v) if s.dtype == tf.string else v
            yield out

    return tf.data.Dataset.from_generator(generate, output_signature=spec)
