"""Queries and vector search over a dataset (the part of
:class:`loch.Dataset` that finds rows): SQL selections (:mod:`loch.query`),
saved selections, nearest-neighbour indexes and search
(:mod:`loch.vector`), full-text indexes and search (:mod:`loch.fts`), and
hybrid search, the two fused (:mod:`loch.hybrid`).
"""

from __future__ import annotations

import functools
import json
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._reads import ColumnReader, Reads
from ._snapshot import enc
from .errors import InvalidArgument
from .vector import SearchResult, check_metric, query_matrix

if TYPE_CHECKING:
    from .fts import TextIndexInfo, TextSearchResult
    from .hybrid import HybridSearchResult
    from .query import Selection
    from .vector import IndexInfo

__all__ = ["Search"]


class Search(Reads):
    """The queries and vector search of :class:`loch.Dataset` (see there)."""

    #: Opens the dataset's URL at a version id (``loch.dataset``'s
    #: ``_open_version``, picklable): how a selection reaches its version.
    _version_opener: Callable[[str, str], Any]

    # Queries (loch.query).

    def query(self, sql: str, seed: int | None = None) -> Selection:
        """Runs SQL (DuckDB's dialect; docs/query.md) over this handle's
        version, the table ``ds``, and returns the result as a
        :class:`loch.Selection`: the version, the SQL, the seed of its
        ``random()`` and the row ids in result order, with the loaders of
        a dataset over those rows::

            >>> sel = ds.query("SELECT image, label WHERE label = 'cat' ORDER BY random()", seed=1)  # doctest: +SKIP
            >>> loader = sel.pytorch(batch_size=64)                                               # doctest: +SKIP

        A selection is rows of the dataset: a query whose rows are groups
        (``count(*)``, ``GROUP BY``) raises :class:`loch.InvalidArgument`;
        :meth:`sql` returns such a result as a table. The query reaches the
        store with the handle's ``storage_options``.
        """
        from .query import query

        return query(self, self._version_opener, sql, seed)

    def sql(self, sql: str, seed: int | None = None) -> Any:
        """Runs SQL (DuckDB's dialect; docs/query.md) over this handle's
        version, the table ``ds``, and returns its result as a
        ``pyarrow.Table`` (needs pyarrow), whatever it computes::

            >>> ds.sql("SELECT label, count(*) AS n FROM ds GROUP BY label ORDER BY label").to_pylist()  # doctest: +SKIP
            [{'label': 'cat', 'n': 5}, {'label': 'dog', 'n': 5}]

        ``seed`` seeds ``random()``. It runs in this process, on a DuckDB
        connection kept for the handle's life, and only reads; the result
        crosses as Arrow without a copy per value (docs/query.md).
        """
        from .query import table

        return table(self, sql, seed)

    def selection(self, name: str) -> Selection:
        """The saved selection ``name`` (:meth:`loch.Selection.save`, ``loch
        query --save``), at the version it ran on, without running it again."""
        return self._selection_of(self._read_json("loch_dataset_selection", enc(name)), name)

    def _selection_of(self, data: dict[str, Any], name: str | None = None) -> Selection:
        """The :class:`loch.Selection` of a selection's data (version, sql,
        row ids, ...) over this dataset, or over its catalog table."""
        from .query import Selection

        table_at = getattr(self._keep, "_table_at", None)  # a catalog's table
        if table_at is not None and (table := table_at(self.url)) is not None:
            data |= {"table": table, "root": self._keep.url}  # type: ignore[union-attr]
            keep = self._keep
            return Selection(self, data, lambda _url, version: keep.open_table(table, version=version), name=name)  # type: ignore[union-attr]
        return Selection(self, data, self._version_opener, name=name)

    def selections(self) -> list[dict[str, Any]]:
        """The saved selections, sorted by name: dicts of name, key,
        version, sql, seed (when it had one) and rows."""
        return list(self._read_json("loch_dataset_selections"))

    def save_selection(self, name: str, selection: Selection) -> None:
        """Stores ``selection`` under ``name`` in the dataset's log, like a
        tag: ``gc`` keeps it and the version it ran on (see
        :meth:`loch.Selection.save`)."""
        sel = {"version": selection.version, "sql": selection.sql, "seed": selection.seed,
               "columns": selection.columns, "row_ids": [int(r) for r in selection.row_ids]}  # fmt: skip
        if selection.joined:
            sel["joined"] = selection.joined
        self._reading().call("loch_dataset_save_selection", enc(name), json.dumps(sel).encode())

    def delete_selection(self, name: str) -> None:
        """Removes the name of a saved selection; ``gc`` frees what it kept."""
        self._reading().call("loch_dataset_delete_selection", enc(name))

    # Vector search (loch.vector).

    def create_index(self, column: str, metric: str = "cosine", *, nlist: int | None = None, sample: int | None = None,
                     iterations: int | None = None, seed: int = 0, kind: str = "ivf-flat",
                     m: int | None = None) -> IndexInfo | TextIndexInfo:  # fmt: skip
        """Builds the nearest-neighbour index of an embedding ``column`` (a
        fixed ``[d]`` column of float32, float16 or bfloat16) for
        ``metric`` (``"cosine"``, ``"l2"`` or ``"dot"``) at this handle's
        version, stores it in the dataset and returns its
        :class:`loch.IndexInfo`. The index is IVF-flat: ``nlist`` k-means
        centroids (default: 4 x the square root of the rows, at most 4,096) trained on
        ``sample`` rows with ``iterations`` rounds from ``seed``;
        ``kind="ivf-pq"`` keeps ``m`` bytes of product quantization code a
        row (default dimensions / 8) and reads its lists by range when
        searched instead of holding them in memory. A tag keeps
        its version's index, branches share their ancestors', ``gc``
        collects the rest::

            >>> info = ds.create_index("embedding", metric="cosine")  # doctest: +SKIP

        ``kind="fts"`` builds the full-text (BM25) index of a text or json
        column instead (:mod:`loch.fts`)::

            >>> info = ds.create_index(column="caption", kind="fts")  # doctest: +SKIP
        """
        from .fts import text_index_info
        from .vector import index_info

        if kind == "fts":
            return text_index_info(self._read_json("loch_fts_build", column.encode()))
        if kind == "vector":
            kind = "ivf-flat"
        opts = {"metric": check_metric(metric), "nlist": nlist or 0, "sample": sample or 0, "iterations": iterations or 0, "seed": int(seed),
                "kind": kind, "m": m or 0}  # fmt: skip
        return index_info(self._read_json("loch_vector_build", column.encode(), json.dumps(opts).encode()))

    def update_index(self, column: str, metric: str = "cosine", *, kind: str = "vector") -> IndexInfo | TextIndexInfo:
        """Writes the index of this handle's version from the index of its
        newest indexed ancestor, without retraining: rows deleted or updated
        since leave the lists, rows appended or updated since join their
        nearest centroid's list. Raises :class:`loch.NotFound` when no
        index serves this version. ``kind="fts"``: the full-text index."""
        from .fts import text_index_info
        from .vector import index_info

        if kind not in _VECTOR_KINDS:
            _check_fts_kind(kind)
            return text_index_info(self._read_json("loch_fts_update", column.encode()))

        return index_info(self._read_json("loch_vector_update", column.encode(), check_metric(metric).encode()))

    def search(self, vector: Any = None, k: int = 10, *, column: str | None = None, metric: str = "cosine", where: str | None = None,
               columns: Sequence[str] = (), nprobe: int | None = None, exact: bool = False,
               rerank: int | None = None, text: str | None = None, text_column: str | None = None,
               fusion: str | None = None, weight: float = 0.5, rrf_k: float = 60,
               rank_window: int | None = None) -> SearchResult | list[SearchResult] | TextSearchResult | HybridSearchResult:  # fmt: skip
        """The ``k`` rows of this handle's version nearest to ``vector`` in
        the embedding ``column`` by ``metric``: a :class:`loch.SearchResult`
        (row ids, distances, the ``columns`` asked for) for one vector
        ``[d]``, a list of them for a batch ``[n, d]``.

        It uses the column's index for ``metric`` when this version or an
        ancestor has one (scanning ``nprobe`` lists, an ivf-pq index
        re-ranking ``rerank`` rows by their full vectors, default
        max(400, 40 k, rows / 10,000); rows added or changed
        since it was built are searched exactly), else compares every row
        (``exact=True`` always does). ``where`` keeps only the rows that
        pass an SQL condition over the table ``ds`` (run as :meth:`query`
        runs it); the result is the top ``k`` among
        them (the index scans more of its lists as the filter narrows, and
        every list, exactly, when under 12.5% of the rows pass)::

            >>> hits = ds.search(np.ones(128), k=5, column="embedding", where="label = 3", columns=["label"])  # doctest: +SKIP
            >>> hits.row_ids, hits.distances, hits.columns["label"]  # doctest: +SKIP

        ``text="..."`` (instead of ``vector``) is a full-text query over a
        text or json ``column``, answered from its BM25 index
        (:mod:`loch.fts`): a :class:`loch.fts.TextSearchResult` with
        ``row_ids`` and ``scores``, best first::

            >>> hits = ds.search(text='"red car" -truck', column="caption", k=10)  # doctest: +SKIP

        Both ``vector`` and ``text`` (or either with ``fusion=``) make a
        hybrid search (:mod:`loch.hybrid`): the vector search of ``column``
        and the full-text search of ``text_column`` (each, when not given,
        the dataset's only column of its kind), each among the rows
        ``where`` passes, their ``rank_window`` best rows (default ``k``)
        fused by reciprocal rank (``fusion="rrf"``, the default, ``rrf_k``
        = 60) or by min-max normalised scores (``fusion="weighted"``,
        ``weight`` x vector + (1 - ``weight``) x text): a
        :class:`loch.hybrid.HybridSearchResult` whose ``selection()``
        trains like a query's::

            >>> hits = ds.search(q, text="red car", where="label = 3", k=10)  # doctest: +SKIP
            >>> hits.row_ids, hits.scores, hits.vector_ranks, hits.text_ranks  # doctest: +SKIP
            >>> loader = hits.selection().pytorch(batch_size=32)  # doctest: +SKIP
        """
        if fusion is not None or (vector is not None and text is not None):
            from .hybrid import hybrid_options

            hybrid = hybrid_options(column, text_column, check_metric(metric), fusion, weight, rrf_k, rank_window,
                                    nprobe, rerank, exact, where)  # fmt: skip
            return self._hybrid_search(vector, text, k, hybrid, where, columns)
        if text is not None or vector is None:
            if vector is not None or text is None:
                raise InvalidArgument("search: give either vector or text (or both: a hybrid search)")
            if column is None:
                raise InvalidArgument("search: give column=, the text or json column")
            return self._text_search(text, k, column, where, columns)
        if column is None:
            raise InvalidArgument("search: give column=, the embedding column")
        opts = {"nprobe": int(nprobe or 0), "exact": bool(exact), "rerank": int(rerank or 0)}
        return self._vector_search(vector, k, column, check_metric(metric), where, columns, opts)

    def _vector_search(self, vector: Any, k: int, column: str, metric: str, where: str | None, columns: Sequence[str],
                       opts: dict[str, Any]) -> SearchResult | list[SearchResult]:  # fmt: skip
        """The ``k`` rows of this version nearest to each query vector in
        ``column`` (see :meth:`search`), among those ``where`` lets through."""
        if k <= 0:
            raise InvalidArgument(f"k = {k}: want k >= 1")
        q, single = query_matrix(vector)
        allowed = self._hits_allowed(columns, where)
        n, d = q.shape
        ids = np.zeros((n, k), dtype=np.uint64)
        dists = np.zeros((n, k), dtype=np.float32)
        counts = np.zeros(n, dtype=np.int64)
        opts_key = (("metric", metric), *opts.items())
        here = self._here()
        args = (q.ctypes.data, n, d, k, *_allow_args(allowed), ids.ctypes.data, dists.ctypes.data, counts.ctypes.data)
        meta = {"retry": True}
        if n <= _SHORT_QUERIES and not opts["exact"]:
            # A few queries of an index the core already holds open are
            # short: made without the interruptible call's thread, which
            # costs more than such a search. The core answers "retry"
            # when it would first have to open an index or search exactly.
            meta = json.loads(self._read_str("loch_vector_search", column.encode(), _options_json((*opts_key, ("held", True))), *args))
        if meta.get("retry"):
            meta = json.loads(self._read_str("loch_vector_search", column.encode(), _options_json(opts_key), *args, interruptible=True))
        out = []
        for i in range(n):
            m = int(counts[i])
            r = SearchResult(row_ids=ids[i, :m].copy(), distances=dists[i, :m].copy(), index=meta["index"] or None, warnings=list(meta["warnings"]))
            r.columns = _columns_of(here, r.row_ids, columns)
            out.append(r)
        return out[0] if single else out

    def _text_search(self, text: str, k: int, column: str, where: str | None, columns: Sequence[str]) -> TextSearchResult:
        """The ``k`` best rows of this version for the full-text query
        ``text`` in ``column``, among those ``where`` lets through."""
        from .fts import TextSearchResult

        if k <= 0:
            raise InvalidArgument(f"k = {k}: want k >= 1")
        if not isinstance(text, str):
            raise InvalidArgument(f"text of type {type(text).__name__}: want a str query")
        allowed = self._hits_allowed(columns, where)
        here = self._here()
        self._open_text_index(column)
        ids = np.zeros(k, dtype=np.uint64)
        scores = np.zeros(k, dtype=np.float64)
        count = np.zeros(1, dtype=np.int64)
        meta = json.loads(self._read_str(
            "loch_fts_search", column.encode(), text.encode(), k,
            *_allow_args(allowed), ids.ctypes.data, scores.ctypes.data, count.ctypes.data,
        ))  # fmt: skip
        m = int(count[0])
        r = TextSearchResult(row_ids=ids[:m].copy(), scores=scores[:m].copy(), index=meta["index"] or None, warnings=list(meta["warnings"]))
        r.columns = _columns_of(here, r.row_ids, columns)
        return r

    def _hybrid_search(self, vector: Any, text: str | None, k: int, opts: dict[str, Any], where: str | None,
                       columns: Sequence[str]) -> HybridSearchResult:  # fmt: skip
        """The ``k`` best rows of this version for a hybrid search (see
        :meth:`search`), among those ``where`` lets through."""
        from .hybrid import HybridSearchResult

        if k <= 0:
            raise InvalidArgument(f"k = {k}: want k >= 1")
        if text is not None and not isinstance(text, str):
            raise InvalidArgument(f"text of type {type(text).__name__}: want a str query")
        q = None
        if vector is not None:
            q, single = query_matrix(vector)
            if not single:
                raise InvalidArgument(f"query vectors of shape {q.shape}: a hybrid search takes one vector [d]")
        allowed = self._hits_allowed(columns, where)
        here = self._here()
        out = {"ids": np.zeros(k, np.uint64), "scores": np.zeros(k, np.float64), "vranks": np.zeros(k, np.int64),
               "dists": np.zeros(k, np.float32), "tranks": np.zeros(k, np.int64), "tscores": np.zeros(k, np.float64)}  # fmt: skip
        count = np.zeros(1, dtype=np.int64)
        meta = json.loads(self._read_str(
            "loch_hybrid_search", json.dumps(opts).encode(), None if q is None else q.ctypes.data, 0 if q is None else q.shape[1],
            None if text is None else text.encode(), k,
            *_allow_args(allowed), *(a.ctypes.data for a in out.values()), count.ctypes.data, interruptible=True,
        ))  # fmt: skip
        got = {name: a[: int(count[0])].copy() for name, a in out.items()}
        sel = self._selection_of({"version": meta["version"], "sql": meta["sql"], "row_ids": got["ids"].tolist()})
        return HybridSearchResult(
            row_ids=got["ids"], scores=got["scores"], vector_ranks=got["vranks"], distances=got["dists"], text_ranks=got["tranks"],
            text_scores=got["tscores"], version=meta["version"], sql=meta["sql"], vector_column=meta["vector_column"] or None,
            text_column=meta["text_column"] or None, columns=_columns_of(here, got["ids"], columns), vector_index=meta["vector_index"] or None,
            text_index=meta["text_index"] or None, warnings=list(meta["warnings"]), _selection=sel,
        )  # fmt: skip

    def _hits_allowed(self, columns: Sequence[str], where: str | None) -> np.ndarray | None:
        """Checks that a search's ``columns`` exist and returns the row ids
        ``where`` lets through (None: every row)."""
        for c in columns:
            if c not in self.schema:
                raise KeyError(f"no column {c!r} (have {list(self.schema)})")
        if where is None:
            return None
        return np.ascontiguousarray(self.query(f"SELECT _rowid FROM ds WHERE {where}").row_ids, dtype=np.uint64)

    def _open_text_index(self, column: str) -> None:
        """Has the core open the full-text index of ``column`` for this
        version (interruptible: it may analyse many rows), once per
        handle, version and column: a search of an open index is short and
        made without the interruptible call's thread, which costs more than
        the search."""
        seen = _opened_text.setdefault(self._reading(), set())
        if (self.version, column) not in seen:
            self._read_str("loch_fts_open", column.encode(), interruptible=True)
            seen.add((self.version, column))


def _allow_args(allowed: np.ndarray | None) -> tuple[int | None, int]:
    """The row ids ``allowed`` as the core's search exports take them: a
    pointer (None when there are none) and their count, -1 for every row."""
    if allowed is None:
        return None, -1
    return (allowed.ctypes.data if len(allowed) else None), len(allowed)


def _columns_of(here: Any, row_ids: np.ndarray, columns: Sequence[str]) -> dict[str, list[Any]]:
    """The values of ``columns`` for a search's hits, one per row id."""
    if not columns:
        return {}
    pos = here.positions(row_ids).tolist() if len(row_ids) else []
    return {c: [ColumnReader(here, c)[p] for p in pos] for c in columns}


# The (version, column) pairs whose full-text index the core keeps open,
# per reading handle.
_opened_text: weakref.WeakKeyDictionary[Any, set[tuple[str, str]]] = weakref.WeakKeyDictionary()

# The most query vectors of a search made first without the interruptible
# call's thread, with an index the core holds open (see _vector_search).
_SHORT_QUERIES = 16


@functools.lru_cache(maxsize=256)
def _options_json(items: tuple[tuple[str, Any], ...]) -> bytes:
    """The JSON of a search's options (name, value pairs), kept: encoding
    them anew was a tenth of a short search's time in Python."""
    return json.dumps(dict(items)).encode()


# The index kinds update_index treats as the column's vector index (which
# keeps the kind it was built with).
_VECTOR_KINDS = ("vector", "ivf-flat", "ivf_flat", "ivf-pq", "ivf_pq")


def _check_fts_kind(kind: str) -> None:
    """Refuses an index kind other than a vector kind or "fts"."""
    if kind != "fts":
        raise InvalidArgument(f"index kind {kind!r}: want 'vector', 'ivf-flat', 'ivf-pq' or 'fts'")
