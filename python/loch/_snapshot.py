"""What the parts of :class:`loch.Dataset` share: its handle of the Go
dataset, the snapshot that reads go to in this process (the parent's,
opened again, in a forked child), and the dataset's identity and shape
(URL, version, schema, length). Package-internal: the parts
(:mod:`loch._reads`, :mod:`loch._writes`, :mod:`loch._versioning`,
:mod:`loch._search`) extend :class:`Snapshot`, and :class:`loch.Dataset`
joins them.
"""

from __future__ import annotations

import ctypes
import json
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._handle import Handle
from .links import LinkPolicy
from .schema import Schema

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["Snapshot", "enc", "json_options"]


def json_options(**kw: Any) -> bytes:
    """The JSON object of a call's options, those that are None left out."""
    return json.dumps({k: v for k, v in kw.items() if v is not None}).encode()


def enc(s: str | None) -> bytes | None:
    """A string argument for C (None: NULL)."""
    return None if s is None else s.encode()


class Snapshot:
    """A dataset's handle at one snapshot: the state and the members every
    part of :class:`loch.Dataset` uses. :class:`loch.Dataset` sets the
    attributes (its ``__init__``) and says how a snapshot is opened again
    (:meth:`_reopener_at`)."""

    # Set by loch.Dataset.__init__. _keep: an object the dataset keeps
    # alive (the catalog of a table); _storage_options and _links: those
    # it was opened with, for opening it again in other processes (the
    # options never shown); _loaders: the Go loaders reading the handle
    # (their owners, which report what they hold before they close, else
    # their handles); _view: (pid, this snapshot opened there) in a forked
    # process; _at: the snapshot the handle reads, to open there.
    _h: Handle
    _keep: object
    _storage_options: dict[str, str] | None
    _links: LinkPolicy | None
    _schema: tuple[str, Schema] | None
    _url: str | None
    _loaders: weakref.WeakSet[Any]
    _view: tuple[int, Any] | None
    _at: Callable[[object], Any]

    def _reopener_at(self, version: str) -> Callable[[object], Any]:
        """The snapshot ``version`` of this dataset as a picklable function
        that opens it (see :meth:`loch.Dataset._loader_view`)."""
        raise NotImplementedError

    # The process this handle belongs to, and the others.

    def _track(self) -> None:
        """Records in Python the snapshot the handle reads now, for a
        process forked from this one, where Go cannot be asked (see
        :meth:`_here`). Every method that moves the handle calls it."""
        self._at = self._reopener_at(self._h.lib.call_string("loch_dataset_version", self._h.value))

    def _here(self) -> Self:
        """This dataset for reads in this process: itself, or, in a process
        forked from the one that opened it, its snapshot opened there
        (:meth:`loch.Dataset._here`)."""
        raise NotImplementedError

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
        h = self._reading()
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
        self._reading().call("loch_dataset_read_only", ctypes.byref(out))
        return bool(out.value)

    @property
    def current_branch(self) -> str | None:
        """The branch the handle writes to, or None when it is read-only."""
        h = self._reading()
        return h.lib.call_string("loch_dataset_current_branch", h.value) or None

    @property
    def schema(self) -> Schema:
        """The columns, with their statistics (shapes seen, bytes stored)."""
        return self._schema_at(self.version)

    def _schema_at(self, version: str) -> Schema:
        """The schema, known to be that of snapshot ``version``: asked of Go
        when the one kept is another snapshot's."""
        if self._schema is None or self._schema[0] != version:
            h = self._reading()
            self._schema = (version, Schema.from_json(h.lib.call_string("loch_dataset_schema", h.value)))
        return self._schema[1]

    def __len__(self) -> int:
        """The number of rows of the snapshot."""
        out = ctypes.c_int64()
        self._reading().call("loch_dataset_len", ctypes.byref(out))
        return out.value

    def __repr__(self) -> str:
        """The URL, branch, version, rows and columns."""
        if self._h.closed:
            return "<loch.Dataset (closed)>"
        at = self.current_branch or "read-only"
        cols = list(self.schema)
        return f"<loch.Dataset {self.url} {at} version={self.version[:12]} rows={len(self)} columns={cols}>"

    # Calls that return a string (JSON, often).

    def _str(self, name: str, *args: Any, interruptible: bool = False) -> str:
        """The string that the C function ``name`` returns for this handle
        and ``args``."""
        return self._h.lib.call_string(name, self._h.value, *args, interruptible=interruptible)

    def _str_json(self, name: str, *args: Any) -> Any:
        """:meth:`_str`, decoded from JSON."""
        return json.loads(self._str(name, *args))

    # Reads: through the handle of the snapshot opened in this process
    # (_here), so that they work in a forked child too.

    def _reading(self) -> Handle:
        """The handle that reads go to (see :meth:`_here`)."""
        return self._here()._h

    def _read_str(self, name: str, *args: Any, interruptible: bool = False) -> str:
        """:meth:`_str` of the handle that reads go to."""
        h = self._reading()
        return h.lib.call_string(name, h.value, *args, interruptible=interruptible)

    def _read_json(self, name: str, *args: Any) -> Any:
        """:meth:`_str_json` of the handle that reads go to."""
        return json.loads(self._read_str(name, *args))
