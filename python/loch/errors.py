"""The exceptions loch raises: one hierarchy under :class:`Error`.

Every error from the Go core arrives as the subclass matching its class,
with the Go message, which names the object and what was expected::

    >>> import loch
    >>> try:
    ...     loch.open("/no/such/dataset")
    ... except loch.NotFound as e:
    ...     print("missing:", e)          # doctest: +SKIP
    missing: open /no/such/dataset: no loch dataset there: not found
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._status import Status

__all__ = [
    "Error",
    "NotFound",
    "AlreadyExists",
    "Corrupt",
    "Conflict",
    "InvalidArgument",
    "ReadOnly",
    "PermissionDenied",
    "NewerFormat",
    "Closed",
    "ForkedProcess",
    "InternalError",
    "MergeConflict",
]


class Error(Exception):
    """Base class of every loch error."""


class NotFound(Error, LookupError):
    """No dataset, version, column, row or object of that name."""


class AlreadyExists(Error):
    """A dataset already exists at the URL."""


class Corrupt(Error):
    """Stored bytes fail their checksums or contradict each other."""


@dataclass(frozen=True)
class MergeConflict:
    """A row changed on both sides of a merge since their common ancestor
    (``loch.Conflict.conflicts``, ``MergeResult.conflicts``). It lives here,
    beside the exception that carries it, and is re-exported by
    :mod:`loch.versions` and :mod:`loch`.

    Attributes:
        id: the row id.
        ours: what the target branch did to it: ``"modified"`` or ``"deleted"``.
        theirs: what the source did to it.
        ours_columns, theirs_columns: the columns each side modified.
    """

    id: int
    ours: str
    theirs: str
    ours_columns: tuple[str, ...] = ()
    theirs_columns: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> MergeConflict:
        return cls(int(d["id"]), d["ours"], d["theirs"], tuple(d.get("ours_columns") or ()),
                   tuple(d.get("theirs_columns") or ()))  # fmt: skip


class Conflict(Error):
    """A concurrent commit changed what this commit changes, or a merge
    found rows changed on both sides (and changed nothing).

    Attributes:
        conflicts: the rows of a failed merge, as
            :class:`loch.MergeConflict` records (empty for other conflicts).
        row_ids: the rows of a failed commit that another commit deleted or
            changed since they were staged, ascending (empty for other
            conflicts).

    ::

        >>> try:                                     # doctest: +SKIP
        ...     ds.merge("dev")
        ... except loch.Conflict as e:
        ...     print([c.id for c in e.conflicts])
        [17]
    """

    def __init__(self, message: str, conflicts: Sequence[MergeConflict] = (), row_ids: Sequence[int] = ()) -> None:
        super().__init__(message)
        self.conflicts: list[MergeConflict] = list(conflicts)
        self.row_ids: list[int] = list(row_ids)

    def __reduce__(self) -> Any:
        return (type(self), (str(self), self.conflicts, self.row_ids))


class InvalidArgument(Error, ValueError):
    """A value, shape, dtype, column or option is wrong."""


class ReadOnly(InvalidArgument):
    """A write through a read-only handle: one opened or checked out at a
    tag, a version id or a time (open or check out a branch to write)."""


class PermissionDenied(Error):
    """Credentials are missing or refused by the store."""


class NewerFormat(Error):
    """The data was written by a newer major version of the format."""


class Closed(Error):
    """The dataset or loader was closed."""


class ForkedProcess(Error):
    """A loch object or the loch library is used in a process forked after
    the library was loaded: the Go runtime does not survive ``fork``."""


class InternalError(Error):
    """A bug in loch (a recovered Go panic); the message has its stack."""


# The exception of each error status of the C ABI (capi/loch.h; the others
# are in _status.NOT_ERRORS). tests/test_status.py checks this against loch.h.
_BY_STATUS: dict[Status, type[BaseException]] = {
    Status.ERR: Error,
    Status.NOT_FOUND: NotFound,
    Status.EXISTS: AlreadyExists,
    Status.CORRUPT: Corrupt,
    Status.CONFLICT: Conflict,
    Status.INVALID_ARGUMENT: InvalidArgument,
    Status.NEWER_FORMAT: NewerFormat,
    Status.READ_ONLY: ReadOnly,
    Status.PERMISSION: PermissionDenied,
    Status.CLOSED: Closed,
    Status.NOT_IMPLEMENTED: NotImplementedError,
    Status.INTERNAL: InternalError,
    Status.CANCELED: KeyboardInterrupt,
}


def exception_class(status: int) -> type[BaseException]:
    """The class of the exception that an error status raises: a
    :class:`loch.Error` subclass, or ``NotImplementedError`` (a function
    this build lacks) and ``KeyboardInterrupt`` (a canceled call). Codes
    unknown to this package (a newer library) are plain :class:`loch.Error`::

        >>> exception_class(2).__name__, exception_class(15).__name__, exception_class(99).__name__
        ('NotFound', 'KeyboardInterrupt', 'Error')
    """
    try:
        return _BY_STATUS.get(Status(status), Error)
    except ValueError:  # a code this package does not know
        return Error


def from_status(status: int, message: str, detail: str = "") -> BaseException:
    """Returns the exception for an error status of the C ABI; ``detail`` is
    the JSON that some functions return beside the error (the conflicts of
    loch_dataset_merge and the row ids of loch_dataset_commit, given to
    :class:`Conflict`)."""
    cls = exception_class(status)
    if cls is Conflict and detail:
        try:
            d = json.loads(detail)
            records = [MergeConflict.from_json(c) for c in d.get("conflicts") or ()]
            row_ids = [int(i) for i in d.get("row_ids") or ()]
        except (ValueError, KeyError, TypeError, AttributeError):
            records, row_ids = [], []
        return Conflict(message, records, row_ids)
    return cls(message)
