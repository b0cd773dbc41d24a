"""Go objects held by Python: a handle in one loaded library."""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any, TypeVar

from ._library import Library, c_uintptr
from .errors import Closed


class Handle:
    """An open Go object (dataset or loader) of ``lib``, closed with the
    exported function ``close_fn`` (or the loader service's ``close_op``) by
    :meth:`close` or, at the latest, with ``close_fn`` when its owner is
    garbage collected (never in a forked child, where the Go runtime is
    gone)."""

    def __init__(self, owner: object, lib: Library, value: int, close_fn: str, what: str,
                 close_op: str | None = None) -> None:  # fmt: skip
        self.lib = lib
        self.what = what
        self._close_fn = close_fn
        # The loader service's operation that closes it (Library.request),
        # used by close (the finalizer calls close_fn: it may run while the
        # service is busy).
        self._close_op = close_op
        self._value = value
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(owner, Handle._close, lib, value, close_fn)
        self._finalizer.atexit = False

    @staticmethod
    def _close(lib: Library, value: int, close_fn: str) -> None:
        if lib.usable:
            with contextlib.suppress(Exception):  # best effort at collection
                lib.call(close_fn, c_uintptr(value))

    @property
    def value(self) -> c_uintptr:
        """The handle, for a call; raises Closed after close."""
        if not self._value:
            raise Closed(f"the {self.what} is closed")
        self.lib.check()
        return c_uintptr(self._value)

    @property
    def closed(self) -> bool:
        return not self._value

    def call(self, name: str, *args: Any, interruptible: bool = False) -> int:
        """Calls an exported function with the handle as first argument
        (``interruptible``: see :meth:`loch._library.Library.call`)."""
        return self.lib.call(name, self.value, *args, interruptible=interruptible)

    def close(self) -> None:
        """Closes the Go object (idempotent); in a forked child it only
        forgets it."""
        with self._lock:
            value, self._value = self._value, 0
            if value and self._finalizer.detach() is not None and self.lib.usable:
                if self._close_op is None:
                    self.lib.call(self._close_fn, c_uintptr(value))
                    return
                try:
                    self.lib.request(self._close_op, loader=value)
                except BaseException:
                    # Ctrl-C while the service closed it, or a service
                    # that failed: the Go object goes all the same (an
                    # error here is its having gone already).
                    with contextlib.suppress(Exception):
                        self.lib.call(self._close_fn, c_uintptr(value))
                    raise


_C = TypeVar("_C", bound="Closable")


class Closable:
    """What the user's objects over a :class:`Handle` ``_h`` share:
    :attr:`closed`, and ``with``, which closes the object at the end of
    the block."""

    _h: Handle

    def close(self) -> None:
        raise NotImplementedError

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` released the handle."""
        return self._h.closed

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
