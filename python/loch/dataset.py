"""Datasets: create, open, write, commit, read, and version control
(branches, tags, checkout, diff, merge, revert, gc; see
:mod:`loch.versions`), and compaction.

This module opens datasets (:func:`create`, :func:`open`) and holds
:class:`Dataset`'s handle, its life in other processes and its seam to the
loaders; the rest of :class:`Dataset` is in one module per part:
:mod:`loch._reads` (rows and columns, :class:`ColumnReader`),
:mod:`loch._writes` (staging and commits), :mod:`loch._versioning`
(version control, compaction), :mod:`loch._search` (queries, vector
search) and :mod:`loch._loader_methods` (the loaders of each framework),
over :mod:`loch._snapshot` (what they share).

    >>> import numpy as np, loch
    >>> ds = loch.create("mem://robots", schema={
    ...     "camera": loch.Image(),
    ...     "angles": loch.Tensor("float32", shape=(7,)),
    ...     "meta": loch.JSON(),
    ... })
    >>> ds.extend({
    ...     "camera": np.zeros((2, 4, 4, 3), np.uint8),
    ...     "angles": np.ones((2, 7), np.float32),
    ...     "meta": [{"run": 1}, {"run": 2}],
    ... })
    >>> version = ds.commit("first batch")
    >>> len(ds), ds["angles"][1].shape, ds["meta"][0]
    (2, (7,), {'run': 1})
"""

from __future__ import annotations

import ctypes
import math
import os
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from . import _library
from ._handle import Closable, Handle
from ._index_parts import IndexParts
from ._library import Library, c_uintptr
from ._loader_methods import LoaderMethods
from ._reads import ColumnReader
from ._search import Search
from ._sql import SQL, open_sql
from ._snapshot import json_options
from ._versioning import Commit, VersionControl
from ._writes import UpsertReport, Writes
from .errors import InvalidArgument, NotFound
from .links import LinkPolicy
from .schema import Column, Schema
from .versions import format_time

#: Opens the SQL handles of datasets (Dataset._sql_session) one at a time.
_sql_lock = threading.Lock()

__all__ = ["Dataset", "ColumnReader", "Commit", "UpsertReport", "create", "open"]


def _schema_text(schema: Mapping[str, Column] | Schema | str | os.PathLike[str]) -> str:
    """The text of a :func:`create` schema for the Go core: a mapping's
    JSON, a str as is (JSON or YAML), a path's file's contents. A str that
    cannot be a schema's text (one line, neither a JSON/YAML mapping nor a
    list: a file name, say) raises :class:`loch.InvalidArgument` here,
    rather than the YAML parser's message about a string."""
    if isinstance(schema, os.PathLike):
        return Path(schema).read_text(encoding="utf-8")
    if not isinstance(schema, str):
        return Schema(schema).to_json()
    text = schema.strip()
    if "\n" in text or text.startswith(("{", "[")) or ":" in text:
        return schema
    hint = "pass the schema's text (JSON or YAML, as `loch create --schema` reads) or a mapping of columns"
    if text and os.path.isfile(text):
        hint = f"it names a file: pass its contents, schema=open({text!r}).read(), or its path as a pathlib.Path"
    raise InvalidArgument(f"schema={schema!r} is not a schema's text: {hint}")


def create(
    url: str,
    schema: Mapping[str, Column] | Schema | str | os.PathLike[str],
    *,
    parallelism: int | None = None,
    author: str | None = None,
    storage_options: Mapping[str, str] | None = None,
    links: LinkPolicy | None = None,
    auto_compact: bool | Mapping[str, Any] | None = None,
) -> Dataset:
    """Creates an empty dataset at ``url`` (a path, ``file://``, ``s3://``,
    ``gs://``, ``az://`` or ``mem://`` URL) and returns it, open for writes.

    ``schema`` maps column names to column types (:func:`loch.Image`,
    :func:`loch.Tensor`, ...), or is the text of a schema file (YAML or
    JSON, as ``loch create --schema`` reads; a file name given as a str is
    refused with :class:`loch.InvalidArgument`), or the path of such a
    file as a ``pathlib.Path`` (any ``os.PathLike``). Raises
    :class:`loch.AlreadyExists` when a dataset is there already::

        >>> ds = loch.create("mem://create-doc", schema={"label": loch.ClassLabel(["cat", "dog"])})
        >>> list(ds.schema)
        ['label']

    ``storage_options`` are the store's connection settings, for this
    dataset only, over the environment's (``AWS_*``,
    ``STORAGE_EMULATOR_HOST``, ``AZURE_STORAGE_*``). Datasets of one
    process may so live in different clouds or accounts. They are never
    logged, nor shown in a repr or an error. The names (those of Lance,
    Delta Lake and Polars, ``aws_``-, ``google_``- or
    ``azure_storage_``-prefixed, are taken too):

    - every store: ``endpoint`` (s3://: an S3-compatible service; gs://:
      the JSON API's base URL, e.g. an emulator's ``http://host:port``;
      az://: the blob service URL with the account,
      ``http://127.0.0.1:10000/devstoreaccount1`` for Azurite);
    - ``s3://``: ``region``, ``access_key_id``, ``secret_access_key``,
      ``session_token``, ``anonymous`` (``"true"``);
    - ``gs://``: ``google_service_account`` (a key file's path) or
      ``google_service_account_key`` (the key's JSON), or ``anonymous``;
    - ``az://``: ``account_name`` with ``account_key`` or ``sas_token`` (or
      neither, for Azure AD credentials), or ``connection_string``;
    - every store, not a connection setting: ``retry_budget``, how long an
      operation keeps retrying a failing store from its first failure
      (``"5m"``, ``"90s"`` or a number of seconds; default 60 s, which
      rides out a 30-second outage).

    An option that the URL's store does not take raises
    :class:`loch.InvalidArgument` naming it::

        >>> ds = loch.create("s3://bucket/ds", schema=..., storage_options={   # doctest: +SKIP
        ...     "endpoint": "https://minio.internal:9000", "region": "eu-west-1",
        ...     "access_key_id": key_id, "secret_access_key": secret})
        >>> ds = loch.open("az://container/ds", storage_options={             # doctest: +SKIP
        ...     "account_name": "acct", "account_key": key})

    ``links`` is the dataset's :class:`loch.LinkPolicy`: which links
    :meth:`Dataset.fetch` may follow (by default, any http(s), s3, gs and
    az URL, and local files under the dataset's own parent directory).

    ``auto_compact`` turns on automatic compaction for the handle (see
    :func:`open`).
    """
    lib = _library.library()
    text = _schema_text(schema)
    out = c_uintptr()
    settings = _storage_options(storage_options)
    opts = json_options(parallelism=parallelism, author=author, storage_options=settings, links=_links(links),
                    auto_compact=_auto_compact(auto_compact))  # fmt: skip
    _new_handle(lib, out, "loch_dataset_create", url.encode(), text.encode(), opts, ctypes.byref(out))
    return Dataset(lib, out.value, storage_options=settings, links=links)


def open(  # noqa: A001 (loch.open, like the builtin, opens)
    url: str,
    version: str | None = None,
    *,
    ref: str | None = None,
    as_of: datetime | str | None = None,
    parallelism: int | None = None,
    author: str | None = None,
    cache_bytes: int | None = None,
    storage_options: Mapping[str, str] | None = None,
    links: LinkPolicy | None = None,
    auto_compact: bool | Mapping[str, Any] | None = None,
) -> Dataset:
    """Opens the dataset at ``url``.

    Without options the handle is at the newest version of branch
    ``main``, and writes there. ``ref`` names a branch (the handle writes
    there), or a tag, a version id or a unique prefix of one (6 or more hex
    digits; the handle is read-only). ``version`` is a full version id
    (read-only; not with ``ref``). ``as_of`` (a datetime, naive ones in
    local time, or a string as the CLI's ``--as-of`` reads it: RFC 3339,
    ``'YYYY-MM-DD HH:MM:SS'`` in UTC, or ``'YYYY-MM-DD'``, 00:00 UTC) opens,
    read-only, the version that ``ref`` (default ``main``) named at that
    time. Raises
    :class:`loch.NotFound` when there is no dataset or no such reference.
    ``storage_options`` are the store's connection settings (see
    :func:`create`); ``links`` the :class:`loch.LinkPolicy` of
    :meth:`Dataset.fetch` (see :func:`create`). Loaders' DataLoader
    workers and pickled copies open the dataset with both::

        >>> ds = loch.open("mem://create-doc")
        >>> pinned = loch.open("mem://create-doc", version=ds.version)
        >>> pinned.read_only, ds.current_branch
        (True, 'main')
        >>> loch.open("mem://create-doc", ref="main").read_only
        False

    ``auto_compact=True`` makes every :meth:`Dataset.commit` of the handle
    end with a tiered compaction (:meth:`Dataset.compact` with ``fanout``
    8) when the branch holds at least ``fanout`` small fragments, so that
    a dataset grown by many small commits keeps few fragments; a dict
    sets the compaction's options (``target_rows``, ``target_bytes``,
    ``max_deleted``, ``fanout``, ``message``; see
    :meth:`Dataset.compact`). A compaction that fails does not undo the
    commit before it; :meth:`Dataset.last_auto_compaction` reports the
    last one::

        >>> ds = loch.open("mem://create-doc", auto_compact={"fanout": 4})
    """
    lib = _library.library()
    out = c_uintptr()
    settings = _storage_options(storage_options)
    opts = json_options(version=version, ref=ref, as_of=None if as_of is None else format_time(as_of),
                    parallelism=parallelism, author=author, cache_bytes=cache_bytes,
                    storage_options=settings, links=_links(links), auto_compact=_auto_compact(auto_compact))  # fmt: skip
    _new_handle(lib, out, "loch_dataset_open", url.encode(), opts, ctypes.byref(out))
    return Dataset(lib, out.value, storage_options=settings, links=links)


def _new_handle(lib: Library, out: c_uintptr, name: str, *args: Any) -> None:
    """Makes the interruptible call that stores a new dataset handle in
    ``out``; if Ctrl-C arrived after Go made it, closes it and lets the
    KeyboardInterrupt go on."""
    try:
        lib.call(name, *args, interruptible=True)
    except KeyboardInterrupt:
        if out.value:
            lib.call("loch_dataset_close", out.value)
        raise


def _storage_options(options: Mapping[str, str | bool] | None) -> dict[str, str] | None:
    """storage_options as the C ABI takes them (names to strings; Go checks
    the names): a bool value is written "true" or "false" (``{"anonymous":
    True}``). The values are never put in an error."""
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise InvalidArgument(f"storage_options: want a dict of option names to strings, got {type(options).__name__}")
    out = {}
    for name, value in options.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        if not isinstance(name, str) or not isinstance(value, str):
            raise InvalidArgument(f"storage_options: option {name!r}: want a string name and a string (or bool) value")
        out[name] = value
    return out or None


def _auto_compact(value: bool | Mapping[str, Any] | None) -> bool | dict[str, Any] | None:
    """The "auto_compact" open option: True, False, None (absent) or a dict
    of compaction options (Go checks the names and values)."""
    if value is None or isinstance(value, bool):
        return value
    if not isinstance(value, Mapping):
        raise InvalidArgument(f"auto_compact: want True, False or a dict of compaction options, got {type(value).__name__}")
    return dict(value)


def _links(links: LinkPolicy | None) -> dict[str, Any] | None:
    """The "links" open option of a LinkPolicy."""
    if links is None:
        return None
    if not isinstance(links, LinkPolicy):
        raise InvalidArgument(f"links: want a loch.LinkPolicy, got {type(links).__name__}")
    return links.to_dict()
def _open_version(url: str, version: str) -> Dataset:
    """Opens url at a version id: how a selection reaches its version."""
    return open(url, version=version)


class Dataset(VersionControl, Writes, Search, IndexParts, LoaderMethods, Closable):
    """A dataset at one snapshot, with a staging area for writes.

    Writes (:meth:`extend`, :meth:`append`, :meth:`update`,
    :meth:`delete`, :meth:`add_column`) are staged and become visible with
    :meth:`commit`, which advances the handle's branch
    (:attr:`current_branch`, ``main`` by default). Reads see the handle's
    snapshot. A handle at a tag, a version id or a time is read-only
    (:attr:`read_only`; writes raise :class:`loch.ReadOnly`). Version
    control: :meth:`branch`, :meth:`tag`, :meth:`checkout`, :meth:`refs`,
    :meth:`log`, :meth:`diff`, :meth:`merge`, :meth:`revert`, :meth:`gc`;
    compaction: :meth:`compact`.
    Safe to use from several threads. Close it (or use it as a context
    manager) to release it at once; uncommitted writes are then discarded.

    In another process a Dataset is a read-only view of its snapshot:

    - pickled (multiprocessing's spawn and forkserver, PyTorch DataLoader
      workers), it is unpickled as :func:`loch.open` of its URL at the
      version it read, read-only;
    - in a process forked from the one that opened it, its reads (length,
      schema, rows, columns, log, diff, loaders) go to the snapshot it read
      at the fork, opened again there on first use; its writes, commits and
      version control raise :class:`loch.ForkedProcess` (the staged writes
      and the branch are the parent's: open the dataset in the child to
      write).

    Staged writes never travel, and a ``mem://`` dataset, which lives in
    the process that created it, cannot be pickled or read in a forked
    child. So ``torch.utils.data.DataLoader(loch.open(url), num_workers=N)``
    reads rows (``ds[i]``, and :meth:`__getitems__` for a batch of them) in
    its workers under every start method.
    """

    #: The keys of a loader's batch that describe its rows: the row ids
    #: (:attr:`loch.loader.Source.row_keys`).
    row_keys: tuple[str, ...] = ("index",)

    #: Opens the dataset's URL at a version id, for selections
    #: (:class:`loch._search.Search`).
    _version_opener = staticmethod(_open_version)

    def __init__(
        self, lib: Library, handle: int, keep: object = None, storage_options: Mapping[str, str] | None = None,
        links: LinkPolicy | None = None,
    ) -> None:
        # keep: an object this dataset keeps alive, the catalog of a table.
        # storage_options and links: those it was opened with, for
        # reopening it in other processes (the options never shown). The
        # attributes are described on loch._snapshot.Snapshot.
        self._keep = keep
        self._storage_options = None if storage_options is None else dict(storage_options)
        self._links = links
        self._h = Handle(self, lib, handle, "loch_dataset_close", "dataset")
        self._lib = lib
        self._schema = None
        self._url = None
        self._loaders = weakref.WeakSet()
        self._sql: SQL | None = None
        self._view = None
        self._at = self._reopener_at(self._h.lib.call_string("loch_dataset_version", self._h.value))

    def _here(self) -> Dataset:
        """This dataset for reads in this process: itself, or, in a process
        forked from the one that opened it, the snapshot it read at the
        fork, opened here read-only on first use (see the class
        documentation). A closed dataset is itself (its calls raise
        :class:`loch.Closed`)."""
        if self._h.lib.usable or self._h.closed:
            return self
        pid = os.getpid()
        view = self._view
        if view is None or view[0] != pid:
            view = self._view = (pid, self._at(None))
        return view[1]

    def _reopener_at(self, version: str) -> _Reopener:
        """The snapshot ``version`` of this dataset as a :class:`_Reopener`."""
        return _Reopener(self.url, version, self._storage_options, self._links)

    # Exports (loch.export).

    def to_arrow(self, columns: Sequence[str] | None = None, ref: str | None = None) -> Any:
        """The rows as a ``pyarrow.RecordBatchReader``, streamed in batches
        (:func:`loch.export.to_arrow`; ``.read_all()`` gives a Table),
        of this handle's version or, with ``ref``, of another."""
        from .export import to_arrow

        if ref is None:
            return to_arrow(self, columns)
        return to_arrow(open(self.url, ref=ref, storage_options=self._storage_options), columns)

    def to_huggingface(self, columns: Sequence[str] | None = None) -> Any:
        """The rows as an in-memory Hugging Face ``datasets.Dataset``
        (:func:`loch.export.to_huggingface`)."""
        from .export import to_huggingface

        return to_huggingface(self, columns)

    # The seam through which loch.loader reaches a dataset (the members of
    # loch.loader.Source besides schema and row_keys). Nothing else outside this module
    # touches a Dataset's handle.

    def _start_loader(
        self, owner: object, config: Mapping[str, Any], stream_depth: int = 0
    ) -> tuple[Handle, tuple[int, int] | None]:
        """Package-internal (:class:`loch.loader.Source`): starts a Go loader
        over this handle's current snapshot, configured by ``config`` (the
        JSON object loch_loader_new takes), and returns its handle, with
        ``stream_depth`` streaming at once (the caller's ends of the
        stream's pipes, batch and report, come with it; else None). The
        handle closes the Go loader when ``owner`` is garbage collected, at
        the latest; :meth:`close` closes it before the dataset."""
        here = self._here()
        # Through the loader service: no call into Go from this thread,
        # which would keep a Go processor from the loader's workers.
        lib = here._h.lib
        fields: dict[str, Any] = {"dataset": here._h.value.value, "config": config}
        return _opened(owner, [here], lib.request("loader_new", **fields, **_depth(stream_depth)))

    def _loader_view(self) -> tuple[Schema, _Reopener]:
        """Package-internal (:class:`loch.loader.Source`): the schema of the
        snapshot this handle reads now, and a picklable function of a
        dataset (or None) that returns it when it is usable in the calling
        process, else this dataset's URL opened there at that snapshot
        (:meth:`_reopener_at`). A loader pickled into another process
        (spawn, forkserver), or inherited by a forked one
        (:meth:`loch.Loader.reopen_if_forked`), reads through the latter.
        The version is asked through the loader service, not by a call into
        Go from this thread (see :class:`loch.loader.Source`); the schema is
        asked of Go only the first time for each version."""
        here = self._here()
        version = str(here._h.lib.request("dataset_version", dataset=here._h.value.value))
        return self._schema_at(version), self._reopener_at(version)

    # Lifetime.

    def close(self) -> None:
        """Releases the handle, after stopping the loaders reading it;
        uncommitted writes are discarded. In a forked process it closes
        the snapshot opened there and forgets the parent's handle."""
        for go in list(self._loaders):
            go.close()
        sql, self._sql = self._sql, None
        if sql is not None:
            sql.close()
        view, self._view = self._view, None
        if view is not None and view[0] == os.getpid():
            view[1].close()
        self._h.close()

    def _sql_session(self) -> SQL | None:
        """Package-internal (:mod:`loch.query`): the SQL handle over this
        handle's version, opened on first use and kept until :meth:`close`;
        None where the library has no SQL (the ``loch`` command runs it)."""
        here = self._here()
        if here is not self:
            return here._sql_session()
        with _sql_lock:
            if self._sql is None or self._sql.closed:
                self._sql = open_sql(self._h)
            return self._sql

    def __reduce__(self) -> Any:
        """Pickles the dataset as its snapshot: unpickled, it is
        ``loch.open(url, version=version)``, read-only (see the class
        documentation). Staged writes are not carried. The
        ``storage_options`` it was opened with are, secrets included, in
        clear (credentials from the environment are not: each process
        reads its own); python/README.md, "Credentials in DataLoader
        workers"."""
        snapshot = self._reopener_at(self.version)
        if snapshot.url.startswith("mem://"):
            raise TypeError(
                f"{snapshot.url} is an in-memory dataset of this process and cannot be pickled: "
                "store it at a path or an object store URL to read it in other processes"
            )
        return snapshot, (None,)




def start_mix_loader(
    owner: object,
    datasets: Sequence[Dataset],
    weights: Sequence[float],
    epoch_rows: int,
    config: Mapping[str, Any],
    stream_depth: int = 0,
) -> tuple[Handle, tuple[int, int] | None]:
    """Package-internal (the seam of :class:`loch.mixture.Mixture`, as
    :meth:`Dataset._start_loader` is of one dataset): starts a Go loader
    mixing the current snapshots of ``datasets`` with ``weights`` and
    ``epoch_rows`` (loch_loader_new_mix, through the loader service),
    configured by ``config``, and returns its handle, streaming as
    :meth:`Dataset._start_loader` does. The handle closes the Go loader
    when ``owner`` is garbage collected, at the latest; closing any of the
    datasets closes it first."""
    for i, w in enumerate(weights):
        if not math.isfinite(w):  # JSON has no NaN or infinity: refused here, as Go would
            raise InvalidArgument(f"mixture: weight {i} is {w}, want a finite number >= 0")
    here = [d._here() for d in datasets]
    lib = here[0]._h.lib
    # Through the loader service, as Dataset._start_loader.
    result = lib.request("loader_new_mix", datasets=[d._h.value.value for d in here],
                         weights=[float(w) for w in weights], epoch_rows=int(epoch_rows), config=config,
                         **_depth(stream_depth))  # fmt: skip
    return _opened(owner, here, result)


def _depth(stream_depth: int) -> dict[str, int]:
    """The field of a loader_new(_mix) request that streams the loader at
    once (C ABI 15), if ``stream_depth`` asks for it."""
    return {"depth": stream_depth} if stream_depth else {}


def _opened(owner: object, here: Sequence[Dataset], result: Any) -> tuple[Handle, tuple[int, int] | None]:
    """The handle of the loader a loader_new(_mix) request opened over the
    datasets ``here`` (``result``: its handle, or with "depth" the handle
    and the caller's ends of the stream's pipes), closed with ``owner`` or
    any of the datasets at the latest; and those ends, if any."""
    fds = None
    if isinstance(result, dict):
        fds = (int(result["batch_fd"]), int(result["report_fd"]))
        result = result["loader"]
    lib = here[0]._h.lib
    handle = Handle(owner, lib, int(result), "loch_loader_close", "loader", close_op="loader_close")
    for d in here:
        d._loaders.add(_closer(owner, handle))
    return handle, fds


def _closer(owner: object, handle: Handle) -> Any:
    """What a dataset's close closes of a loader: its owner when the owner
    closes it (loch.loader's _GoLoader, which first reports to Go what it
    holds, under its lock), else its handle."""
    return owner if callable(getattr(owner, "close", None)) else handle


@dataclass(frozen=True)
class _Reopener:
    """The snapshot a loader reads, as a picklable function (see
    :meth:`Dataset._loader_view`): ``url`` at ``version``."""

    url: str
    version: str
    storage_options: dict[str, str] | None = field(default=None, repr=False)
    links: LinkPolicy | None = None

    def __call__(self, current: object) -> Dataset:
        """Returns ``current`` when it is a Dataset usable in this process
        (open or closed), else the snapshot opened here. In a process forked
        after the library was loaded, a private copy of the library is
        loaded first (the parent's Go runtime is gone; see
        :func:`loch._library.library`). Raises :class:`loch.NotFound` for a
        ``mem://`` dataset, which exists only in the process that made it."""
        if isinstance(current, Dataset) and current._h.lib.usable:
            return current
        if self.url.startswith("mem://"):
            raise NotFound(
                f"{self.url} is an in-memory dataset of another process and cannot be opened here: "
                "store it at a path or an object store URL to read it in other processes"
            )
        return open(self.url, version=self.version, storage_options=self.storage_options, links=self.links)
