"""Catalogs: named tables under one root, each an ordinary loch dataset.

    >>> import loch
    >>> cat = loch.connect("mem://catalog-doc")
    >>> frames = cat.create_table("Frames", {"label": loch.ClassLabel(["cat", "dog"])})
    >>> frames.extend({"label": [0, 1, 1]})
    >>> _ = frames.commit("three labels")
    >>> [t.name for t in cat.tables()]
    ['Frames']
    >>> len(cat.open_table("frames"))  # names compare case-insensitively
    3

A table opened from a catalog is a :class:`loch.Dataset` like any other
(``.pytorch()``, branches, version pinning with ``ref=``). Listing reads
the catalog's log only, never the tables. Dropping a table removes its
name at once; its data stays, readable by whoever has it open, until
:meth:`Catalog.gc` runs after the grace period.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from . import _library
from ._handle import Closable, Handle
from ._library import Library, c_uintptr
from ._snapshot import json_options
from ._sql import SQL, open_sql
from .dataset import Dataset, _auto_compact
from .schema import Column, Schema
from .versions import GCReport, format_time, gc_options, parse_time

if TYPE_CHECKING:
    from .pg import RemoteCatalog
    from .query import LoaderBuilder, Selection

__all__ = ["Catalog", "Table", "CatalogGCReport", "TableDir", "connect"]


@dataclass(frozen=True)
class Table:
    """One table of a catalog (``cat.tables()``).

    Attributes:
        name: the table's name, in the case it was given.
        dir: its directory below the root's ``tables/``.
        url: the URL of its dataset (``loch.open(url)`` opens it too).
        created: when it was created.
    """

    name: str
    dir: str
    url: str
    created: datetime

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Table:
        return cls(d["name"], d["dir"], d["url"], parse_time(d["created"]))


@dataclass(frozen=True)
class TableDir:
    """A table directory that gc deleted or kept: its name, objects and
    bytes."""

    dir: str
    objects: int
    bytes: int

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TableDir:
        return cls(d["dir"], int(d.get("objects", 0)), int(d.get("bytes", 0)))


@dataclass(frozen=True)
class CatalogGCReport:
    """What ``cat.gc()`` deleted (or, in a dry run, would delete).

    Attributes:
        dry_run: nothing was deleted.
        deleted: directories of tables dropped longer ago than the grace
            period (and of creations that failed as long ago).
        young: directories that no table names, kept because something in
            them was written within the grace period.
        tables: each table's own collection, by name.
        log_entries: catalog log entries older than the grace period
            deleted (each holds the whole list of tables).
    """

    dry_run: bool
    deleted: list[TableDir] = field(default_factory=list)
    young: list[TableDir] = field(default_factory=list)
    tables: dict[str, GCReport] = field(default_factory=dict)
    log_entries: int = 0

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CatalogGCReport:
        return cls(
            dry_run=bool(d.get("dry_run")),
            deleted=[TableDir.from_json(x) for x in d.get("deleted") or ()],
            young=[TableDir.from_json(x) for x in d.get("young") or ()],
            tables={k: GCReport.from_json(v) for k, v in (d.get("tables") or {}).items()},
            log_entries=int(d.get("log_entries", 0)),
        )


def connect(root: str, *, create: bool = True) -> Catalog | RemoteCatalog:
    """Opens the catalog at ``root`` (a path, ``file://``, ``s3://``,
    ``gs://``, ``az://`` or ``mem://`` URL), creating an empty one there
    when there is none, unless ``create`` is False (then
    :class:`loch.NotFound`). A ``postgresql://user@host:port/name`` URL
    connects to ``loch serve --pg`` instead (:class:`loch.pg.RemoteCatalog`):
    tables are opened straight from storage, at the URL and version the
    server gives a user allowed to read them."""
    if root.startswith(("postgresql://", "postgres://")):
        from .pg import RemoteCatalog as Remote

        return Remote(root)
    lib = _library.library()
    out = c_uintptr()
    lib.call("loch_catalog_open", root.encode(), json_options(create=create or None), ctypes.byref(out))
    return Catalog(lib, out.value)


class Catalog(Closable):
    """The tables under one root (:func:`loch.connect`). Table names keep
    their case and compare case-insensitively; a bad name (with ``/``,
    ``..``, control characters, ...) raises :class:`loch.InvalidArgument`.
    Safe to use from several threads, and from several processes at once:
    of two creators of one name, one wins and the other gets
    :class:`loch.AlreadyExists`. Tables opened from it stay usable after it
    is closed."""

    def __init__(self, lib: Library, handle: int) -> None:
        self._h = Handle(self, lib, handle, "loch_catalog_close", "catalog")
        self._sql: SQL | None = None
        self._sql_lock = threading.Lock()

    def _sql_session(self) -> SQL | None:
        """The SQL handle over the catalog (statements in this process),
        opened on first use and kept until :meth:`close`; None where the
        library has no SQL (the ``loch`` command runs it)."""
        with self._sql_lock:
            if self._sql is None or self._sql.closed:
                self._sql = open_sql(self._h)
            return self._sql

    @property
    def url(self) -> str:
        """The root's URL, without secrets."""
        return self._h.lib.call_string("loch_catalog_url", self._h.value)

    def __repr__(self) -> str:
        if self._h.closed:
            return "<loch.Catalog (closed)>"
        return f"<loch.Catalog {self.url}>"

    def tables(self) -> list[Table]:
        """The tables, sorted by name case-insensitively. Reads the
        catalog's log only (a few objects, whatever the number of
        tables)."""
        return [Table.from_json(t) for t in self._h.lib.call_json("loch_catalog_tables", self._h.value)]

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        folded = name.lower()
        return any(t.name.lower() == folded for t in self.tables())

    def open_table(
        self,
        name: str,
        *,
        ref: str | None = None,
        version: str | None = None,
        as_of: datetime | str | None = None,
        parallelism: int | None = None,
        author: str | None = None,
        cache_bytes: int | None = None,
        auto_compact: bool | Mapping[str, Any] | None = None,
    ) -> Dataset:
        """Opens table ``name`` as a :class:`loch.Dataset`, with the options
        of :func:`loch.open` (``ref`` a branch, tag or version; ``as_of`` a
        time; ``auto_compact`` automatic compaction after commits). Raises
        :class:`loch.NotFound` when there is no such table."""
        out = c_uintptr()
        opts = json_options(ref=ref, version=version, as_of=None if as_of is None else format_time(as_of),
                     parallelism=parallelism, author=author, cache_bytes=cache_bytes,
                     auto_compact=_auto_compact(auto_compact))  # fmt: skip
        self._h.call("loch_catalog_open_table", name.encode(), opts, ctypes.byref(out))
        return Dataset(self._h.lib, out.value, keep=self)

    def create_table(
        self,
        name: str,
        schema: Mapping[str, Column] | Schema | str,
        *,
        parallelism: int | None = None,
        author: str | None = None,
    ) -> Dataset:
        """Creates an empty table ``name`` with ``schema`` (as
        :func:`loch.create` takes it) and returns it open on branch
        ``main``. Raises :class:`loch.AlreadyExists` when a table of that
        name (in any case) exists."""
        text = schema if isinstance(schema, str) else Schema(schema).to_json()
        out = c_uintptr()
        self._h.call("loch_catalog_create_table", name.encode(), text.encode(),
                     json_options(parallelism=parallelism, author=author), ctypes.byref(out))  # fmt: skip
        return Dataset(self._h.lib, out.value, keep=self)

    def drop_table(self, name: str) -> None:
        """Removes table ``name`` (:class:`loch.NotFound` if there is none).
        Its data stays, readable through handles already open, until
        :meth:`gc` runs once the grace period has passed."""
        self._h.call("loch_catalog_drop_table", name.encode())

    def sql(self, statement: str, *, message: str | None = None, branch: str | None = None) -> dict[str, Any]:
        """Runs one SQL statement (docs/sql.md): CREATE/ALTER/DROP TABLE with
        loch's types, INSERT/UPDATE/DELETE as one commit each on ``branch``
        (default main) with ``message``, or a read. Returns what it did:
        ``{"statement", "table", "rows", "version"}``, or for a read
        ``{"statement": "QUERY", "rows": n, "result": [row dicts]}``. Runs
        in this process (:mod:`loch._sql`); errors raise :class:`loch.Error`
        subclasses::

            >>> cat.sql("INSERT INTO frames (caption, image) SELECT caption, loch_file(path) FROM read_parquet('c.parquet')")  # doctest: +SKIP
        """
        from .query import catalog_sql

        return catalog_sql(self.url, statement, message=message, branch=branch, session=self._sql_session())

    def query(self, sql: str, *, seed: int | None = None, branch: str | None = None, table: str | None = None) -> Selection:
        """Runs a SELECT (docs/sql.md) and returns a :class:`loch.Selection`
        of one table's version: its row ids in result order, with the
        loaders of a dataset. The table is ``table``, or the only catalog
        table the SQL names. A join selects ``table``'s rows (the other
        tables filter and order them): its result carries that table's row
        id, each row once, and the other tables' columns it names (and its
        expressions) are the selection's joined columns, whose values come
        with it and which its loaders deliver beside the table's columns
        (:attr:`loch.Selection.joined`). ``seed`` seeds
        ``random()``; ``branch`` reads the tables' branch of that name.
        Runs in this process (:mod:`loch._sql`)::

            >>> sel = cat.query("SELECT image, label FROM frames WHERE label = 'cat'")  # doctest: +SKIP
            >>> sel = cat.query("SELECT f._rowid, f.image FROM frames f JOIN labels l USING (id) WHERE l.ok", table="frames")  # doctest: +SKIP
        """
        from .query import catalog_query

        return catalog_query(self.url, self._open_at, sql, seed=seed, branch=branch, table=table, session=self._sql_session())

    def dataloader(self, sql: str, *, table: str | None = None) -> LoaderBuilder:
        """A :class:`loch.query.LoaderBuilder` over the rows of ``sql`` (a
        SELECT, as :meth:`query` takes it)::

            >>> for batch in cat.dataloader("SELECT image, label FROM frames").batch_size(64).shuffle(True).to_torch():  # doctest: +SKIP
            ...     ...
        """
        from .query import LoaderBuilder

        return LoaderBuilder(lambda seed: self.query(sql, seed=seed, table=table), sql)

    def _table_at(self, url: str) -> str | None:
        """The name of the table whose dataset is at ``url``, if any."""
        return next((t.name for t in self.tables() if t.url == url), None)

    def _open_at(self, name: str, version: str) -> Dataset:
        return self.open_table(name, version=version)

    def rename_table(self, name: str, new_name: str) -> None:
        """Renames table ``name`` to ``new_name`` (a change of case only is
        a rename too). Its data does not move; open handles keep working.
        Raises :class:`loch.NotFound` or :class:`loch.AlreadyExists`."""
        self._h.call("loch_catalog_rename_table", name.encode(), new_name.encode())

    def gc(
        self, grace: float = 86400.0, dry_run: bool = False, keep_last: int = 0, older_than: float = 0.0
    ) -> CatalogGCReport:
        """Deletes the data of tables dropped more than ``grace`` seconds
        ago, then collects every table as :meth:`loch.Dataset.gc` does (with
        its version retention ``keep_last``, ``older_than``), then deletes
        catalog log entries older than ``grace``; ``dry_run`` only
        reports."""
        opts = gc_options(grace, dry_run, keep_last, older_than)
        return CatalogGCReport.from_json(self._h.lib.call_json("loch_catalog_gc", self._h.value, opts))

    def close(self) -> None:
        """Closes the catalog (idempotent). Tables opened from it stay
        usable until they are closed."""
        with self._sql_lock:
            sql, self._sql = self._sql, None
        if sql is not None:
            sql.close()
        self._h.close()
