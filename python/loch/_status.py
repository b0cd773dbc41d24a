"""The status codes of the C ABI, as capi/loch.h names them.

Every exported function returns one of these; :mod:`loch.errors` maps the
error statuses to exceptions, and :mod:`loch._library` lets the three that
are not errors through. The values are loch.h's (``LOCH_NOT_FOUND`` is
``Status.NOT_FOUND``); tests/test_status.py parses loch.h and fails when
the two disagree::

    >>> from loch._status import Status
    >>> Status.NOT_FOUND, int(Status.NOT_FOUND)
    (<Status.NOT_FOUND: 2>, 2)
    >>> Status(10).name
    'EOF'
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["Status", "NOT_ERRORS"]


class Status(IntEnum):
    """A status code of the C ABI (the enum of capi/loch.h, without the
    ``LOCH_`` prefix)."""

    OK = 0
    ERR = 1  # an error of no more specific class
    NOT_FOUND = 2
    EXISTS = 3
    CORRUPT = 4
    CONFLICT = 5
    INVALID_ARGUMENT = 6
    NEWER_FORMAT = 7
    READ_ONLY = 8
    PERMISSION = 9
    EOF = 10  # loch_loader_next: the epoch is over
    TIMEOUT = 11  # loch_loader_next: no batch within the timeout
    CLOSED = 12  # the handle was closed
    NOT_IMPLEMENTED = 13
    INTERNAL = 14  # a recovered panic: a bug in loch
    CANCELED = 15


#: The statuses that are not errors: a call returning one of them returns it
#: to its caller instead of raising.
NOT_ERRORS = frozenset({Status.OK, Status.EOF, Status.TIMEOUT})
