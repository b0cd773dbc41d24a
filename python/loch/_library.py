"""Loading libloch.so (the Go core behind the C ABI of capi/) with ctypes.

The library is loaded on first use, never at import, because the Go
runtime it starts does not survive ``fork``: a process forked after loading
has the library's memory but none of its threads, and any call into it
would hang. Each :class:`Library` records the process that loaded it, and
every call checks it, raising :class:`loch.ForkedProcess` instead. In such
a forked process :func:`library` loads a private copy of the library, with
a Go runtime of its own, so that opening datasets there works; the objects
inherited from the parent stay bound to the parent's copy.

ctypes releases the GIL during each call, so Go works while Python threads
run.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import tempfile
import threading
from ctypes import POINTER, Structure, byref, c_char_p, c_int, c_int32, c_int64, c_uint8, c_uint64, c_void_p
from pathlib import Path
from typing import Any

from ._status import NOT_ERRORS
from .errors import ForkedProcess, InternalError, from_status

ABI_VERSION = 27

# Layouts and encodings of loch_column_in and loch_tensor.
DENSE, PACKED, NULLS = 0, 1, 2
ENCODING_NONE, ENCODING_PNG, ENCODING_JPEG = 0, 1, 2

c_uintptr = ctypes.c_size_t


class ColumnIn(Structure):
    """loch_column_in: one column's samples given to extend or update."""

    _fields_ = [
        ("name", c_char_p),
        ("dtype", c_int32),
        ("layout", c_int32),
        ("ndim", c_int32),
        ("encoding", c_int32),
        ("shape", POINTER(c_int64)),
        ("data", c_void_p),
        ("nbytes", c_int64),
        ("offsets", POINTER(c_int64)),
        ("nulls", POINTER(c_uint8)),
    ]


class TensorOut(Structure):
    """loch_tensor: one column's samples handed over by Go."""

    _fields_ = [
        ("name", c_char_p),
        ("dtype", c_int32),
        ("layout", c_int32),
        ("ndim", c_int32),
        ("reserved", c_int32),
        ("n", c_int64),
        ("shape", POINTER(c_int64)),
        ("data", c_void_p),
        ("nbytes", c_int64),
        ("sample_shapes", POINTER(c_int64)),
        ("sample_ndims", POINTER(c_int32)),
        ("offsets", POINTER(c_int64)),
        ("nulls", POINTER(c_uint8)),
    ]


class BatchOut(Structure):
    """loch_batch: one batch of a loader."""

    _fields_ = [
        ("epoch", c_int64),
        ("index", c_int64),
        ("n", c_int64),
        ("positions", POINTER(c_int64)),
        ("row_ids", POINTER(c_uint64)),
        ("ncols", c_int32),
        ("reserved", c_int32),
        ("cols", POINTER(TensorOut)),
        ("datasets", POINTER(c_int64)),
    ]


_ERR = POINTER(c_void_p)  # char **err
_STR_OUT = POINTER(c_void_p)  # char **out

# name: (argument types before the trailing char **err, or the full list
# for functions without a status).
_STATUS_FUNCS: dict[str, list[Any]] = {
    "loch_dataset_create": [c_char_p, c_char_p, c_char_p, POINTER(c_uintptr)],
    "loch_dataset_open": [c_char_p, c_char_p, POINTER(c_uintptr)],
    "loch_dataset_close": [c_uintptr],
    "loch_dataset_len": [c_uintptr, POINTER(c_int64)],
    "loch_dataset_schema": [c_uintptr, _STR_OUT],
    "loch_dataset_version": [c_uintptr, _STR_OUT],
    "loch_dataset_url": [c_uintptr, _STR_OUT],
    "loch_dataset_commit": [c_uintptr, c_char_p, _STR_OUT],
    # Staged writes (ABI 9).
    "loch_dataset_stage": [c_uintptr, _STR_OUT],
    "loch_dataset_commit_staged": [c_uintptr, c_char_p, c_char_p, _STR_OUT],
    "loch_dataset_fragment_rows": [c_uintptr, _STR_OUT],
    "loch_dataset_refresh": [c_uintptr],
    # Writers that recover (ABI 18).
    "loch_dataset_discard": [c_uintptr],
    "loch_dataset_discard_conflicts": [c_uintptr, _STR_OUT],
    "loch_dataset_log": [c_uintptr, _STR_OUT],
    "loch_dataset_row_ids": [c_uintptr, c_int64, c_int64, c_void_p],
    "loch_dataset_add_column": [c_uintptr, c_char_p],
    "loch_dataset_delete": [c_uintptr, c_void_p, c_int64],
    "loch_dataset_extend": [c_uintptr, c_int64, POINTER(ColumnIn), c_int32],
    "loch_dataset_update": [c_uintptr, c_uint64, POINTER(ColumnIn), c_int32],
    # ABI 16.
    "loch_dataset_upsert": [c_uintptr, c_int64, POINTER(ColumnIn), c_int32, c_char_p, _STR_OUT],
    "loch_dataset_read": [c_uintptr, c_char_p, c_void_p, c_int64, POINTER(POINTER(TensorOut))],
    "loch_dataset_read_range": [c_uintptr, c_char_p, c_int64, c_int64, POINTER(POINTER(TensorOut))],
    "loch_dataset_fetch": [c_uintptr, c_char_p, c_int64, POINTER(POINTER(TensorOut))],
    "loch_dataset_read_frames": [c_uintptr, c_char_p, c_int64, c_int64, c_int64, c_int64, c_int, c_int, POINTER(POINTER(TensorOut))],
    "loch_dataset_read_audio": [c_uintptr, c_char_p, c_int64, c_int64, c_int64, c_int, POINTER(POINTER(TensorOut))],
    "loch_dataset_create_branch": [c_uintptr, c_char_p, c_char_p, _STR_OUT],
    "loch_dataset_create_tag": [c_uintptr, c_char_p, c_char_p, _STR_OUT],
    "loch_dataset_delete_branch": [c_uintptr, c_char_p],
    "loch_dataset_delete_tag": [c_uintptr, c_char_p],
    "loch_dataset_refs": [c_uintptr, _STR_OUT],
    "loch_dataset_resolve": [c_uintptr, c_char_p, _STR_OUT],
    "loch_dataset_current_branch": [c_uintptr, _STR_OUT],
    "loch_dataset_read_only": [c_uintptr, POINTER(c_int32)],
    "loch_dataset_checkout": [c_uintptr, c_char_p],
    "loch_dataset_revert": [c_uintptr, c_char_p, c_char_p, _STR_OUT],
    "loch_dataset_diff": [c_uintptr, c_char_p, c_char_p, c_char_p, _STR_OUT],
    "loch_dataset_merge": [c_uintptr, c_char_p, c_char_p, _STR_OUT],
    "loch_dataset_gc": [c_uintptr, c_char_p, _STR_OUT],
    # Compaction (ABI 16).
    "loch_dataset_compact": [c_uintptr, c_char_p, _STR_OUT],
    "loch_dataset_last_auto_compaction": [c_uintptr, _STR_OUT],
    "loch_dataset_plan_compaction": [c_uintptr, c_char_p, _STR_OUT],
    "loch_dataset_compact_group": [c_uintptr, c_char_p, c_int64, _STR_OUT],
    "loch_dataset_commit_compaction": [c_uintptr, c_char_p, c_char_p, _STR_OUT],
    "loch_dataset_save_selection": [c_uintptr, c_char_p, c_char_p],
    "loch_dataset_selection": [c_uintptr, c_char_p, _STR_OUT],
    "loch_dataset_selections": [c_uintptr, _STR_OUT],
    "loch_dataset_delete_selection": [c_uintptr, c_char_p],
    "loch_dataset_positions": [c_uintptr, c_void_p, c_int64, c_void_p],
    "loch_vector_build": [c_uintptr, c_char_p, c_char_p, _STR_OUT],
    "loch_vector_update": [c_uintptr, c_char_p, c_char_p, _STR_OUT],
    "loch_vector_search": [c_uintptr, c_char_p, c_char_p, c_void_p, c_int64, c_int64, c_int64, c_void_p, c_int64,
                           c_void_p, c_void_p, c_void_p, _STR_OUT],
    # A vector index built by several processes (ABI 23).
    "loch_vector_train": [c_uintptr, c_char_p, c_char_p, _STR_OUT],
    "loch_vector_encode_part": [c_uintptr, c_char_p, c_int64, c_int64, _STR_OUT],
    "loch_vector_merge_lists": [c_uintptr, c_char_p, c_char_p, c_int64, c_int64, _STR_OUT],
    "loch_vector_commit": [c_uintptr, c_char_p, c_char_p, c_char_p, _STR_OUT],
    # Full-text search (ABI 20).
    "loch_fts_build": [c_uintptr, c_char_p, _STR_OUT],
    "loch_fts_update": [c_uintptr, c_char_p, _STR_OUT],
    "loch_fts_open": [c_uintptr, c_char_p, _STR_OUT],
    "loch_fts_search": [c_uintptr, c_char_p, c_char_p, c_int64, c_void_p, c_int64, c_void_p, c_void_p, c_void_p, _STR_OUT],
    # Hybrid search (ABI 21): (h, options, q, d, text, k, allowed, nallowed,
    # ids, scores, vector ranks, distances, text ranks, text scores, count, info).
    "loch_hybrid_search": [c_uintptr, c_char_p, c_void_p, c_int64, c_char_p, c_int64, c_void_p, c_int64,
                           c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, _STR_OUT],
    # SQL in the library (ABI 22; LOCH_NOT_IMPLEMENTED without DuckDB).
    "loch_sql_open": [c_uintptr, c_char_p, POINTER(c_uintptr)],
    "loch_sql_close": [c_uintptr],
    "loch_sql_run": [c_uintptr, c_char_p, c_char_p, c_void_p, _STR_OUT],
    "loch_sql_select": [c_uintptr, c_char_p, c_char_p, _STR_OUT],
    "loch_catalog_open": [c_char_p, c_char_p, POINTER(c_uintptr)],
    "loch_catalog_close": [c_uintptr],
    "loch_catalog_url": [c_uintptr, _STR_OUT],
    "loch_catalog_tables": [c_uintptr, _STR_OUT],
    "loch_catalog_open_table": [c_uintptr, c_char_p, c_char_p, POINTER(c_uintptr)],
    "loch_catalog_create_table": [c_uintptr, c_char_p, c_char_p, c_char_p, POINTER(c_uintptr)],
    "loch_catalog_drop_table": [c_uintptr, c_char_p],
    "loch_catalog_rename_table": [c_uintptr, c_char_p, c_char_p],
    "loch_catalog_gc": [c_uintptr, c_char_p, _STR_OUT],
    "loch_dtypes": [_STR_OUT],
    "loch_loader_config": [c_char_p, _STR_OUT],
    "loch_loader_new": [c_uintptr, c_char_p, POINTER(c_uintptr)],
    "loch_loader_new_mix": [c_void_p, c_int32, c_void_p, c_int64, c_char_p, POINTER(c_uintptr)],
    "loch_loader_next": [c_uintptr, c_int64, POINTER(POINTER(BatchOut))],
    # ABI 11: (h, timeout_ms, prev batch to free, buffers to free, their count, out).
    "loch_loader_next_batch": [c_uintptr, c_int64, c_void_p, c_void_p, c_int64, POINTER(c_void_p)],
    # ABI 13: (h, depth, batch pipe fd out, report pipe fd out).
    "loch_loader_stream": [c_uintptr, c_int64, POINTER(c_int), POINTER(c_int)],
    "loch_loader_stream_end": [c_uintptr],
    "loch_loader_state_at": [c_uintptr, c_int64, _STR_OUT],
    "loch_loader_len": [c_uintptr, POINTER(c_int64)],
    "loch_loader_state": [c_uintptr, _STR_OUT],
    "loch_loader_stats": [c_uintptr, _STR_OUT],
    "loch_loader_close": [c_uintptr],
    # ABI 26: page-locked batch buffers (alloc, free, select, device, flags, limit, pool out).
    "loch_pinned_pool_new": [c_void_p, c_void_p, c_void_p, c_int, ctypes.c_uint, c_int64, POINTER(c_uintptr)],
    "loch_pinned_pool_set_limit": [c_uintptr, c_int64],
    "loch_pinned_pool_stats": [c_uintptr, POINTER(c_int64)],
    "loch_pinned_pool_close": [c_uintptr],
    # ABI 14: (request pipe fd out, response pipe fd out).
    "loch_service": [POINTER(c_int), POINTER(c_int)],
    # ABI 19: (n, previous limit out).
    "loch_set_max_decode_bytes": [c_int64, POINTER(c_int64)],
}
_PLAIN_FUNCS: dict[str, tuple[list[Any], Any]] = {
    "loch_free_string": ([c_void_p], None),
    "loch_abi_version": ([], c_int),
    "loch_buffer_free": ([c_void_p], None),
    "loch_buffers_free": ([c_void_p, c_int64], None),
    "loch_buffer_trim": ([], None),
    "loch_buffer_stats": ([POINTER(c_int64), POINTER(c_int64)], None),
    "loch_tensor_free": ([POINTER(TensorOut)], None),
    "loch_batch_free": ([c_void_p], None),  # a loch_batch * (an address or a pointer)
    "loch_interrupt": ([c_int64], c_int),
    "loch_max_decode_bytes": ([], c_int64),
}

# The most bytes and buffers that free_buffer lets wait for a call into Go
# (see Library.free_buffer).
FREED_BYTES = 64 << 20
FREED_COUNT = 256

# How often a call made interruptible waits for the call before Python
# handles a signal (Ctrl-C), and how often it interrupts the call again
# until it returns.
INTERRUPT_POLL_S = 0.05


def library_path() -> Path:
    """Returns the path of libloch.so: $LOCH_LIBRARY, else the copy
    installed in the package."""
    env = os.environ.get("LOCH_LIBRARY")
    if env:
        return Path(env)
    return Path(__file__).parent / "_lib" / "libloch.so"


class Library:
    """libloch.so loaded in one process.

    :meth:`call` runs an exported function that returns a status, raising
    the matching :class:`loch.Error` for an error status.
    """

    def __init__(self, path: Path) -> None:
        if not path.exists():
            raise FileNotFoundError(
                f"loch's shared library {path} is missing: install the package with "
                "`pip install ./python` (which builds it with Go), or build it with "
                "`go build -buildmode=c-shared -o python/loch/_lib/libloch.so ./capi`, "
                "or point LOCH_LIBRARY at a built copy"
            )
        self.pid = _pid
        self.path = path
        self.cdll = ctypes.CDLL(str(path))
        for name, argtypes in _STATUS_FUNCS.items():
            fn = getattr(self.cdll, name)
            fn.argtypes = [*argtypes, _ERR]
            fn.restype = c_int
        for name, (argtypes, restype) in _PLAIN_FUNCS.items():
            fn = getattr(self.cdll, name)
            fn.argtypes = argtypes
            fn.restype = restype
        abi = self.cdll.loch_abi_version()
        if abi != ABI_VERSION:
            raise ImportError(f"{path} has C ABI version {abi}, this loch package needs {ABI_VERSION}: rebuild it")
        self._dtypes: list[dict[str, Any]] | None = None
        # Sample buffers freed by Python and not yet given back to Go.
        self._freed: list[int] = []
        self._freed_bytes = 0
        # Reentrant: a garbage collection while it is held may free a buffer.
        self._freed_lock = threading.RLock()
        # The loader service (request, response pipe), started on first use.
        self._service: tuple[int, int] | None = None
        self._service_lock = threading.Lock()
        self._service_id = 0
        self._service_buf = b""
        self._service_ops: dict[int, str] = {}  # requests awaiting their response: id -> op

    def check(self) -> None:
        """Raises ForkedProcess when called in a process other than the one
        that loaded the library."""
        if _pid != self.pid:
            raise ForkedProcess(
                f"loch's library was loaded in process {self.pid}, and this process ({os.getpid()}) "
                "was forked from it: the Go runtime does not survive fork, so loch objects of the "
                "parent cannot be used here. Open datasets again in this process (loch.open(url) "
                "works here: it loads a private copy of the library), or start children with "
                "multiprocessing's 'spawn' or 'forkserver' method (PyTorch DataLoader workers over "
                "ds.pytorch() or a loch.Dataset handle this themselves)."
            )

    @property
    def usable(self) -> bool:
        """Whether calls may be made in this process."""
        return _pid == self.pid

    def call(self, name: str, *args: Any, detail: c_void_p | None = None, interruptible: bool = False) -> int:
        """Calls a status-returning function; returns the status when it is
        not an error (OK, EOF or TIMEOUT: _status.NOT_ERRORS; only
        loch_loader_next's waits end in TIMEOUT) and raises
        :func:`loch.errors.from_status`'s exception for any other.
        ``detail`` is the string output among ``args`` (by reference), if
        any: set with an error status, it is taken (freed) and its JSON
        given to the exception (loch_dataset_merge's conflicts).

        ``interruptible``: the function is one of the long calls that
        loch_interrupt cancels (see loch.h); in the main thread it is then
        made on another thread, so that Ctrl-C raises KeyboardInterrupt
        within a fraction of a second, once Go has stopped the call (which
        then changed nothing committed; see :meth:`_interruptible`)."""
        self.check()
        err = c_void_p()
        fn = getattr(self.cdll, name)
        if interruptible and threading.current_thread() is threading.main_thread():
            status = self._interruptible(name, fn, (*args, byref(err)), err, detail)
        else:
            status = fn(*args, byref(err))
        if status in NOT_ERRORS:
            if err.value:
                self.cdll.loch_free_string(err)
            return int(status)
        raise self.error(name, status, err, detail)

    def error(self, name: str, status: int, err: c_void_p, detail: c_void_p | None = None) -> Exception:
        """The exception of an error status that ``name`` returned, taking
        (freeing) its error message ``err`` and ``detail`` (see
        :meth:`call`)."""
        message = self.take_string(err) or f"{name} failed with status {status}"
        extra = self.take_string(detail) if detail is not None else ""
        return from_status(status, message, extra)

    def _interruptible(self, name: str, fn: Any, args: tuple[Any, ...], err: c_void_p, detail: c_void_p | None) -> int:
        """Makes the call ``fn(*args)`` on a thread of its own while this
        (the main) thread waits in slices, so that a signal's handler runs.
        On KeyboardInterrupt it interrupts the call (loch_interrupt of that
        thread, again until the call returns), waits for it, frees its
        error and string outputs, and raises KeyboardInterrupt. A call that
        completed before Go saw the interrupt has taken effect whole (Go
        commits atomically): the caller's handle then reflects it, but any
        new handle returned is closed by the caller (see loch.open)."""
        result: list[int] = []
        failure: list[BaseException] = []
        interrupted = threading.Event()

        def run() -> None:
            try:
                result.append(int(fn(*args)))
            except BaseException as e:  # noqa: BLE001 (re-raised in the caller's thread)
                failure.append(e)

        # Ctrl-C only sets a flag while the call runs (a KeyboardInterrupt
        # raised between two bytecodes here could escape before the call is
        # stopped); a handler of the program's own runs as it would anyway.
        previous = signal.getsignal(signal.SIGINT)
        ours = previous is signal.default_int_handler
        if ours:
            signal.signal(signal.SIGINT, lambda signum, frame: interrupted.set())
        try:
            worker = threading.Thread(target=run, name=f"loch {name}", daemon=True)
            worker.start()
            while worker.is_alive():
                try:
                    worker.join(INTERRUPT_POLL_S)
                    if interrupted.is_set() and worker.is_alive() and worker.native_id is not None:
                        self.cdll.loch_interrupt(worker.native_id)
                except KeyboardInterrupt:
                    interrupted.set()
        finally:
            if ours:
                signal.signal(signal.SIGINT, previous)
        if failure:
            raise failure[0]
        if interrupted.is_set():
            if err.value:
                self.cdll.loch_free_string(err)
            if detail is not None and detail.value:
                self.cdll.loch_free_string(detail)
            raise KeyboardInterrupt
        return result[0]

    def take_string(self, s: c_void_p) -> str:
        """Returns a string that Go allocated, freeing it."""
        if not s.value:
            return ""
        try:
            return ctypes.string_at(s.value).decode("utf-8", "replace")
        finally:
            self.cdll.loch_free_string(s)

    def call_string(self, name: str, *args: Any, interruptible: bool = False) -> str:
        """Calls a function whose last output is a string (``interruptible``
        as for :meth:`call`)."""
        out = c_void_p()
        self.call(name, *args, byref(out), detail=out, interruptible=interruptible)
        return self.take_string(out)

    def call_json(self, name: str, *args: Any) -> Any:
        """Calls a function whose last output is a JSON string."""
        return json.loads(self.call_string(name, *args))

    def dtypes(self) -> list[dict[str, Any]]:
        """The data types: [{"code", "name", "size"}], from Go."""
        if self._dtypes is None:
            self._dtypes = self.call_json("loch_dtypes")
        return self._dtypes

    def free_buffer(self, ptr: int, nbytes: int) -> None:
        """Gives a sample buffer of ``nbytes`` bytes back to Go, when in the
        loading process (in a forked child the buffer is the parent's:
        leave it). The buffer waits in a list for the next report of a
        loader's stream or call that takes the list (:meth:`flush_buffers`),
        which spares a call into Go per buffer; the list is given back at once
        when it holds more than FREED_BYTES bytes or FREED_COUNT buffers."""
        if _pid != self.pid:
            return
        with self._freed_lock:
            self._freed.append(ptr)
            self._freed_bytes += nbytes
        if self._freed_bytes > FREED_BYTES or len(self._freed) > FREED_COUNT:
            self.flush_buffers()

    def take_freed(self) -> tuple[list[int], int]:
        """Takes the buffers waiting to go back to Go (their addresses, and
        their bytes), for a call that frees them: a buffer is taken once, by
        one caller, who must hand it to Go (:meth:`flush_buffers` does) or
        put it back (:meth:`give_back_freed`)."""
        if not self._freed:
            return [], 0
        with self._freed_lock:
            freed, self._freed = self._freed, []
            nbytes, self._freed_bytes = self._freed_bytes, 0
        return freed, nbytes

    def give_back_freed(self, freed: list[int], nbytes: int) -> None:
        """Puts buffers that :meth:`take_freed` returned back on the list,
        with their ``nbytes`` bytes (their call into Go was not made)."""
        with self._freed_lock:
            self._freed.extend(freed)
            self._freed_bytes += nbytes

    def request(self, op: str, **fields: Any) -> Any:
        """Serves ``op`` through the loader service (loch_service, C ABI 14:
        requests over a pipe that a goroutine answers), so that the calling
        thread makes no call into Go: a thread that returns from one keeps
        a Go processor for up to 20 ms, which the loader's workers then lack
        (bench/history/2026-11-26-issue-17.md). Returns the response's result; raises
        the error of its status as :meth:`call` would. The service answers
        one request at a time, in order; a request cut short by Ctrl-C
        (KeyboardInterrupt while the response is awaited) is answered
        later, and its response skipped then (a loader it opened is closed,
        a stream's pipe ends it made are closed)."""
        self.check()
        with self._service_lock:
            if self._service is None:
                req, resp = c_int(-1), c_int(-1)
                self.call("loch_service", byref(req), byref(resp))
                self._service = (req.value, resp.value)
            self._service_id += 1
            ident = self._service_id
            # Strict JSON (no NaN): Go could not read the line otherwise.
            line = json.dumps({"id": ident, "op": op, **fields}, allow_nan=False).encode() + b"\n"
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(self._service[0], view) :]
            except BaseException:
                # A request written in part: the service cannot tell where
                # the next begins. It ends when its request pipe closes; a
                # new one starts with the next request.
                self._stop_service()
                raise
            self._service_ops[ident] = op
            try:
                # The service answers in order: each response is the
                # oldest waiting request's (whatever id it carries: a line
                # Go could not parse is answered with id 0).
                while True:
                    answer = self._service_line()
                    first = next(iter(self._service_ops))
                    first_op = self._service_ops.pop(first)
                    if answer.get("id") not in (first, 0):
                        raise InternalError(f"loch_service: response {answer.get('id')} to request {first}")
                    if first == ident:
                        break
                    self._skipped(first_op, answer)
            except (OSError, ValueError, InternalError):
                # The service is gone or garbled: the next request starts
                # another.
                self._stop_service()
                raise
        status = int(answer.get("status", 0))
        if status not in NOT_ERRORS:
            raise from_status(status, answer.get("error") or f"{op} failed with status {status}", "")
        return answer.get("result")

    def _service_line(self) -> dict[str, Any]:
        """The next response line of the service (its lock held)."""
        assert self._service is not None
        while b"\n" not in self._service_buf:
            data = os.read(self._service[1], 1 << 16)
            if not data:
                raise InternalError("loch_service: the response pipe ended")
            self._service_buf += data
        line, _, self._service_buf = self._service_buf.partition(b"\n")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _skipped(self, op: str, answer: dict[str, Any]) -> None:
        """Acts on the response of a request (``op``) whose caller stopped
        waiting: a loader it opened is closed (directly: the service's lock
        is held), the caller's ends of a stream's pipes it made are closed."""
        result = answer.get("result") if answer.get("status") == 0 else None
        if op in ("loader_new", "loader_new_mix") and result:
            loader = result.get("loader") if isinstance(result, dict) else result  # a dict: streamed too
            if isinstance(loader, int) and loader:
                with contextlib.suppress(Exception):
                    self.call("loch_loader_close", c_uintptr(loader))
        if op in ("loader_new", "loader_new_mix", "loader_stream") and isinstance(result, dict):
            for fd in (result.get("batch_fd"), result.get("report_fd")):
                if isinstance(fd, int) and fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)

    def _stop_service(self) -> None:
        """Closes the service's pipes (its lock held): Go ends it."""
        if self._service is not None:
            for fd in self._service:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._service, self._service_buf = None, b""
        self._service_ops.clear()

    def flush_buffers(self) -> None:
        """Gives the buffers waiting in :meth:`free_buffer`'s list back to
        Go now."""
        freed, _ = self.take_freed()
        if freed:
            self.cdll.loch_buffers_free((c_void_p * len(freed))(*freed), len(freed))


_lock = threading.Lock()
_current: Library | None = None

# This process's id, kept by a fork hook: checked on every call (a
# Library loaded in another process cannot be used here), where
# os.getpid() would be a system call each time.
_pid = os.getpid()


def _forked() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)


def library() -> Library:
    """Returns the library of this process, loading it on first use. In a
    process forked after the parent loaded it, that is a private copy of
    libloch.so (the parent's Go runtime is gone there), loaded from a
    temporary copy of the file because the dynamic loader would hand back
    the parent's mapping for the same file. Objects of the parent stay
    unusable (:class:`loch.ForkedProcess`)."""
    global _current
    lib = _current
    if lib is None or not lib.usable:
        with _lock:
            if _current is None:
                _current = Library(library_path())
            elif not _current.usable:
                _current = _private_copy(library_path())
            lib = _current
    return lib


def _private_copy(src: Path) -> Library:
    """Loads a copy of the library at ``src`` (as another file, so that it
    gets a Go runtime of its own)."""
    fd, tmp = tempfile.mkstemp(prefix="libloch-", suffix=".so")
    try:
        with os.fdopen(fd, "wb") as f, open(src, "rb") as s:
            shutil.copyfileobj(s, f)
        lib = Library(Path(tmp))
        lib.path = src
        return lib
    finally:
        os.unlink(tmp)


def loaded() -> bool:
    """Whether the library has been loaded (in this or a parent process)."""
    return _current is not None
