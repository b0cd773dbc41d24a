"""Collation: a Go loader's batch (a loch_batch, C ABI) made into a dict of
numpy arrays, and the per-sample stage a ``sample_transform`` runs in.

A batch maps each loaded column to its samples, stacked (ragged samples
zero-padded to the largest, their shapes under ``"<column>.shapes"``, empty
ones flagged under ``"<column>.null"``), beside the row keys (``"index"``,
and ``"dataset"`` in a mixture). See :mod:`loch.loader`.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._buffers import MEMORY, fields_value, ints_at, tensors_fields
from ._library import BatchOut, Library

__all__ = ["BATCH", "Batch", "to_numpy", "per_sample", "same_shapes"]

#: A batch: column names (and "index", "<column>.shapes", "<column>.null")
#: to arrays or lists.
Batch = dict[str, Any]

# loch_batch (loch.h; _library.BatchOut) read in one piece: epoch, index,
# n, positions, row_ids, ncols, reserved, cols, datasets.
BATCH = struct.Struct("@qqqPPiiPP")
assert BATCH.size == ctypes.sizeof(BatchOut)


def to_numpy(lib: Library, addr: int, ragged: frozenset[str]) -> Batch:
    """The batch whose loch_batch is at ``addr`` as numpy arrays, taking its
    buffers: the general conversion, for any batch (the compiled one,
    :func:`loch._buffers.fast_convert`, handles the plain form). The
    columns in ``ragged`` get their samples' shapes under
    ``"<column>.shapes"``."""
    _, _, n, _, row_ids, ncols, _, cols, datasets = BATCH.unpack_from(MEMORY, addr)
    out: Batch = {}
    for f in tensors_fields(cols, ncols):
        name = ctypes.string_at(f[0]).decode()
        value, shapes, nulls = fields_value(lib, f, stack=True)
        out[name] = value
        if name in ragged:
            if shapes is None:  # samples of one shape
                shapes = same_shapes(n, value.shape[1:])
            out[name + ".shapes"] = shapes
        if nulls is not None:
            out[name + ".null"] = nulls
    out["index"] = ints_at(row_ids, n)  # uint64 row ids, all < 2**63
    if datasets:
        out["dataset"] = ints_at(datasets, n)
    return out


# (rows, sample shape) -> the ".shapes" array of a batch whose samples all
# have that shape, copied for each batch (filling a new array from a tuple
# costs several times the copy).
_SAME_SHAPES: dict[tuple[int, tuple[int, ...]], np.ndarray] = {}


def same_shapes(n: int, shape: tuple[int, ...]) -> np.ndarray:
    """A new (n, len(shape)) int64 array with ``shape`` in each row."""
    t = _SAME_SHAPES.get((n, shape))
    if t is None:
        if len(_SAME_SHAPES) >= 256:
            _SAME_SHAPES.clear()
        t = _SAME_SHAPES[(n, shape)] = np.empty((n, len(shape)), dtype=np.int64)
        t[:] = shape
    return t.copy()


def per_sample(
    batch: Batch, fn: Callable[[Batch], Batch], columns: Sequence[str], row_keys: Sequence[str] = ("index",)
) -> Batch:
    """Applies ``fn`` to each sample of a numpy batch of these columns and
    stacks the results again (lists where shapes differ). A sample is a
    dict of its row keys (``"index"``, the row id; ``"dataset"`` in a
    mixture) as ints and its value in each column: padding removed (by
    ``"<column>.shapes"``), None when empty (``"<column>.null"``). Column
    names may hold dots (``"emb.npy"``)::

        >>> b = {"index": np.array([7, 8]), "a.npy": np.array([[1, 0], [2, 3]]),
        ...      "a.npy.shapes": np.array([[1], [2]])}
        >>> per_sample(b, lambda row: {"n": len(row["a.npy"])}, ["a.npy"])["n"].tolist()
        [1, 2]
    """
    n = len(batch["index"])
    rows = []
    for i in range(n):
        row: Batch = {k: int(batch[k][i]) for k in row_keys}
        for k in columns:
            v = batch[k][i]
            if k + ".null" in batch and batch[k + ".null"][i]:
                v = None
            elif k + ".shapes" in batch and isinstance(v, np.ndarray):
                v = v[tuple(slice(0, int(d)) for d in batch[k + ".shapes"][i])]
            row[k] = v
        rows.append(fn(row))
    out: Batch = {}
    for k in rows[0] if rows else []:
        vals = [r[k] for r in rows]
        if all(isinstance(v, np.ndarray) for v in vals) and len({v.shape for v in vals}) == 1:
            out[k] = np.stack(vals)
        elif all(isinstance(v, (int, float, np.generic)) for v in vals):
            out[k] = np.asarray(vals)
        else:
            out[k] = vals
    return out
