"""Full-text search over text and json columns (:meth:`loch.Dataset.search`
with ``text=``, :meth:`loch.Dataset.create_index` with ``kind="fts"``).

The work is the Go core's (package ``fts``): a BM25 index (k1 = 1.2,
b = 0.75) stored in the dataset and versioned with it, read by range;
rows added or changed since it was built are analysed at query time, and
a version without an index is searched by analysing every row. Queries
are words (any may match, scores add up), ``"phrases"``, ``+required``,
``-excluded``, ``AND``, ``OR``, ``NOT`` and parentheses (docs/search.md).
"""

from __future__ import annotations

import json
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .errors import InvalidArgument

if TYPE_CHECKING:
    from .dataset import Dataset

__all__ = ["TextIndexInfo", "TextSearchResult", "create_index", "search", "update_index"]


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


def _info(data: dict[str, Any]) -> TextIndexInfo:
    return TextIndexInfo(key=data["key"], version=data["version"], column=data["column"], docs=int(data["docs"]),
                         tokens=int(data["tokens"]), segments=int(data["segments"]), bytes=int(data["bytes"]),
                         base=data.get("base") or None)  # fmt: skip


def create_index(ds: Dataset, column: str) -> TextIndexInfo:
    """Builds the full-text index of ``column`` at ``ds``'s version."""
    return _info(ds._read_json("loch_fts_build", column.encode()))


def update_index(ds: Dataset, column: str) -> TextIndexInfo:
    """Writes the full-text index of ``ds``'s version from its newest
    indexed ancestor's: the rows changed since in a new segment."""
    return _info(ds._read_json("loch_fts_update", column.encode()))


# The (handle, version, column) whose index the core keeps open: a search
# of them is short, and made without the interruptible call's thread
# (which costs more than the search).
_opened: weakref.WeakKeyDictionary[Any, set[tuple[str, str]]] = weakref.WeakKeyDictionary()


def _open(ds: Dataset, column: str) -> None:
    """Has the core open the index of ``column`` for ``ds``'s version
    (interruptible: it may analyse many rows), once."""
    seen = _opened.setdefault(ds._reading(), set())
    version = ds.version
    if (version, column) not in seen:
        ds._read_str("loch_fts_open", column.encode(), interruptible=True)
        seen.add((version, column))


def search(ds: Dataset, text: str, k: int, column: str, where: str | None, columns: Sequence[str]) -> TextSearchResult:
    """The ``k`` best rows of ``ds``'s version for the query ``text`` in
    ``column``, among those ``where`` lets through."""
    from ._reads import ColumnReader

    if k <= 0:
        raise InvalidArgument(f"k = {k}: want k >= 1")
    if not isinstance(text, str):
        raise InvalidArgument(f"text of type {type(text).__name__}: want a str query")
    for c in columns:
        if c not in ds.schema:
            raise KeyError(f"no column {c!r} (have {list(ds.schema)})")
    allowed: np.ndarray | None = None
    if where is not None:
        allowed = np.ascontiguousarray(ds.query(f"SELECT _rowid FROM ds WHERE {where}").row_ids, dtype=np.uint64)
    here = ds._here()
    _open(ds, column)
    ids = np.zeros(k, dtype=np.uint64)
    scores = np.zeros(k, dtype=np.float64)
    count = np.zeros(1, dtype=np.int64)
    meta = json.loads(ds._read_str(
        "loch_fts_search", column.encode(), text.encode(), k,
        None if allowed is None or len(allowed) == 0 else allowed.ctypes.data, -1 if allowed is None else len(allowed),
        ids.ctypes.data, scores.ctypes.data, count.ctypes.data,
    ))  # fmt: skip
    m = int(count[0])
    r = TextSearchResult(row_ids=ids[:m].copy(), scores=scores[:m].copy(), index=meta["index"] or None, warnings=list(meta["warnings"]))
    if columns:
        pos = here.positions(r.row_ids).tolist() if m else []
        r.columns = {c: [ColumnReader(here, c)[p] for p in pos] for c in columns}
    return r
