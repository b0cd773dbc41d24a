"""Hybrid search: a query vector and a full-text query fused into one
ranking (:meth:`loch.Dataset.search` with both ``vector`` and ``text``, or
with ``fusion=``).

The work is the Go core's (package ``hybrid``): the vector search of an
embedding column and the BM25 search of a text or json column, each among
the rows a ``where`` filter passes and each through its column's index
when one serves the version, return their ``rank_window`` best rows
(default ``k``), fused by reciprocal rank (``fusion="rrf"``, the default:
score = sum of 1 / (``rrf_k`` + rank), rrf_k = 60 as LanceDB and
Elasticsearch) or by weighted scores (``fusion="weighted"``: each list's
scores normalised to [0, 1] by min-max, distances inverted so the nearest
is 1, then ``weight`` x vector + (1 - ``weight``) x text). The result
(:class:`HybridSearchResult`) is a selection that trains like any other
(:meth:`HybridSearchResult.selection`). docs/search.md has the details.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import InvalidArgument

if TYPE_CHECKING:
    from .query import Selection

__all__ = ["FUSIONS", "HybridSearchResult", "hybrid_options"]

#: The fusion methods.
FUSIONS = ("rrf", "weighted")


@dataclass
class HybridSearchResult:
    """The best rows of a hybrid search, best first: their stable
    ``row_ids`` (uint64) and fused ``scores`` (float64, higher is better);
    for each side, the row's rank from 1 (0 where that side did not rank
    it: ``vector_ranks``, ``text_ranks``, int64), its ``distances``
    (float32) and its BM25 ``text_scores`` (float64; both 0 where not
    ranked); the ``columns`` asked for (``{name: [value per hit]}``); the
    ``version`` searched, the columns searched, the ``vector_index`` and
    ``text_index`` used (``None``: searched without one), ``warnings``,
    and ``sql``, the same search as an SQL ``hybrid_search`` query.

    :meth:`selection` is the result as a :class:`loch.Selection` (rows in
    fused order) whose loaders train on those rows::

        >>> hits = ds.search(q, text="red car", where="label = 3", k=10)  # doctest: +SKIP
        >>> loader = hits.selection().pytorch(batch_size=32)           # doctest: +SKIP
    """

    row_ids: np.ndarray
    scores: np.ndarray
    vector_ranks: np.ndarray
    distances: np.ndarray
    text_ranks: np.ndarray
    text_scores: np.ndarray
    version: str
    sql: str
    vector_column: str | None = None
    text_column: str | None = None
    columns: dict[str, list[Any]] = field(default_factory=dict)
    vector_index: str | None = None
    text_index: str | None = None
    warnings: list[str] = field(default_factory=list)
    _selection: Selection | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.row_ids)

    def selection(self) -> Selection:
        """The result as a :class:`loch.Selection` of its version: its rows
        in fused order, its ``sql`` the same search in SQL. Its loaders
        (``.pytorch()``, ``.numpy()``, ...) read those rows, ``save(name)``
        keeps it in the dataset like a query's selection."""
        if self._selection is None:
            raise InvalidArgument("this hybrid search result was made without its dataset: it has no selection")
        return self._selection


def hybrid_options(column: str | None, text_column: str | None, metric: str, fusion: str | None, weight: float, rrf_k: float,
                   rank_window: int | None, nprobe: int | None, rerank: int | None, exact: bool, where: str | None) -> dict[str, Any]:  # fmt: skip
    """The options JSON of ``loch_hybrid_search``, checked."""
    fusion = fusion or "rrf"
    if fusion not in FUSIONS:
        raise InvalidArgument(f"fusion {fusion!r}: want one of {', '.join(FUSIONS)}")
    if not 0 <= float(weight) <= 1:
        raise InvalidArgument(f"weight = {weight}: want a number in [0, 1]")
    return {"column": column or "", "text_column": text_column or "", "metric": metric, "fusion": fusion, "weight": float(weight),
            "rrf_k": float(rrf_k), "rank_window": int(rank_window or 0), "nprobe": int(nprobe or 0), "rerank": int(rerank or 0),
            "exact": bool(exact), "where": where or ""}  # fmt: skip
