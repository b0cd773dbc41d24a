"""The stream of one Go loader's batches (C ABI 13-15): :class:`GoLoader`
reads the addresses of its batches from a pipe, reports what it is done
with over another, and makes every other request of an epoch through the
loader service, so that the consuming thread makes no call into Go.
Package-internal: :class:`loch.Loader` reads one per iteration.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import errno
import os
import struct
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from ._buffers import MEMORY, tensors_fields
from ._collate import BATCH
from ._handle import Handle
from ._status import Status
from .errors import Closed, InternalError

__all__ = ["GoLoader", "Starter", "STREAM_DEPTH", "STREAM_RECORD"]

T = TypeVar("T")

# The batch stream of C ABI 13 (loch.h): records of a kind and a value;
# at most STREAM_DEPTH batches taken from the Go loader and not reported
# read (the byte bound Go adds, a quarter of prefetch_bytes, holds large
# batches to fewer; at 8, Go stopped to ask for reports 19 times in an
# epoch of 313 batches, at 32 twice, and ds.pytorch() gained about 2% on
# 16 cores: bench/history/2026-11-26-issue-17.md); up to STREAM_READ records read at
# once; PIPE_BUF, the most bytes a pipe writes whole (POSIX: at least 512).
STREAM_RECORD = struct.Struct("=qQ")
STREAM_BATCH, STREAM_END, STREAM_DONE, STREAM_FREED, STREAM_RETURN, STREAM_WAITING = 0, 1, 2, 3, 4, 5
STREAM_DEPTH = 32
STREAM_READ = 64
STREAM_PIPE_BUF = 512


class Starter(Protocol):
    """What a Go loader is started over: the one member of
    :class:`loch.loader.Source` this module uses (the package-internal
    seam, documented there and on :class:`loch.Dataset`)."""

    def _start_loader(
        self, owner: object, config: Mapping[str, Any], stream_depth: int = 0
    ) -> tuple[Handle, tuple[int, int] | None]:
        """As :meth:`loch.loader.Source._start_loader`."""
        ...


class GoLoader:
    """One Go loader (one epoch on one rank), read by one consumer.

    Its batches come over a pipe (C ABI 13, ``loch_loader_stream``): a
    goroutine takes each batch from the Go loader, as ``loch bench``'s
    consumer does, and writes the address of its description; :meth:`next`
    reads it, blocking in the kernel (with the GIL released, and Ctrl-C
    interrupting it) when none is there. So that taking a batch makes no
    call into Go, which costs a thread that Go did not start a processor of
    the Go runtime to find and to give back (bench/history/2026-11-26-issue-17.md).
    Nor does anything else an epoch needs: the loader is opened, streamed,
    asked for its statistics and state, and closed by requests to the
    loader service (C ABI 14, :meth:`loch._library.Library.request`), since
    a thread returning from a call into Go keeps a processor for up to
    20 ms, which the loader's workers then lack.
    Python reports the descriptions it has read, with the sample buffers it
    has freed (see :meth:`loch._library.Library.free_buffer`), over a second
    pipe: every ``STREAM_DEPTH // 2`` batches, and when Go asks for them
    (it waits for them to take the next batch).

    A loader made to be read (``stream``) streams from the request that
    opens it (C ABI 15: one request fewer per epoch, and Go's side of the
    stream starts with the loader's workers, see capi/service.go); one made
    for its length or state streams only if :meth:`next` is called."""

    def __init__(self, source: Starter, config: Mapping[str, Any], stream: bool = False) -> None:
        self._h, fds = source._start_loader(self, config, STREAM_DEPTH if stream else 0)
        self.lib = self._h.lib
        self._fds: tuple[int, int] | None = None  # (batch pipe, report pipe)
        self._fds_closer: weakref.finalize | None = None
        if fds is not None:
            self._stream_fds(fds)
        self._records: collections.deque[tuple[int, int]] = collections.deque()
        self._unreported: list[int] = []  # descriptions read and not reported
        self._taken = 0  # batches next returned
        self._waited = 0.0  # seconds next blocked on the pipe
        self._end: int | None = None  # the status of the end record, once read
        # Held while a description is read (next, take, close), not while
        # next waits on the pipe: a close from another thread never frees
        # a description that is being converted.
        self._lock = threading.RLock()

    def _open_stream(self) -> tuple[int, int]:
        fds = self._request("loader_stream", depth=STREAM_DEPTH)
        return self._stream_fds((int(fds["batch_fd"]), int(fds["report_fd"])))

    def _stream_fds(self, fds: tuple[int, int]) -> tuple[int, int]:
        """Keeps the caller's ends of the stream's pipes, closed with this
        object at the latest."""
        self._fds = fds
        self._fds_closer = weakref.finalize(self, _close_fds, fds)
        return fds

    @property
    def _streaming(self) -> bool:
        """Whether the stream's pipes are open (streamed, and not closed:
        by :meth:`close`, or at interpreter exit by their finalizer, which
        the atexit hooks run before the generators left alive are
        finalized)."""
        return self._fds_closer is not None and self._fds_closer.alive

    def next(self) -> int | None:
        """The address of the next batch's loch_batch (valid until the next
        call or close; its buffers are the caller's), or None at the end of
        the epoch."""
        with self._lock:
            return self._next()

    def take(self, use: Callable[[int], T]) -> T | None:
        """``use(address)`` of the next batch's loch_batch, called while a
        close from another thread waits; None at the end of the epoch."""
        with self._lock:
            addr = self._next()
            return None if addr is None else use(addr)

    def _next(self) -> int | None:
        if self._h.closed:
            raise Closed("the loader is closed")
        records = self._records
        while True:
            if not records:
                if self._end is not None:
                    return self._ended()
                self.lib.check()  # a forked child must not read its parent's pipe
                fd = (self._fds or self._open_stream())[0]
                t0 = time.perf_counter()
                self._lock.release()
                failed: OSError | None = None
                try:
                    data = os.read(fd, STREAM_READ * STREAM_RECORD.size)
                except OSError as e:
                    failed = e
                finally:
                    self._lock.acquire()
                if failed is not None:
                    # A close from another thread may close the pipe before
                    # or while this thread reads it.
                    if failed.errno == errno.EBADF and self._h.closed:
                        raise Closed("the loader is closed") from None
                    raise failed
                self._waited += time.perf_counter() - t0
                # Go writes whole records, and a pipe keeps each write whole.
                got = STREAM_RECORD.iter_unpack(data)
                if self._h.closed:  # closed while this thread waited
                    for kind, value in got:
                        if kind == STREAM_BATCH:  # read here, so Go did not take it back
                            self._free_whole(value)
                    raise Closed("the loader is closed")
                if not data:
                    raise InternalError("loch_loader_stream: the batch pipe ended without an end record")
                records.extend(got)
            kind, value = records.popleft()
            if kind == STREAM_BATCH:
                break
            if kind == STREAM_WAITING:
                # Go waits for the batches the consumer is done with (it is
                # asking for the next, so all it got before).
                self._report()
                continue
            self._end = value
            return self._ended()
        self._taken += 1
        # The descriptions before this one are read (this one is being).
        if len(self._unreported) >= STREAM_DEPTH // 2:
            self._report()
        self._unreported.append(value)
        return value

    def _ended(self) -> None:
        """None at the end of the epoch; raises the error that ended it
        otherwise."""
        if self._end == Status.EOF:
            return None
        err = ctypes.c_void_p()
        status = self.lib.cdll.loch_loader_stream_end(self._h.value, ctypes.byref(err))
        if status in (Status.OK, Status.EOF):  # cannot be: the stream ended with an error
            status = self._end or Status.ERR
        raise self.lib.error("loch_loader_stream", status, err)

    def _report(self, unused: Sequence[int] = ()) -> None:
        """Reports the descriptions read, the buffers freed and the batches
        ``unused`` (read from the pipe, never returned), in writes of at
        most PIPE_BUF bytes (which a pipe never splits). Nothing once the
        pipes are closed (at interpreter exit their finalizer may run before
        the iteration that reads them is closed): Go stops reading then."""
        fds = self._fds
        if fds is None or not self._streaming:
            return
        unreported, self._unreported = self._unreported, []
        freed, freed_bytes = self.lib.take_freed()
        ints: list[int] = []
        for addr in unused:
            ints += (STREAM_RETURN, addr)
        for addr in unreported:
            ints += (STREAM_DONE, addr)
        for addr in freed:
            ints += (STREAM_FREED, addr)
        step = 2 * (STREAM_PIPE_BUF // STREAM_RECORD.size)
        written = 0  # ints
        try:
            while written < len(ints):
                part = ints[written : written + step]
                os.write(fds[1], struct.pack(f"={len(part)}Q", *part))
                written += len(part)
        except BaseException:
            # Ctrl-C, or a broken pipe: what was not written is reported
            # next time (a write of at most PIPE_BUF is whole or nothing).
            # An unused batch not returned gives back its buffers as freed
            # ones, and its description waits to be reported (or freed by
            # close) with the others.
            records = written // 2
            for addr in unused[records:]:
                self._free_buffers(addr)
                self._unreported.append(addr)
            done = max(0, records - len(unused))
            self._unreported = unreported[done:] + self._unreported
            rest = freed[max(0, done - len(unreported)) :]
            if rest:
                self.lib.give_back_freed(rest, freed_bytes if len(rest) == len(freed) else 0)
            if self._h.closed:  # by another thread (Dataset.close): Go stopped reading
                raise Closed("the loader is closed") from None
            raise

    def _free_buffers(self, addr: int) -> None:
        """Gives back the sample buffers of the batch at addr."""
        _, _, _, _, _, ncols, _, cols, _ = BATCH.unpack_from(MEMORY, addr)
        for f in tensors_fields(cols, ncols):
            if f[7]:
                self.lib.free_buffer(f[7], f[8])

    def _free_whole(self, addr: int) -> None:
        """Frees the batch at addr, description and buffers (one read from
        the pipe that no one will use)."""
        self._free_buffers(addr)
        self.lib.cdll.loch_batch_free(addr)

    def _request(self, op: str, **fields: Any) -> Any:
        """``op`` of this loader through the loader service
        (:meth:`loch._library.Library.request`): the per-epoch calls of a
        stream's consumer, made without a call into Go from its thread."""
        return self.lib.request(op, loader=self._h.value.value, **fields)

    def __len__(self) -> int:
        return int(self._request("loader_len"))

    def state(self) -> dict[str, Any]:
        """The state after the batches :meth:`next` returned."""
        state: dict[str, Any] = self._request("loader_state_at", taken=self._taken)
        return state

    def stats(self) -> dict[str, Any]:
        """The Go loader's statistics, with the wait of this consumer (the
        time it blocked on the pipe) as ``wait_ns`` and ``wait_share``."""
        st: dict[str, Any] = self._request("loader_stats")
        if self._fds is not None:
            st["wait_ns"] = int(self._waited * 1e9)
            elapsed = st.get("elapsed_ns") or 0
            st["wait_share"] = st["wait_ns"] / elapsed if elapsed > 0 else 0.0
        return st

    def close(self) -> None:
        """Reports what is left to report, closes the Go loader (which takes
        back the batches written and not read) and the pipes. The
        descriptions that could not be reported are freed here."""
        with self._lock:
            try:
                if self.lib.usable and not self._h.closed and self._streaming:
                    unused = [v for k, v in self._records if k == STREAM_BATCH]
                    self._records.clear()
                    with contextlib.suppress(Closed):  # closed meanwhile by another thread
                        self._report(unused)
            finally:
                try:
                    self._h.close()
                finally:  # also after Ctrl-C in the close (it closed the loader all the same)
                    if self.lib.usable:
                        # What could not be reported (the handle closed first:
                        # Dataset.close): batches read and never returned, and
                        # the descriptions of those returned.
                        for kind, value in self._records:
                            if kind == STREAM_BATCH:
                                self._free_whole(value)
                        for addr in self._unreported:
                            self.lib.cdll.loch_batch_free(addr)
                    self._records.clear()
                    self._unreported = []
                    if self._fds_closer is not None:
                        self._fds_closer()


def _close_fds(fds: tuple[int, int]) -> None:
    """Closes the caller's ends of a stream's pipes (batch, report)."""
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
