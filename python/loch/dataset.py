"""Datasets: create, open, write, commit, read, and version control
(branches, tags, checkout, diff, merge, revert, gc; see
:mod:`loch.versions`), and compaction.

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
import json
import math
import os
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from . import _library
from ._buffers import Value, free_tensor, tensor_value
from ._handle import Handle
from ._library import Library, TensorOut, c_uintptr
from ._write import columns_in, columns_of
from .errors import InvalidArgument, NotFound
from .links import LinkPolicy
from .loader import Loader, LoaderOptions, check_keywords, keyword_signature
from .schema import Column, Schema
from .versions import CompactReport, Diff, GCReport, MergeResult, Ref, format_time, parse_time

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    import tensorflow as tf
    from typing_extensions import Unpack

    from .fts import TextIndexInfo, TextSearchResult
    from .jax import JaxLoader, JaxOptions
    from .query import Selection
    from .torch import TorchLoader, TorchOptions
    from .vector import IndexInfo, SearchResult

__all__ = ["Dataset", "ColumnReader", "Commit", "UpsertReport", "create", "open"]


@dataclass(frozen=True)
class Commit:
    """One commit of a dataset's history (``ds.log()``): its version id,
    its parents (two for a merge commit), message, author, time, number of
    rows and the branch it was made on; ``expired`` lists the parents that
    ``gc``'s version retention collected (the history before them is gone)."""

    id: str
    parents: tuple[str, ...]
    message: str
    author: str
    time: datetime
    rows: int
    branch: str
    expired: tuple[str, ...] = ()


@dataclass(frozen=True)
class UpsertReport:
    """What :meth:`Dataset.merge_insert` did: the version it committed (the
    unchanged version when nothing changed), the rows of the dataset it
    updated and the input rows it inserted."""

    version: str
    updated: int
    inserted: int


def _options(**kw: Any) -> bytes:
    return json.dumps({k: v for k, v in kw.items() if v is not None}).encode()


def _enc(s: str | None) -> bytes | None:
    """A string argument for C (None: NULL)."""
    return None if s is None else s.encode()


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
    opts = _options(parallelism=parallelism, author=author, storage_options=settings, links=_links(links),
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
    opts = _options(version=version, ref=ref, as_of=None if as_of is None else format_time(as_of),
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


class Dataset:
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

    def __init__(
        self, lib: Library, handle: int, keep: object = None, storage_options: Mapping[str, str] | None = None,
        links: LinkPolicy | None = None,
    ) -> None:
        # keep: an object this dataset keeps alive, the catalog of a table.
        # storage_options and links: those it was opened with, for
        # reopening it in other processes (the options never shown).
        self._keep = keep
        self._storage_options = None if storage_options is None else dict(storage_options)
        self._links = links
        self._h = Handle(self, lib, handle, "loch_dataset_close", "dataset")
        self._lib = lib
        self._schema: tuple[str, Schema] | None = None
        self._url: str | None = None
        # Go loaders reading this handle: their owners (loch.loader's, which
        # report what they hold before they close the handle), else handles.
        self._loaders: weakref.WeakSet[Any] = weakref.WeakSet()
        self._view: tuple[int, Dataset] | None = None  # (pid, this snapshot opened there) in a forked process
        self._at = self._reopener_at(self._h.lib.call_string("loch_dataset_version", self._h.value))

    # The process this handle belongs to, and the others.

    def _track(self) -> None:
        """Records in Python the snapshot the handle reads now, for a
        process forked from this one, where Go cannot be asked (see
        :meth:`_here`). Every method that moves the handle calls it."""
        self._at = self._reopener_at(self._h.lib.call_string("loch_dataset_version", self._h.value))

    def _reopener_at(self, version: str) -> _Reopener:
        """The snapshot ``version`` of this dataset as a :class:`_Reopener`."""
        return _Reopener(self.url, version, self._storage_options, self._links)

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

    # Identity and shape.

    @property
    def url(self) -> str:
        """The dataset's URL, without secrets."""
        if self._url is None:
            self._url = self._h.lib.call_string("loch_dataset_url", self._h.value)
        return self._url

    @property
    def version(self) -> str:
        """The id of the snapshot this handle reads."""
        h = self._here()._h
        return h.lib.call_string("loch_dataset_version", h.value)

    @property
    def pinned(self) -> bool:
        """Whether the handle is at a fixed version: the same as
        :attr:`read_only`."""
        return self.read_only

    @property
    def read_only(self) -> bool:
        """Whether the handle refuses writes (:class:`loch.ReadOnly`): it was
        opened or checked out at a tag, a version id or a time."""
        out = ctypes.c_int32()
        self._here()._h.call("loch_dataset_read_only", ctypes.byref(out))
        return bool(out.value)

    @property
    def current_branch(self) -> str | None:
        """The branch the handle writes to, or None when it is read-only."""
        h = self._here()._h
        return h.lib.call_string("loch_dataset_current_branch", h.value) or None

    @property
    def schema(self) -> Schema:
        """The columns, with their statistics (shapes seen, bytes stored)."""
        return self._schema_at(self.version)

    def _schema_at(self, version: str) -> Schema:
        """The schema, known to be that of snapshot ``version``: asked of Go
        when the one kept is another snapshot's."""
        if self._schema is None or self._schema[0] != version:
            h = self._here()._h
            self._schema = (version, Schema.from_json(h.lib.call_string("loch_dataset_schema", h.value)))
        return self._schema[1]

    def __len__(self) -> int:
        out = ctypes.c_int64()
        self._here()._h.call("loch_dataset_len", ctypes.byref(out))
        return out.value

    def __repr__(self) -> str:
        if self._h.closed:
            return "<loch.Dataset (closed)>"
        at = self.current_branch or "read-only"
        cols = list(self.schema)
        return f"<loch.Dataset {self.url} {at} version={self.version[:12]} rows={len(self)} columns={cols}>"

    def log(self) -> list[Commit]:
        """The commits reachable from this version through all their
        parents (a merge commit brings in both sides), newest first::

        >>> [c.message for c in ds.log()]            # doctest: +SKIP
        ['first batch', 'create dataset']
        """
        out = []
        for c in self._here()._str_json("loch_dataset_log"):
            out.append(Commit(c["id"], tuple(c.get("parents") or ()), c.get("message", ""), c.get("author", ""),
                              parse_time(c["time"]), c.get("rows", 0), c.get("branch", ""),
                              tuple(c.get("expired") or ())))  # fmt: skip
        return out

    def refresh(self) -> None:
        """Moves the handle to the newest snapshot of its branch (raises
        :class:`loch.ReadOnly` on a read-only handle), and the staged writes
        onto it: appends as they are, deleted and updated rows by row id when
        no other commit deleted or changed them since. Rows that another
        commit did delete or change stay staged as conflicts, which
        :meth:`commit` keeps refusing until :meth:`discard_conflicts` (or
        :meth:`discard`) drops them::

            >>> try:                                     # doctest: +SKIP
            ...     ds.commit("fix labels")
            ... except loch.Conflict:
            ...     ds.refresh()
            ...     ds.discard_conflicts()
            ...     ds.commit("fix labels")
            [17]
        """
        self._h.call("loch_dataset_refresh", interruptible=True)
        self._track()

    def discard(self) -> None:
        """Drops every staged write: appended rows, updates, deletions and
        new columns. The handle stays on its version."""
        self._h.call("loch_dataset_discard")

    def discard_conflicts(self) -> list[int]:
        """Drops the staged updates and deletions of the rows that the last
        :meth:`refresh` found deleted or changed by another commit, keeps
        the other staged writes, and returns the dropped row ids,
        ascending (``[]`` when there were none)."""
        ids: list[int] = self._h.lib.call_json("loch_dataset_discard_conflicts", self._h.value)
        return ids

    # Version control (see loch.versions).

    def _str(self, name: str, *args: Any, interruptible: bool = False) -> str:
        return self._h.lib.call_string(name, self._h.value, *args, interruptible=interruptible)

    def _str_json(self, name: str, *args: Any) -> Any:
        return json.loads(self._str(name, *args))

    def branch(self, name: str, from_: str | None = None) -> str:
        """Creates branch ``name`` at the version ``from_`` names (a branch,
        tag or version id; default: this handle's version) and returns that
        version's id. Nothing is copied. Raises :class:`loch.AlreadyExists`
        when a branch or tag of that name exists. The handle stays where it
        is: :meth:`checkout` the branch to write there::

            >>> _ = ds.branch("relabel")                 # doctest: +SKIP
            >>> ds.checkout("relabel")                   # doctest: +SKIP
        """
        return self._str("loch_dataset_create_branch", _enc(name), _enc(from_))

    def tag(self, name: str, ref: str | None = None) -> str:
        """Creates tag ``name`` at the version ``ref`` names (default: this
        handle's version) and returns that version's id. Tags never move;
        a handle opened at one is read-only. Raises
        :class:`loch.AlreadyExists` when a branch or tag of that name
        exists::

            >>> _ = ds.tag("v1.0")                       # doctest: +SKIP
            >>> loch.open(ds.url, ref="v1.0").read_only  # doctest: +SKIP
            True
        """
        return self._str("loch_dataset_create_tag", _enc(name), _enc(ref))

    def delete_branch(self, name: str) -> None:
        """Deletes a branch (not ``main``). Its commits stay readable by id
        until :meth:`gc` removes those that no other reference reaches.
        Raises :class:`loch.NotFound` when there is no such branch."""
        self._h.call("loch_dataset_delete_branch", _enc(name))

    def delete_tag(self, name: str) -> None:
        """Deletes a tag. Raises :class:`loch.NotFound` when there is none."""
        self._h.call("loch_dataset_delete_tag", _enc(name))

    def refs(self) -> list[Ref]:
        """The branches and then the tags, each sorted by name::

        >>> [(r.name, r.kind) for r in ds.refs()]    # doctest: +SKIP
        [('main', 'branch'), ('v1.0', 'tag')]
        """
        return [Ref.from_json(r) for r in self._here()._str_json("loch_dataset_refs")]

    def resolve(self, ref: str) -> str:
        """The version id that ``ref`` (a branch, tag, version id or unique
        prefix of 6 or more hex digits) names now."""
        return self._here()._str("loch_dataset_resolve", _enc(ref))

    def checkout(self, ref: str) -> None:
        """Moves the handle to ``ref``: a branch (the handle then writes
        there) or a tag or version id (read-only). Raises
        :class:`loch.InvalidArgument` while writes are staged: commit them
        first. Loaders already made keep reading their version."""
        self._h.call("loch_dataset_checkout", _enc(ref))
        self._track()

    def revert(self, ref: str, message: str | None = None) -> str:
        """Commits, on the handle's branch, the contents of the version
        ``ref`` names, and returns the new version id; history is kept (the
        new commit's parent is the branch's head)::

            >>> _ = ds.revert("v1.0", "undo the relabelling")   # doctest: +SKIP
        """
        version = self._str("loch_dataset_revert", _enc(ref), _enc(message), interruptible=True)
        self._track()
        return version

    def diff(self, a: str, b: str | None = None, *, start: int = 0, limit: int = 1000) -> Diff:
        """Compares version ``a`` with version ``b`` (refs; default: this
        handle's version): the counts of rows added, deleted and modified
        (per column) by stable row id, the schema changes, and the changed
        rows with ids from ``start`` on, at most ``limit`` of them (0: none,
        counts only; page on with ``start=diff.next``)::

            >>> d = ds.diff("v1.0", "main")              # doctest: +SKIP
            >>> d.added, d.deleted, d.modified_by_column, d.rows[:1]   # doctest: +SKIP
            (64, 2, {'label': 3}, [RowChange(id=5, change='modified', columns=('label',))])
        """
        if start < 0:
            raise InvalidArgument(f"diff start={start}: want a row id (0 or more)")
        opts = json.dumps({"start": int(start), "limit": int(limit) if limit > 0 else -1}).encode()
        return Diff.from_json(self._here()._str_json("loch_dataset_diff", _enc(a), _enc(b), opts))

    def merge(self, src: str, strategy: str = "fail", message: str | None = None) -> MergeResult:
        """Merges the version ``src`` names into the handle's branch, three
        way by stable row id against their common ancestor, commits, and
        moves the handle to the result. Rows appended on either side are
        kept. Rows changed on both sides are conflicts: with ``strategy``
        ``"fail"`` nothing changes and :class:`loch.Conflict` is raised,
        its ``conflicts`` listing them; ``"ours"`` keeps this branch's rows,
        ``"theirs"`` takes the source's::

            >>> try:                                     # doctest: +SKIP
            ...     ds.merge("relabel")
            ... except loch.Conflict as e:
            ...     ds.merge("relabel", strategy="theirs")
        """
        opts = _options(strategy=strategy, message=message)
        result = MergeResult.from_json(json.loads(self._str("loch_dataset_merge", _enc(src), opts, interruptible=True)))
        self._track()
        return result

    def gc(
        self, grace: float = 86400.0, dry_run: bool = False, keep_last: int = 0, older_than: float = 0.0
    ) -> GCReport:
        """Deletes the stored objects that no branch or tag reaches and that
        are older than ``grace`` seconds (so that other writers' objects not
        yet committed survive; a writer's live lease keeps its objects
        however old), and reports them; ``dry_run`` only reports::

            >>> ds.gc(dry_run=True).deleted              # doctest: +SKIP
            GCCount(objects=12, bytes=48213)

        Version retention: with ``keep_last`` and/or ``older_than``
        (seconds), a version that is none of the newest ``keep_last``
        (at least 1) of a branch's first-parent history and is older than
        ``older_than`` (any age when 0) expires, and what only expired
        versions use is deleted. Branch heads, tags and saved selections'
        versions are kept, whole (docs/format.md §5.2)::

            >>> ds.gc(keep_last=10, older_than=7 * 86400).expired  # doctest: +SKIP
            42
        """
        if keep_last < 0 or older_than < 0:
            raise InvalidArgument(f"gc keep_last={keep_last}, older_than={older_than}: want 0 or more")
        opts = json.dumps(
            {
                "grace_seconds": float(grace),
                "dry_run": bool(dry_run),
                "keep_last": int(keep_last),
                "older_than_seconds": float(older_than),
            }
        ).encode()
        return GCReport.from_json(json.loads(self._str("loch_dataset_gc", opts, interruptible=True)))

    def compact(
        self,
        target_rows: int | None = None,
        target_bytes: int | None = None,
        max_deleted: float | None = None,
        fanout: int | None = None,
        dry_run: bool = False,
        message: str | None = None,
    ) -> CompactReport:
        """Rewrites the small fragments, and the fragments with many deleted
        rows, of the handle's branch into fragments of the target size, as
        one commit, moves the handle there and reports what it did
        (docs/format.md §8). Every live row keeps its row id, its values
        and its position; deleted rows are dropped.

        A fragment is small below half of ``target_rows`` live rows
        (default 1,048,576) and half of ``target_bytes`` stored bytes
        (default 512 MiB); it has too many deleted rows above the fraction
        ``max_deleted`` (default 0.1; negative: never). ``fanout`` (2 or
        more) compacts in tiers, as ``auto_compact`` does: only runs of at
        least ``fanout`` small fragments of one size class are merged.
        ``dry_run`` plans and reports and writes nothing. ``message`` is
        the commit message (default ``"compact"``).

        Compaction never makes another writer's commit fail: if the branch
        moved meanwhile it rebases, and leaves out (``yielded``) the
        groups whose fragments changed. Raises :class:`loch.InvalidArgument`
        while writes are staged (commit them first) and
        :class:`loch.ReadOnly` on a read-only handle::

            >>> ds = loch.create("mem://compact-doc", schema={"n": loch.Tensor("int64", shape=())})
            >>> for i in range(4):
            ...     ds.extend({"n": np.arange(i * 10, i * 10 + 10)}); _ = ds.commit(f"batch {i}")
            >>> rep = ds.compact()
            >>> rep.fragments_before, rep.fragments_after, rep.rows
            (4, 1, 40)
        """
        opts = _options(target_rows=target_rows, target_bytes=target_bytes, max_deleted=max_deleted,
                        fanout=fanout, dry_run=bool(dry_run), message=message)  # fmt: skip
        report = CompactReport.from_json(json.loads(self._str("loch_dataset_compact", opts, interruptible=True)))
        self._track()
        return report

    # Compaction in several processes (docs/format.md §8; loch.ray.compact).

    def plan_compaction(
        self,
        target_rows: int | None = None,
        target_bytes: int | None = None,
        max_deleted: float | None = None,
        fanout: int | None = None,
        message: str | None = None,
    ) -> dict[str, Any]:
        """Plans a compaction of the handle's branch as :meth:`compact`
        would, writing nothing, and returns the plan: a JSON-serialisable
        dict whose ``"groups"`` are the runs of fragments to rewrite and
        ``"report"`` the dry run's figures. Each group is rewritten by
        :meth:`compact_group` on any handle of the dataset, in any process,
        and the results are committed once with :meth:`commit_compaction`::

            >>> plan = ds.plan_compaction()                                  # doctest: +SKIP
            >>> done = [ds.compact_group(plan, i) for i in range(len(plan["groups"]))]  # doctest: +SKIP
            >>> ds.commit_compaction(plan, done).fragments_after             # doctest: +SKIP
            1
        """
        opts = _options(target_rows=target_rows, target_bytes=target_bytes, max_deleted=max_deleted,
                        fanout=fanout, message=message)  # fmt: skip
        out: dict[str, Any] = json.loads(self._str("loch_dataset_plan_compaction", opts, interruptible=True))
        return out

    def compact_group(self, plan: Mapping[str, Any], index: int) -> dict[str, Any]:
        """Rewrites group ``index`` of ``plan`` (:meth:`plan_compaction`'s)
        into one fragment and returns its description, for
        :meth:`commit_compaction`. Any handle of the plan's dataset may do
        it, read-only ones too; the fragment is unreferenced (and deleted
        by ``loch gc`` after its grace period) until committed."""
        out: dict[str, Any] = json.loads(self._str("loch_dataset_compact_group", json.dumps(dict(plan)).encode(),
                                                   int(index), interruptible=True))  # fmt: skip
        return out

    def commit_compaction(self, plan: Mapping[str, Any], groups: Sequence[Mapping[str, Any]]) -> CompactReport:
        """Publishes the groups of ``plan`` that :meth:`compact_group`
        rewrote as one commit on the handle's branch, rebased onto the
        head as :meth:`compact` does, and moves the handle there. Groups
        without a description are not compacted. Raises
        :class:`loch.InvalidArgument` for a description of another plan and
        :class:`loch.Corrupt` for a fragment that does not hold its group's
        rows (nothing is committed)."""
        report = CompactReport.from_json(json.loads(self._str(
            "loch_dataset_commit_compaction", json.dumps(dict(plan)).encode(),
            json.dumps([dict(g) for g in groups]).encode(), interruptible=True)))  # fmt: skip
        self._track()
        return report

    def last_auto_compaction(self) -> CompactReport | None:
        """The report of the last compaction that the handle's
        ``auto_compact`` option ran after a commit, or None if none ran
        yet. Raises that compaction's error if it failed (the commit before
        it stands; the next commit tries again)."""
        d = json.loads(self._str("loch_dataset_last_auto_compaction"))
        return None if d is None else CompactReport.from_json(d)

    def row_ids(self, start: int = 0, end: int | None = None) -> np.ndarray:
        """The stable ids (uint64) of the rows at positions [start, end),
        for :meth:`update` and :meth:`delete`."""
        n = len(self)
        end = n if end is None else end
        out = np.empty(max(end - start, 0), dtype=np.uint64)
        self._here()._h.call("loch_dataset_row_ids", start, end, out.ctypes.data)
        return out

    # Writes.

    def extend(self, columns: Mapping[str, Any] | Sequence[Mapping[str, Any]] | pd.DataFrame | pa.Table) -> None:
        """Stages rows, given column by column: each value is a numpy array
        whose first axis is the rows (passed to Go without a copy when it
        has the column's dtype), or a sequence with one value per row
        (arrays of differing shapes, ``str``, ``bytes``, JSON values,
        :class:`loch.EncodedImage`, or None for an empty sample). Columns
        left out are empty. Nothing is staged if any row is invalid
        (:class:`loch.InvalidArgument`, naming the column)::

            >>> ds.extend({"angles": np.zeros((64, 7), np.float32), "meta": [{}] * 64})  # doctest: +SKIP

        The rows may also be given as a list of dicts (a column a row leaves
        out is empty there), a pandas DataFrame (missing values, as
        ``pandas.isna`` sees them, are empty samples, as in a pyarrow Table
        made from it; an integer column takes a float column, which pandas
        makes of integers with a missing value, when its values are whole
        numbers) or a pyarrow Table or RecordBatch
        (nulls are empty samples; numeric and fixed-size list columns pass
        as arrays)::

            >>> ds.extend([{"angles": np.zeros(7, np.float32), "meta": {"run": 1}}, {"meta": {"run": 2}}])  # doctest: +SKIP
            >>> ds.extend(pandas.DataFrame({"label": [0, 1], "caption": ["a cat", "a dog"]}))  # doctest: +SKIP
            >>> ds.extend(pyarrow.table({"label": [0, 1], "caption": ["a cat", None]}))  # doctest: +SKIP
        """
        n, arr, keep = columns_in(self.schema, columns_of(columns))
        self._h.call("loch_dataset_extend", n, arr, len(arr), interruptible=True)
        del keep

    def append(self, row: Mapping[str, Any]) -> None:
        """Stages one row, a mapping of column names to samples::

        >>> ds.append({"angles": np.zeros(7, np.float32), "meta": {"ok": True}})  # doctest: +SKIP
        """
        self.extend({k: [v] for k, v in row.items()})

    def update(self, row_id: int, values: Mapping[str, Any]) -> None:
        """Stages new samples for some columns of the row with this id (see
        :meth:`row_ids`); its other columns keep their values."""
        n, arr, keep = columns_in(self.schema, {k: [v] for k, v in values.items()})
        self._h.call("loch_dataset_update", int(row_id), arr, len(arr), interruptible=True)
        del keep

    def delete(self, row_ids: Iterable[int]) -> None:
        """Stages the deletion of rows by id."""
        ids = np.ascontiguousarray(list(row_ids), dtype=np.uint64)
        self._h.call("loch_dataset_delete", ids.ctypes.data, len(ids))

    def merge_insert(
        self,
        data: Mapping[str, Any] | Sequence[Mapping[str, Any]] | pd.DataFrame | pa.Table,
        on: str | Sequence[str],
        when_matched: Literal["update", "nothing"] = "update",
        when_not_matched: Literal["insert", "nothing"] = "insert",
        message: str | None = None,
    ) -> UpsertReport:
        """Upserts rows by key, as one commit (SQL's MERGE): each input row
        whose key columns ``on`` equal an existing row's updates that row in
        place (it keeps its row id and position; the columns the input has
        are set, the others kept), and each that matches no row is appended,
        in input order. ``data`` takes the forms of :meth:`extend`. A null
        key matches nothing. ``when_matched="nothing"`` only inserts,
        ``when_not_matched="nothing"`` only updates::

            >>> ds = loch.create("mem://people", schema={"id": loch.Tensor("int64", shape=()), "name": loch.Text()})  # doctest: +SKIP
            >>> ds.extend({"id": np.array([1, 2]), "name": ["John", "Anna"]}); _ = ds.commit("two")  # doctest: +SKIP
            >>> ds.merge_insert({"id": np.array([2, 3]), "name": ["Ann", "Lee"]}, on="id")  # doctest: +SKIP
            UpsertReport(version='...', updated=1, inserted=1)
            >>> [ds["name"][i] for i in range(len(ds))]  # doctest: +SKIP
            ['John', 'Ann', 'Lee']

        Raises :class:`loch.InvalidArgument` when two input rows have the
        same key (naming the key and both rows), a key column does not
        exist or holds encoded images or media, an input row lacks a key
        column, or writes are staged on the handle (commit or discard them
        first); nothing is committed then. The handle moves to the new
        version."""
        keys = [on] if isinstance(on, str) else list(on)
        n, arr, keep = columns_in(self.schema, columns_of(data))
        opts = json.dumps(
            {"on": keys, "when_matched": when_matched, "when_not_matched": when_not_matched, "message": message or ""}
        ).encode()
        out = self._str("loch_dataset_upsert", n, arr, len(arr), opts, interruptible=True)
        del keep
        self._track()
        rep = json.loads(out)
        return UpsertReport(version=rep["version"], updated=int(rep.get("updated", 0)), inserted=int(rep.get("inserted", 0)))

    def add_column(self, name: str, column: Column) -> None:
        """Stages a new column, empty in the existing rows::

        >>> ds.add_column("caption", loch.Text())      # doctest: +SKIP
        """
        self._h.call("loch_dataset_add_column", json.dumps(column.to_json(name)).encode())

    def commit(self, message: str = "") -> str:
        """Makes the staged writes visible as a new snapshot and returns its
        version id. Commits that other writers made since the handle's
        snapshot are no obstacle: the writes are rebased onto them, appends
        always, updates and deletions by row id. Raises
        :class:`loch.Conflict`, naming the rows (its ``row_ids``), when
        another commit deleted or changed rows this one updates or deletes:
        nothing is committed and the writes stay staged (see
        :meth:`refresh`, :meth:`discard_conflicts` and :meth:`discard`)."""
        version = self._h.lib.call_string("loch_dataset_commit", self._h.value, message.encode(), interruptible=True)
        self._track()
        return version

    # Staged writes: many writers, one commit (docs/format.md §7).

    def stage(self) -> dict[str, Any]:
        """Writes the rows staged with :meth:`extend` or :meth:`append` as
        fragments without committing them, and returns their description: a
        small JSON-serialisable dict (fragment keys, row counts, column
        statistics, the dataset's id, a checksum) to hand to whoever
        commits, with :meth:`commit_staged`. Only appended rows can be
        staged (:class:`loch.InvalidArgument` otherwise). Rows staged and
        never committed are deleted by ``loch gc`` after its grace period::

            >>> ds.extend({"n": np.arange(1000)})      # doctest: +SKIP
            >>> desc = ds.stage()                      # doctest: +SKIP
            >>> ds.commit_staged([desc, other_desc])   # doctest: +SKIP
        """
        out: dict[str, Any] = json.loads(self._h.lib.call_string("loch_dataset_stage", self._h.value, interruptible=True))
        return out

    def commit_staged(self, descriptions: Sequence[Mapping[str, Any] | str], message: str = "") -> dict[str, Any]:
        """Publishes the rows of staged-write descriptions (:meth:`stage`'s
        dicts, or their JSON) as one commit on the handle's branch. A
        description already published on the branch is skipped, so a
        retried commit adds its rows once. Any description of another
        dataset, of a newer format, edited, or naming a missing or altered
        fragment refuses the whole commit (nothing is committed). Returns
        ``{"version", "published", "skipped", "rows"}``: the new version
        id, the ids of the descriptions published and skipped, and the
        number of rows added."""
        descs = [json.loads(d) if isinstance(d, str) else dict(d) for d in descriptions]
        out: dict[str, Any] = json.loads(
            self._h.lib.call_string(
                "loch_dataset_commit_staged", self._h.value, message.encode(), json.dumps(descs).encode(), interruptible=True
            )
        )
        self._track()
        return out

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

    def fragment_rows(self) -> list[int]:
        """The live rows of each fragment of the handle's version, in row
        order (they sum to ``len(ds)``): the units of a parallel read
        (:func:`loch.ray.read` makes one task per group of them)."""
        out: list[int] = self._h.lib.call_json("loch_dataset_fragment_rows", self._h.value)
        return out

    # Reads.

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
        h = self._here()._h
        out = ctypes.POINTER(TensorOut)()
        if positions is None:
            h.call("loch_dataset_read_range", column.encode(), start, end, ctypes.byref(out))
        else:
            pos = np.ascontiguousarray(positions, dtype=np.int64)
            h.call("loch_dataset_read", column.encode(), pos.ctypes.data, len(pos), ctypes.byref(out))
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
        h = self._here()._h
        out = ctypes.POINTER(TensorOut)()
        h.call("loch_dataset_fetch", column.encode(), int(position), ctypes.byref(out))
        try:
            value, _, _ = tensor_value(h.lib, out.contents, stack=False)
        finally:
            free_tensor(h.lib, out)
        return bytes(value[0])

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

        return query(self, _open_version, sql, seed)

    def sql(self, sql: str, seed: int | None = None) -> Any:
        """Runs SQL (DuckDB's dialect; docs/query.md) over this handle's
        version, the table ``ds``, and returns its result as a
        ``pyarrow.Table`` (needs pyarrow), whatever it computes::

            >>> ds.sql("SELECT label, count(*) AS n FROM ds GROUP BY label ORDER BY label").to_pylist()  # doctest: +SKIP
            [{'label': 'cat', 'n': 5}, {'label': 'dog', 'n': 5}]

        ``seed`` seeds ``random()``. It runs in the ``loch`` command, with
        the handle's ``storage_options``, and only reads (docs/query.md).
        """
        from .query import table

        return table(self, sql, seed)

    def selection(self, name: str) -> Selection:
        """The saved selection ``name`` (:meth:`loch.Selection.save`, ``loch
        query --save``), at the version it ran on, without running it again."""
        from .query import Selection

        data = self._here()._str_json("loch_dataset_selection", _enc(name))
        table_at = getattr(self._keep, "_table_at", None)  # a catalog's table
        if table_at is not None and (table := table_at(self.url)) is not None:
            data |= {"table": table, "root": self._keep.url}  # type: ignore[union-attr]
            keep = self._keep
            return Selection(self, data, lambda _url, version: keep.open_table(table, version=version), name=name)  # type: ignore[union-attr]
        return Selection(self, data, _open_version, name=name)

    def selections(self) -> list[dict[str, Any]]:
        """The saved selections, sorted by name: dicts of name, key,
        version, sql, seed (when it had one) and rows."""
        return list(self._here()._str_json("loch_dataset_selections"))

    def save_selection(self, name: str, selection: Selection) -> None:
        """Stores ``selection`` under ``name`` in the dataset's log, like a
        tag: ``gc`` keeps it and the version it ran on (see
        :meth:`loch.Selection.save`)."""
        sel = {"version": selection.version, "sql": selection.sql, "seed": selection.seed,
               "columns": selection.columns, "row_ids": [int(r) for r in selection.row_ids]}  # fmt: skip
        if selection.joined:
            sel["joined"] = selection.joined
        self._here()._h.call("loch_dataset_save_selection", _enc(name), json.dumps(sel).encode())

    def delete_selection(self, name: str) -> None:
        """Removes the name of a saved selection; ``gc`` frees what it kept."""
        self._here()._h.call("loch_dataset_delete_selection", _enc(name))

    def positions(self, row_ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """The positions (int64) in this handle's version of the rows with
        these stable ids, in the order given; :class:`loch.NotFound` when
        one is not a live row of it."""
        ids = np.ascontiguousarray(row_ids, dtype=np.uint64)
        out = np.empty(len(ids), dtype=np.int64)
        self._here()._h.call("loch_dataset_positions", ids.ctypes.data, len(ids), out.ctypes.data)
        return out

    # Vector search (loch.vector).

    def create_index(self, column: str, metric: str = "cosine", *, nlist: int | None = None, sample: int | None = None,
                     iterations: int | None = None, seed: int = 0, kind: str = "vector") -> IndexInfo | TextIndexInfo:  # fmt: skip
        """Builds the nearest-neighbour index of an embedding ``column`` (a
        fixed ``[d]`` column of float32, float16 or bfloat16) for
        ``metric`` (``"cosine"``, ``"l2"`` or ``"dot"``) at this handle's
        version, stores it in the dataset and returns its
        :class:`loch.IndexInfo`. The index is IVF-flat: ``nlist`` k-means
        centroids (default: the square root of the rows) trained on
        ``sample`` rows with ``iterations`` rounds from ``seed``. A tag keeps
        its version's index, branches share their ancestors', ``gc``
        collects the rest::

            >>> info = ds.create_index("embedding", metric="cosine")  # doctest: +SKIP

        ``kind="fts"`` builds the full-text (BM25) index of a text or json
        column instead (:mod:`loch.fts`)::

            >>> info = ds.create_index(column="caption", kind="fts")  # doctest: +SKIP
        """
        from .vector import check_metric, index_info

        if kind != "vector":
            return _fts_kind(kind).create_index(self, column)

        opts = {"metric": check_metric(metric), "nlist": nlist or 0, "sample": sample or 0, "iterations": iterations or 0, "seed": int(seed)}
        return index_info(self._here()._str_json("loch_vector_build", column.encode(), json.dumps(opts).encode()))

    def update_index(self, column: str, metric: str = "cosine", *, kind: str = "vector") -> IndexInfo | TextIndexInfo:
        """Writes the index of this handle's version from the index of its
        newest indexed ancestor, without retraining: rows deleted or updated
        since leave the lists, rows appended or updated since join their
        nearest centroid's list. Raises :class:`loch.NotFound` when no
        index serves this version. ``kind="fts"``: the full-text index."""
        from .vector import check_metric, index_info

        if kind != "vector":
            return _fts_kind(kind).update_index(self, column)

        return index_info(self._here()._str_json("loch_vector_update", column.encode(), check_metric(metric).encode()))

    def search(self, vector: Any = None, k: int = 10, *, column: str, metric: str = "cosine", where: str | None = None,
               columns: Sequence[str] = (), nprobe: int | None = None, exact: bool = False,
               text: str | None = None) -> SearchResult | list[SearchResult] | TextSearchResult:  # fmt: skip
        """The ``k`` rows of this handle's version nearest to ``vector`` in
        the embedding ``column`` by ``metric``: a :class:`loch.SearchResult`
        (row ids, distances, the ``columns`` asked for) for one vector
        ``[d]``, a list of them for a batch ``[n, d]``.

        It uses the column's index for ``metric`` when this version or an
        ancestor has one (scanning ``nprobe`` lists; rows added or changed
        since it was built are searched exactly), else compares every row
        (``exact=True`` always does). ``where`` keeps only the rows that
        pass an SQL condition over the table ``ds`` (run by the ``loch``
        command, as :meth:`query` is); the result is the top ``k`` among
        them (the index scans more of its lists as the filter narrows, and
        every list, exactly, when under 12.5% of the rows pass)::

            >>> hits = ds.search(np.ones(128), k=5, column="embedding", where="label = 3", columns=["label"])  # doctest: +SKIP
            >>> hits.row_ids, hits.distances, hits.columns["label"]  # doctest: +SKIP

        ``text="..."`` (instead of ``vector``) is a full-text query over a
        text or json ``column``, answered from its BM25 index
        (:mod:`loch.fts`): a :class:`loch.fts.TextSearchResult` with
        ``row_ids`` and ``scores``, best first::

            >>> hits = ds.search(text='"red car" -truck', column="caption", k=10)  # doctest: +SKIP
        """
        from .vector import SearchResult, check_metric, query_matrix

        if text is not None or vector is None:
            if vector is not None or text is None:
                raise InvalidArgument("search: give either vector or text")
            return _fts_kind("fts").search(self, text, k, column, where, columns)

        if k <= 0:
            raise InvalidArgument(f"k = {k}: want k >= 1")
        q, single = query_matrix(vector)
        for c in columns:
            if c not in self.schema:
                raise KeyError(f"no column {c!r} (have {list(self.schema)})")
        allowed: np.ndarray | None = None
        if where is not None:
            allowed = np.ascontiguousarray(self.query(f"SELECT _rowid FROM ds WHERE {where}").row_ids, dtype=np.uint64)
        n, d = q.shape
        ids = np.zeros((n, k), dtype=np.uint64)
        dists = np.zeros((n, k), dtype=np.float32)
        counts = np.zeros(n, dtype=np.int64)
        opts = {"metric": check_metric(metric), "nprobe": int(nprobe or 0), "exact": bool(exact)}
        here = self._here()
        meta = json.loads(here._str(
            "loch_vector_search", column.encode(), json.dumps(opts).encode(), q.ctypes.data, n, d, k,
            None if allowed is None or len(allowed) == 0 else allowed.ctypes.data, -1 if allowed is None else len(allowed),
            ids.ctypes.data, dists.ctypes.data, counts.ctypes.data, interruptible=True,
        ))  # fmt: skip
        out = []
        for i in range(n):
            m = int(counts[i])
            r = SearchResult(row_ids=ids[i, :m].copy(), distances=dists[i, :m].copy(), index=meta["index"] or None, warnings=list(meta["warnings"]))
            if columns:
                pos = here.positions(r.row_ids).tolist() if m else []
                r.columns = {c: [ColumnReader(here, c)[p] for p in pos] for c in columns}
            out.append(r)
        return out[0] if single else out

    # Loaders.

    @keyword_signature("numpy")
    def numpy(self, **kwargs: Unpack[LoaderOptions]) -> Loader:
        """A :class:`loch.Loader` streaming batches as dicts of numpy arrays
        (arguments as for :meth:`pytorch`, without the torch ones)."""
        check_keywords("ds.numpy()", kwargs, LoaderOptions)
        return Loader(self, **kwargs)

    @keyword_signature("pytorch")
    def pytorch(self, **kwargs: Unpack[TorchOptions]) -> TorchLoader:
        """A PyTorch IterableDataset streaming batches as dicts of tensors
        (see :class:`loch.torch.TorchLoader`)::

            >>> for batch in ds.pytorch(batch_size=64, shuffle=True, columns=["camera", "angles"]):  # doctest: +SKIP
            ...     batch["camera"].shape, batch["index"]
        """
        from .torch import TorchLoader, TorchOptions

        check_keywords("ds.pytorch()", kwargs, TorchOptions)
        return TorchLoader(self, **kwargs)

    @keyword_signature("jax")
    def jax(self, **kwargs: Unpack[JaxOptions]) -> JaxLoader:
        """Batches as dicts of jax arrays, optionally placed on a sharding
        (see :class:`loch.jax.JaxLoader`)."""
        from .jax import JaxLoader, JaxOptions

        check_keywords("ds.jax()", kwargs, JaxOptions)
        return JaxLoader(self, **kwargs)

    @keyword_signature("tensorflow")
    def tensorflow(self, **kwargs: Unpack[LoaderOptions]) -> tf.data.Dataset:
        """A ``tf.data.Dataset`` of batches (see :func:`loch.tensorflow.dataset`)."""
        from .tensorflow import dataset

        check_keywords("ds.tensorflow()", kwargs, LoaderOptions)
        return dataset(self, **kwargs)

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
        view, self._view = self._view, None
        if view is not None and view[0] == os.getpid():
            view[1].close()
        self._h.close()

    @property
    def closed(self) -> bool:
        return self._h.closed

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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


def _open_version(url: str, version: str) -> Dataset:
    """Opens url at a version id: how a selection reaches its version."""
    return open(url, version=version)


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

    def __init__(self, dataset: Dataset, name: str) -> None:
        self._ds = dataset
        self.name = name

    @property
    def column(self) -> Column:
        """The column's type and statistics."""
        return self._ds.schema[self.name]

    def __len__(self) -> int:
        return len(self._ds)

    def __repr__(self) -> str:
        return f"<loch.ColumnReader {self.name!r} {self.column!r}>"

    def __getitem__(self, key: int | slice | Sequence[int] | np.ndarray) -> Any:
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
        lib = self._ds._here()._h
        out = ctypes.POINTER(TensorOut)()
        if frames is not None:
            if segment is not None or rate is not None:
                raise InvalidArgument("read: frames is for video columns, segment and rate for audio: give one or the other")
            if frames.step is not None and frames.step < 1 or (frames.start or 0) < 0 or (frames.stop or 0) < 0:
                raise InvalidArgument(f"frames {frames!r}: want a slice with start, stop >= 0 and step >= 1")
            w, h = size if size is not None else (0, 0)
            stop = -1 if frames.stop is None else frames.stop
            lib.call("loch_dataset_read_frames", self.name.encode(), row, frames.start or 0, stop, frames.step or 1,
                     int(w), int(h), ctypes.byref(out))  # fmt: skip
        else:
            if size is not None:
                raise InvalidArgument("read: size is for video frames, not audio")
            start, count = (0, -1) if segment is None else (int(segment[0]), int(segment[1]))
            if start < 0 or (segment is not None and count < 0) or (rate is not None and int(rate) < 1):
                raise InvalidArgument(f"segment {segment!r} at rate {rate!r}: want start, n >= 0 and a positive rate")
            lib.call("loch_dataset_read_audio", self.name.encode(), row, int(start), int(count), int(rate or 0),
                     ctypes.byref(out))  # fmt: skip
        try:
            value, _, _ = tensor_value(lib.lib, out.contents, stack=False)
        finally:
            free_tensor(lib.lib, out)
        return value[0]

    def __iter__(self) -> Any:
        for i in range(len(self)):
            yield self[i]


def _fts_kind(kind: str) -> Any:
    """The module of index kind ``kind`` other than "vector": loch.fts."""
    if kind != "fts":
        raise InvalidArgument(f"index kind {kind!r}: want 'vector' or 'fts'")
    from . import fts

    return fts
