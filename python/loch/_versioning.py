"""Version control of a dataset (the part of :class:`loch.Dataset` that
moves between versions): its log, branches and tags, checkout, revert,
diff, merge, gc and compaction. The values these return are in
:mod:`loch.versions`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ._snapshot import Snapshot, enc, json_options
from .errors import InvalidArgument
from .versions import CompactReport, Diff, GCReport, MergeResult, Ref, gc_options, parse_time

__all__ = ["Commit", "VersionControl"]


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



class VersionControl(Snapshot):
    """The version control of :class:`loch.Dataset` (see there)."""

    def log(self) -> list[Commit]:
        """The commits reachable from this version through all their
        parents (a merge commit brings in both sides), newest first::

        >>> [c.message for c in ds.log()]            # doctest: +SKIP
        ['first batch', 'create dataset']
        """
        out = []
        for c in self._read_json("loch_dataset_log"):
            out.append(Commit(c["id"], tuple(c.get("parents") or ()), c.get("message", ""), c.get("author", ""),
                              parse_time(c["time"]), c.get("rows", 0), c.get("branch", ""),
                              tuple(c.get("expired") or ())))  # fmt: skip
        return out

    def branch(self, name: str, from_: str | None = None) -> str:
        """Creates branch ``name`` at the version ``from_`` names (a branch,
        tag or version id; default: this handle's version) and returns that
        version's id. Nothing is copied. Raises :class:`loch.AlreadyExists`
        when a branch or tag of that name exists. The handle stays where it
        is: :meth:`checkout` the branch to write there::

            >>> _ = ds.branch("relabel")                 # doctest: +SKIP
            >>> ds.checkout("relabel")                   # doctest: +SKIP
        """
        return self._str("loch_dataset_create_branch", enc(name), enc(from_))

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
        return self._str("loch_dataset_create_tag", enc(name), enc(ref))

    def delete_branch(self, name: str) -> None:
        """Deletes a branch (not ``main``). Its commits stay readable by id
        until :meth:`gc` removes those that no other reference reaches.
        Raises :class:`loch.NotFound` when there is no such branch."""
        self._h.call("loch_dataset_delete_branch", enc(name))

    def delete_tag(self, name: str) -> None:
        """Deletes a tag. Raises :class:`loch.NotFound` when there is none."""
        self._h.call("loch_dataset_delete_tag", enc(name))

    def refs(self) -> list[Ref]:
        """The branches and then the tags, each sorted by name::

        >>> [(r.name, r.kind) for r in ds.refs()]    # doctest: +SKIP
        [('main', 'branch'), ('v1.0', 'tag')]
        """
        return [Ref.from_json(r) for r in self._read_json("loch_dataset_refs")]

    def resolve(self, ref: str) -> str:
        """The version id that ``ref`` (a branch, tag, version id or unique
        prefix of 6 or more hex digits) names now."""
        return self._read_str("loch_dataset_resolve", enc(ref))

    def checkout(self, ref: str) -> None:
        """Moves the handle to ``ref``: a branch (the handle then writes
        there) or a tag or version id (read-only). Raises
        :class:`loch.InvalidArgument` while writes are staged: commit them
        first. Loaders already made keep reading their version."""
        self._h.call("loch_dataset_checkout", enc(ref))
        self._track()

    def revert(self, ref: str, message: str | None = None) -> str:
        """Commits, on the handle's branch, the contents of the version
        ``ref`` names, and returns the new version id; history is kept (the
        new commit's parent is the branch's head)::

            >>> _ = ds.revert("v1.0", "undo the relabelling")   # doctest: +SKIP
        """
        version = self._str("loch_dataset_revert", enc(ref), enc(message), interruptible=True)
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
        return Diff.from_json(self._read_json("loch_dataset_diff", enc(a), enc(b), opts))

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
        opts = json_options(strategy=strategy, message=message)
        result = MergeResult.from_json(json.loads(self._str("loch_dataset_merge", enc(src), opts, interruptible=True)))
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
        opts = gc_options(grace, dry_run, keep_last, older_than)
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
        opts = json_options(target_rows=target_rows, target_bytes=target_bytes, max_deleted=max_deleted,
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
        opts = json_options(target_rows=target_rows, target_bytes=target_bytes, max_deleted=max_deleted,
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
