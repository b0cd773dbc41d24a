"""Reads of a dataset (the part of :class:`loch.Dataset` that reads rows
by position): rows and columns by index and slice
(:class:`ColumnReader`), row ids and positions, linked objects, and the
fragments' row counts.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._buffers import Value, free_tensor, tensor_value
from ._library import TensorOut
from ._snapshot import Snapshot
from .errors import InvalidArgument
from .schema import Column

__all__ = ["ColumnReader", "Reads"]


class Reads(Snapshot):
    """The reads of :class:`loch.Dataset` (see there)."""

    def __getitem__(self, key: str | int | slice) -> Any:
        """``ds["col"]`` is a :class:`ColumnReader`; ``ds[i]`` the row at
        position i as a dict; ``ds[a:b]`` the rows' columns as a dict."""
        if isinstance(key, str):
            if key not in self.schema:
                raise KeyError(f"no column {key!r} (have {list(self.schema)})")
            return ColumnReader(self, key)
        return {name: ColumnReader(self, name)[key] for name in self.schema}

    def __getitems__(self, positions: Sequence[int]) -> list[dict[str, Any]]:
        """The rows at these positions, as ``[ds[i] for i in positions]``
        would give them, read with one call per column: what a PyTorch
        DataLoader over the dataset (map-style) asks for each batch::

            >>> loader = torch.utils.data.DataLoader(loch.open(url), batch_size=64, num_workers=4)  # doctest: +SKIP
        """
        columns = {name: ColumnReader(self, name)[list(positions)] for name in self.schema}
        return [{name: _sample(v, k) for name, v in columns.items()} for k in range(len(positions))]

    def _read(self, column: str, positions: Sequence[int] | None, start: int = 0, end: int = 0, *,
              stack: bool) -> Value:  # fmt: skip
        """A column's samples at ``positions``, or at positions [start,
        end) when None: stacked into one array where they allow it, with
        ``stack``; else a list."""
        if positions is None:
            return self._read_tensor("loch_dataset_read_range", column.encode(), start, end, stack=stack)
        pos = np.ascontiguousarray(positions, dtype=np.int64)
        return self._read_tensor("loch_dataset_read", column.encode(), pos.ctypes.data, len(pos), stack=stack)

    def _read_tensor(self, fn: str, *args: Any, stack: bool = False) -> Value:
        """The samples that the C function ``fn`` (one of the
        ``loch_dataset_read*`` family, whose last argument receives a
        loch_tensor) reads from this snapshot given ``args``, taken from
        the tensor, which is then freed."""
        h = self._reading()
        out = ctypes.POINTER(TensorOut)()
        h.call(fn, *args, ctypes.byref(out))
        try:
            value, _, _ = tensor_value(h.lib, out.contents, stack=stack)
        finally:
            free_tensor(h.lib, out)
        return value

    def fetch(self, column: str, position: int) -> bytes:
        """Reads the object that a link column's row refers to (an
        ``http(s)://``, ``s3://``, ``gs://`` or ``az://`` URL, or a path or
        ``file://`` URL), as the dataset's :class:`loch.LinkPolicy` allows
        (``links=`` of :func:`open`; by default no loopback, private,
        link-local or cloud metadata address and no other bucket than the
        dataset's own; a refused link raises :class:`loch.PermissionDenied`
        naming the row and the address), with the environment's credentials
        (a dataset's ``storage_options`` are its own, not its links')::

            >>> jpeg = ds.fetch("original", 0)          # doctest: +SKIP
        """
        return bytes(self._read_tensor("loch_dataset_fetch", column.encode(), int(position))[0])

    def row_ids(self, start: int = 0, end: int | None = None) -> np.ndarray:
        """The stable ids (uint64) of the rows at positions [start, end),
        for :meth:`update` and :meth:`delete`."""
        n = len(self)
        end = n if end is None else end
        out = np.empty(max(end - start, 0), dtype=np.uint64)
        self._reading().call("loch_dataset_row_ids", start, end, out.ctypes.data)
        return out

    def positions(self, row_ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """The positions (int64) in this handle's version of the rows with
        these stable ids, in the order given; :class:`loch.NotFound` when
        one is not a live row of it."""
        ids = np.ascontiguousarray(row_ids, dtype=np.uint64)
        out = np.empty(len(ids), dtype=np.int64)
        self._reading().call("loch_dataset_positions", ids.ctypes.data, len(ids), out.ctypes.data)
        return out

    def fragment_rows(self) -> list[int]:
        """The live rows of each fragment of the handle's version, in row
        order (they sum to ``len(ds)``): the units of a parallel read
        (:func:`loch.ray.read` makes one task per group of them)."""
        out: list[int] = self._h.lib.call_json("loch_dataset_fragment_rows", self._h.value)
        return out


def _sample(value: Value, k: int) -> Any:
    """Sample k of a column's stacked read, as ``ColumnReader[i]`` gives
    one sample (a 0-d array as its scalar)."""
    v = value[k]
    return v[()] if isinstance(v, np.ndarray) and v.ndim == 0 else v


class ColumnReader:
    """Reads one column: ``ds["angles"][10]`` is one sample,
    ``ds["camera"][0:64]`` an array of 64 (a list when the samples' shapes
    differ or some are empty), ``ds["x"][[3, 1, 2]]`` samples at those
    positions::

        >>> ds["angles"][0].dtype                       # doctest: +SKIP
        dtype('float32')
    """

    def __init__(self, dataset: Reads, name: str) -> None:
        self._ds = dataset
        self.name = name

    @property
    def column(self) -> Column:
        """The column's type and statistics."""
        return self._ds.schema[self.name]

    def __len__(self) -> int:
        """The dataset's number of rows."""
        return len(self._ds)

    def __repr__(self) -> str:
        return f"<loch.ColumnReader {self.name!r} {self.column!r}>"

    def __getitem__(self, key: int | slice | Sequence[int] | np.ndarray) -> Any:
        """One sample (an int position, negative from the end), or the
        samples at a slice, a list of positions or a boolean mask, stacked
        into one array where their shapes allow it (else a list)."""
        n = len(self._ds)
        if isinstance(key, (int, np.integer)):
            i = int(key)
            if i < 0:
                i += n
            if not 0 <= i < n:
                raise IndexError(f"row {key} out of range for {n} rows")
            v = self._ds._read(self.name, [i], stack=False)[0]
            return v[()] if isinstance(v, np.ndarray) and v.ndim == 0 else v
        if isinstance(key, slice):
            start, stop, step = key.indices(n)
            if step == 1:
                return self._ds._read(self.name, None, start, max(start, stop), stack=True)
            return self._ds._read(self.name, list(range(start, stop, step)), stack=True)
        pos = np.asarray(key)
        if pos.dtype == bool:
            pos = np.flatnonzero(pos)
        if pos.ndim != 1 or (pos.size and pos.dtype.kind not in "iu"):
            raise InvalidArgument(f"column index {key!r}: want an int, a slice or a list of ints")
        pos = np.where(pos < 0, pos + n, pos)
        if pos.size and (pos.min() < 0 or pos.max() >= n):
            raise IndexError(f"rows {key!r} out of range for {n} rows")
        return self._ds._read(self.name, pos.tolist(), stack=True)

    def read(
        self,
        i: int,
        frames: slice | None = None,
        size: tuple[int, int] | None = None,
        segment: tuple[int, int] | None = None,
        rate: int | None = None,
    ) -> Any:
        """Row ``i``'s sample, or part of a video or audio sample read from
        storage by range.

        For a video column (sample compression ``video``) with ``frames``,
        only those frames, decoded from the keyframe before the first: a
        uint8 array ``[frames, height, width, 3]``, resized to
        ``size=(width, height)`` if given::

            >>> clip = ds["clip"].read(0, frames=slice(30, 62, 2))   # doctest: +SKIP
            >>> clip.shape                                           # doctest: +SKIP
            (16, 360, 640, 3)

        For an audio column (sample compression ``audio``) with
        ``segment=(start, n)``, the ``n`` samples from sample ``start``
        (fewer where the audio ends), decoded from a seek to the segment
        (a PCM wav reads only its header and the segment's bytes); with
        ``rate``, resampled to that many samples per second, ``start`` and
        ``n`` then counting samples at that rate; with ``rate`` alone, the
        whole audio at that rate. A float32 array ``[samples, channels]``
        whose samples are those of the whole file's decode::

            >>> seg = ds["sound"].read(0, segment=(48000, 16000), rate=16000)   # doctest: +SKIP
            >>> seg.shape                                                         # doctest: +SKIP
            (16000, 2)
        """
        if frames is None and segment is None and rate is None:
            return self[i]
        n = len(self._ds)
        row = i + n if i < 0 else i
        if not 0 <= row < n:
            raise IndexError(f"row {i} out of range for {n} rows")
        if frames is not None:
            if segment is not None or rate is not None:
                raise InvalidArgument("read: frames is for video columns, segment and rate for audio: give one or the other")
            if frames.step is not None and frames.step < 1 or (frames.start or 0) < 0 or (frames.stop or 0) < 0:
                raise InvalidArgument(f"frames {frames!r}: want a slice with start, stop >= 0 and step >= 1")
            w, h = size if size is not None else (0, 0)
            stop = -1 if frames.stop is None else frames.stop
            return self._ds._read_tensor("loch_dataset_read_frames", self.name.encode(), row, frames.start or 0, stop,
                                         frames.step or 1, int(w), int(h))[0]  # fmt: skip
        if size is not None:
            raise InvalidArgument("read: size is for video frames, not audio")
        start, count = (0, -1) if segment is None else (int(segment[0]), int(segment[1]))
        if start < 0 or (segment is not None and count < 0) or (rate is not None and int(rate) < 1):
            raise InvalidArgument(f"segment {segment!r} at rate {rate!r}: want start, n >= 0 and a positive rate")
        return self._ds._read_tensor("loch_dataset_read_audio", self.name.encode(), row, int(start), int(count),
                                     int(rate or 0))[0]  # fmt: skip

    def __iter__(self) -> Any:
        """The column's samples in row order, one read each."""
        for i in range(len(self)):
            yield self[i]
