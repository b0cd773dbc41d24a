"""Writes to a dataset (the part of :class:`loch.Dataset` that stages and
commits): rows appended, updated and deleted, columns added, upserts,
commits, and staged writes committed by another process
(docs/format.md §7). The conversion of Python values is
:mod:`loch._write`'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ._snapshot import Snapshot
from ._write import columns_in, columns_of
from .schema import Column

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = ["UpsertReport", "Writes"]


@dataclass(frozen=True)
class UpsertReport:
    """What :meth:`Dataset.merge_insert` did: the version it committed (the
    unchanged version when nothing changed), the rows of the dataset it
    updated and the input rows it inserted."""

    version: str
    updated: int
    inserted: int



class Writes(Snapshot):
    """The writes of :class:`loch.Dataset` (see there)."""

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

    # Moving the staged writes, dropping them.

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
