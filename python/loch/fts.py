"""Full-text search over text and json columns (:meth:`loch.Dataset.search`
with ``text=``, :meth:`loch.Dataset.create_index` with ``kind="fts"``).

The work is the Go core's (package ``fts``): a BM25 index (k1 = 1.2,
b = 0.75) stored in the dataset and versioned with it, read by range;
rows added or changed since it was built are analysed at query time, and
a version without an index is searched by analysing every row (the calls
are :class:`loch.Dataset`'s; this module holds their results). Queries
are words (any may match, scores add up), ``"phrases"``, ``+required``,
``-excluded``, ``AND``, ``OR``, ``NOT`` and parentheses (docs/search.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["TextIndexInfo", "TextSearchResult", "text_index_info"]


@dataclass(frozen=True)
class TextIndexInfo:
    """A stored full-text index: its key (``indexes/<version>/<uid>.bm25``),
    the version it covers, its column, the rows and tokens it holds, its
    segments and the bytes written."""

    key: str
    version: str
    column: str
    docs: int
    tokens: int
    segments: int
    bytes: int
    base: str | None = None


@dataclass
class TextSearchResult:
    """The best rows for a full-text query, best first: their stable
    ``row_ids`` (uint64), BM25 ``scores`` (float64, higher is better), the
    requested ``columns`` read for those rows (``{name: [value per
    hit]}``), the ``index`` used (``None`` when every row was analysed) and
    any ``warnings`` (an index that could not be read)."""

    row_ids: np.ndarray
    scores: np.ndarray
    columns: dict[str, list[Any]] = field(default_factory=dict)
    index: str | None = None
    warnings: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.row_ids)


def text_index_info(data: dict[str, Any]) -> TextIndexInfo:
    """The TextIndexInfo of the core's JSON description of an index."""
    return TextIndexInfo(key=data["key"], version=data["version"], column=data["column"], docs=int(data["docs"]),
                         tokens=int(data["tokens"]), segments=int(data["segments"]), bytes=int(data["bytes"]),
                         base=data.get("base") or None)  # fmt: skip
