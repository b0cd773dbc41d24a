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
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .versions import MergeConflict

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
]


class Error(Exception):
    """Base class of every loch error."""


class NotFound(Error, LookupError):
    """No dataset, version, column, row or object of that name."""


class AlreadyExists(Error):
    """A dataset already exists at the URL."""


class Corrupt(Error):
    """Stored bytes fail their checksums or contradict each other."""


class Conflict(Error):
    """A concurrent commit changed what this commit changes, or a merge
    found rows changed on both sides (and changed nothing).

    Attributes:
        conflicts: the rows of a failed merge, as
            :class:`loch.MergeConflict` records (empty for other conflicts).

    ::

        >>> try:                                     # doctest: +SKIP
        ...     ds.merge("dev")
        ... except loch.Conflict as e:
        ...     print([c.id for c in e.conflicts])
        [17]
    """

    def __init__(self, message: str, conflicts: Sequence[MergeConflict] = ()) -> None:
        super().__init__(message)
        self.conflicts: list[MergeConflict] = list(conflicts)

    def __reduce__(self) -> Any:
        return (type(self), (str(self), self.conflicts))


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


# Status codes of the C ABI (capi/loch.h) that are errors, by class.
_BY_STATUS: dict[int, type[Error]] = {
    1: Error,
    2: NotFound,
    3: AlreadyExists,
    4: Corrupt,
    5: Conflict,
    6: InvalidArgument,
    7: NewerFormat,
    8: ReadOnly,
    9: PermissionDenied,
    12: Closed,
    14: InternalError,
}


def from_status(status: int, message: str, detail: str = "") -> BaseException:
    """Returns the exception for an error status of the C ABI; ``detail`` is
    the JSON that some functions return beside the error (the conflicts of
    loch_dataset_merge)."""
    if status == 13:
        return NotImplementedError(message)
    if status == 15:
        return KeyboardInterrupt(message)
    cls = _BY_STATUS.get(status, Error)
    if cls is Conflict and detail:
        from .versions import MergeConflict

        try:
            records = [MergeConflict.from_json(c) for c in json.loads(detail).get("conflicts") or ()]
        except (ValueError, KeyError, TypeError, AttributeError):
            records = []
        return Conflict(message, records)
    return cls(message)
