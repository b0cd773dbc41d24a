"""The values of nearest-neighbour search over embedding columns
(:meth:`loch.Dataset.search`, :meth:`loch.Dataset.create_index`,
:meth:`loch.Dataset.update_index`), and the checks of its arguments.

The work is the Go core's (package ``vector``): an exact search streams the
column's chunks on all cores; an IVF-flat index, stored in the dataset and
versioned with it, answers faster. A ``where`` filter is SQL run as
:meth:`loch.Dataset.query` runs it, whose row ids the core then searches
among.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import InvalidArgument

__all__ = ["METRICS", "IndexInfo", "SearchResult", "check_metric", "index_info", "query_matrix"]

METRICS = ("cosine", "l2", "dot")


@dataclass(frozen=True)
class IndexInfo:
    """A stored index: its key (``indexes/<version>/<uid>.<metric>``), the
    version it covers, its column, metric, dimensions, rows, lists, the
    bytes written, its ``kind`` (``"ivf-flat"`` or ``"ivf-pq"``) and, for
    ivf-pq, its ``m`` subquantizers."""

    key: str
    version: str
    column: str
    metric: str
    dim: int
    rows: int
    nlist: int
    bytes: int
    base: str | None = None
    kind: str = "ivf-flat"
    m: int | None = None


@dataclass
class SearchResult:
    """The nearest rows to one query vector, nearest first: their stable
    ``row_ids`` (uint64), ``distances`` (float32: cosine ``1 - cos``, l2
    the Euclidean distance, dot the negated inner product), the requested
    ``columns`` read for those rows (``{name: [value per hit]}``), the
    ``index`` used (``None`` for an exact search) and any ``warnings``
    (an index that could not be read, so the search was exact)."""

    row_ids: np.ndarray
    distances: np.ndarray
    columns: dict[str, list[Any]] = field(default_factory=dict)
    index: str | None = None
    warnings: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.row_ids)


def check_metric(metric: str) -> str:
    """Returns ``metric`` when it is one of :data:`METRICS`, else raises
    :class:`loch.InvalidArgument`."""
    if metric not in METRICS:
        raise InvalidArgument(f"metric {metric!r}: want one of {', '.join(METRICS)}")
    return metric


def index_info(data: dict[str, Any]) -> IndexInfo:
    """The :class:`IndexInfo` of the core's JSON description."""
    return IndexInfo(key=data["key"], version=data["version"], column=data["column"], metric=data["metric"],
                     dim=int(data["dim"]), rows=int(data["rows"]), nlist=int(data["nlist"]),
                     bytes=int(data["bytes"]), base=data.get("base") or None,
                     kind=data.get("type") or "ivf-flat", m=data.get("m") or None)  # fmt: skip


def query_matrix(vector: Any) -> tuple[np.ndarray, bool]:
    """Query vectors as a C-contiguous float32 ``[n, d]`` array, and
    whether ``vector`` was one vector ``[d]``; raises
    :class:`loch.InvalidArgument` for another shape, a non-numeric dtype,
    NaN or infinity::

        >>> query_matrix([1, 2, 3])[0].shape, query_matrix([1, 2, 3])[1]
        ((1, 3), True)
    """
    q = np.asarray(vector)
    if q.dtype.kind not in "fiu":
        raise InvalidArgument(f"query vector of dtype {q.dtype}: want numbers")
    single = q.ndim == 1
    if single:
        q = q[None, :]
    if q.ndim != 2 or q.shape[0] == 0 or q.shape[1] == 0:
        raise InvalidArgument(f"query vectors of shape {np.asarray(vector).shape}: want [d] or [n, d]")
    q = np.ascontiguousarray(q, dtype=np.float32)
    if not np.isfinite(q).all():
        bad = int(np.argwhere(~np.isfinite(q))[0][0])
        raise InvalidArgument(f"query vector {bad} holds NaN or infinity: want finite numbers")
    return q, single
