"""Version control: the records that a dataset's git-like operations return.

Every commit is a version with a 32-hex-digit id. Branches are named
versions that commits advance; tags are names that never move. A handle
open at a branch writes there; one open at a tag, a version id or a time
is read-only::

    >>> import numpy as np, loch
    >>> ds = loch.create("mem://versions-doc", schema={"n": loch.Tensor("int64", shape=())})
    >>> ds.extend({"n": np.arange(3)}); v1 = ds.commit("three rows")
    >>> _ = ds.tag("v1")
    >>> _ = ds.branch("dev")
    >>> ds.checkout("dev"); ds.current_branch
    'dev'
    >>> ds.extend({"n": np.arange(3, 5)}); _ = ds.commit("two more on dev")
    >>> d = ds.diff("v1")                           # v1 against the handle's version
    >>> d.added, [r.id for r in d.rows]
    (2, [3, 4])
    >>> ds.checkout("main")
    >>> m = ds.merge("dev")                         # main had not moved: a fast forward
    >>> m.fast_forward, len(ds)
    (True, 5)
    >>> [r.name for r in ds.refs()]
    ['dev', 'main', 'v1']
    >>> loch.open("mem://versions-doc", ref="v1").read_only
    True

The records here are what :meth:`loch.Dataset.refs`, :meth:`~loch.Dataset.diff`,
:meth:`~loch.Dataset.merge`, :meth:`~loch.Dataset.gc` and
:meth:`~loch.Dataset.compact` return; a merge
that fails on conflicts raises :class:`loch.Conflict`, whose ``conflicts``
lists :class:`MergeConflict` records.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from .errors import InvalidArgument, MergeConflict
from .schema import Column

__all__ = [
    "Ref",
    "Diff",
    "RowChange",
    "ColumnChange",
    "MergeResult",
    "MergeConflict",
    "GCReport",
    "GCCount",
    "CompactReport",
]


@dataclass(frozen=True)
class Ref:
    """A named reference (``ds.refs()``).

    Attributes:
        name: the branch or tag name.
        kind: ``"branch"`` or ``"tag"``.
        commit: the version id it names.
    """

    name: str
    kind: str
    commit: str

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Ref:
        return cls(d["name"], d["kind"], d["commit"])


@dataclass(frozen=True)
class RowChange:
    """One row that differs between two versions, by stable row id.

    Attributes:
        id: the row id (as ``ds.row_ids()`` and a batch's ``"index"``).
        change: ``"added"``, ``"deleted"`` or ``"modified"``.
        columns: the modified columns (empty unless modified).
    """

    id: int
    change: str
    columns: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RowChange:
        return cls(int(d["id"]), d["change"], tuple(d.get("columns") or ()))


@dataclass(frozen=True)
class ColumnChange:
    """One schema difference between two versions.

    Attributes:
        name: the column.
        change: ``"added"``, ``"removed"`` or ``"changed"``.
        from_: the column in the first version (None when added).
        to: the column in the second version (None when removed).
    """

    name: str
    change: str
    from_: Column | None = None
    to: Column | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ColumnChange:
        def col(v: Any) -> Column | None:
            return None if v is None else Column.from_json(v)

        return cls(d["name"], d["change"], col(d.get("from")), col(d.get("to")))


@dataclass(frozen=True)
class Diff:
    """The difference between two versions (``ds.diff(a, b)``): counts of
    all rows added, deleted and modified, and one page of the rows
    themselves, by row id.

    Attributes:
        from_: the version id compared from.
        to: the version id compared to.
        added, deleted, modified: rows added, deleted and modified (all of
            them, not only this page's).
        modified_by_column: modified rows by column.
        schema: the columns added, removed or changed.
        rows: the changed rows of this page, by increasing id.
        next: the ``start`` of the next page, or None on the last page.

    Page through a large diff with ``next``::

        >>> d = ds.diff("v1", "main", limit=100)     # doctest: +SKIP
        >>> while d.next is not None:                # doctest: +SKIP
        ...     d = ds.diff("v1", "main", start=d.next, limit=100)
    """

    from_: str
    to: str
    added: int
    deleted: int
    modified: int
    modified_by_column: dict[str, int] = field(default_factory=dict)
    schema: list[ColumnChange] = field(default_factory=list)
    rows: list[RowChange] = field(default_factory=list)
    next: int | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Diff:
        nxt = d.get("next")
        return cls(
            from_=d["from"],
            to=d["to"],
            added=int(d.get("added", 0)),
            deleted=int(d.get("deleted", 0)),
            modified=int(d.get("modified", 0)),
            modified_by_column={k: int(v) for k, v in (d.get("modified_by_column") or {}).items()},
            schema=[ColumnChange.from_json(c) for c in d.get("schema") or ()],
            rows=[RowChange.from_json(r) for r in d.get("rows") or ()],
            next=None if nxt is None else int(nxt),
        )


@dataclass(frozen=True)
class MergeResult:
    """What ``ds.merge(src)`` did.

    Attributes:
        commit: the branch's head after the merge (the handle is there).
        base: the common ancestor of the two sides.
        fast_forward: the branch had not moved since ``base`` and now is at
            ``src`` (no merge commit).
        up_to_date: ``src`` was already merged: nothing changed.
        added, deleted, modified: rows the merge brought in.
        columns_added: columns the merge brought in.
        conflicts: rows changed on both sides, resolved by the strategy
            (``"ours"`` or ``"theirs"``).
    """

    commit: str
    base: str
    fast_forward: bool = False
    up_to_date: bool = False
    added: int = 0
    deleted: int = 0
    modified: int = 0
    columns_added: tuple[str, ...] = ()
    conflicts: list[MergeConflict] = field(default_factory=list)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> MergeResult:
        return cls(
            commit=d["commit"],
            base=d.get("base", ""),
            fast_forward=bool(d.get("fast_forward")),
            up_to_date=bool(d.get("up_to_date")),
            added=int(d.get("added", 0)),
            deleted=int(d.get("deleted", 0)),
            modified=int(d.get("modified", 0)),
            columns_added=tuple(d.get("columns_added") or ()),
            conflicts=[MergeConflict.from_json(c) for c in d.get("conflicts") or ()],
        )


@dataclass(frozen=True)
class GCCount:
    """A number of stored objects and their bytes."""

    objects: int = 0
    bytes: int = 0

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | None) -> GCCount:
        d = d or {}
        return cls(int(d.get("objects", 0)), int(d.get("bytes", 0)))


@dataclass(frozen=True)
class GCReport:
    """What ``ds.gc()`` deleted (or, in a dry run, would delete).

    Attributes:
        dry_run: nothing was deleted.
        reachable: objects kept because a branch or tag reaches them.
        young: unreachable objects kept because they are within the grace
            period (a writer may be about to commit them).
        deleted: objects deleted.
        by_kind: the deleted objects by kind (key prefix: ``"chunks"``,
            ``"fragments"``, ...).
        leased: unreachable objects kept because a live writer's lease
            covers them (staged, not yet committed).
        expired: versions (commits) that version retention expired and
            deleted.
        dead_leases: leases of writers gone long ago, deleted.
    """

    dry_run: bool
    reachable: GCCount
    young: GCCount
    deleted: GCCount
    by_kind: dict[str, GCCount] = field(default_factory=dict)
    leased: GCCount = field(default_factory=GCCount)
    expired: int = 0
    dead_leases: int = 0

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> GCReport:
        return cls(
            dry_run=bool(d.get("dry_run")),
            reachable=GCCount.from_json(d.get("reachable")),
            young=GCCount.from_json(d.get("young")),
            deleted=GCCount.from_json(d.get("deleted")),
            by_kind={k: GCCount.from_json(v) for k, v in (d.get("by_kind") or {}).items()},
            leased=GCCount.from_json(d.get("leased")),
            expired=int(d.get("expired") or 0),
            dead_leases=int(d.get("dead_leases") or 0),
        )


@dataclass(frozen=True)
class CompactReport:
    """What ``ds.compact()`` did (or, in a dry run, would do); also what
    :meth:`loch.Dataset.last_auto_compaction` returns.

    Attributes:
        dry_run: nothing was written.
        version: the commit written, or the unchanged head when there was
            nothing to compact (or in a dry run).
        fragments_before, fragments_after: the branch's fragments.
        groups: runs of fragments rewritten, each into one fragment.
        rewritten: the fragments they replaced.
        rows: live rows copied.
        dropped: deleted rows purged.
        bytes_before: chunk bytes of the replaced fragments.
        bytes_after: chunk bytes of the fragments written (0 in a dry run).
        yielded: groups left out because a concurrent commit changed their
            fragments (a later compaction takes them).
    """

    dry_run: bool
    version: str
    fragments_before: int
    fragments_after: int
    groups: int = 0
    rewritten: int = 0
    rows: int = 0
    dropped: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    yielded: int = 0

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CompactReport:
        return cls(
            dry_run=bool(d.get("dry_run")),
            version=d["version"],
            fragments_before=int(d.get("fragments_before", 0)),
            fragments_after=int(d.get("fragments_after", 0)),
            groups=int(d.get("groups", 0)),
            rewritten=int(d.get("rewritten", 0)),
            rows=int(d.get("rows", 0)),
            dropped=int(d.get("dropped", 0)),
            bytes_before=int(d.get("bytes_before", 0)),
            bytes_after=int(d.get("bytes_after", 0)),
            yielded=int(d.get("yielded", 0)),
        )


def gc_options(grace: float, dry_run: bool, keep_last: int, older_than: float) -> bytes:
    """The JSON options of a gc call (loch_dataset_gc, loch_catalog_gc): the
    grace period, dry run and version retention."""
    return json.dumps(
        {
            "grace_seconds": float(grace),
            "dry_run": bool(dry_run),
            "keep_last": int(keep_last),
            "older_than_seconds": float(older_than),
        }
    ).encode()


_FRACTION = re.compile(r"(\.\d{6})\d+")


def parse_time(s: str) -> datetime:
    """Parses an RFC 3339 time from Go (nanoseconds are cut to microseconds,
    "Z" is UTC)."""
    return datetime.fromisoformat(_FRACTION.sub(r"\1", s.replace("Z", "+00:00")))


def format_time(t: datetime | str) -> str:
    """The as_of time to hand to Go: a string as it is (Go's
    ``loch.ParseTime`` reads it, one rule for the CLI, SQL and Python: RFC
    3339, ``'YYYY-MM-DD HH:MM:SS'`` in UTC, or ``'YYYY-MM-DD'``, 00:00 UTC),
    or a datetime in RFC 3339 (naive ones are local time, as in
    :meth:`datetime.timestamp`)."""
    if isinstance(t, str):
        return t.strip()
    if not isinstance(t, datetime):
        raise InvalidArgument(f"as_of={t!r}: want a datetime or a time string such as 2024-05-01T12:00:00Z")
    return t.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
