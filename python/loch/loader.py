"""The streaming loader: batches of a snapshot as dicts of numpy arrays.

The Go loader does all of the work (concurrent fetches, decoding, shuffling,
sharding, collation into C buffers that numpy wraps without a copy); this
module configures it and hands its batches over::

    >>> for batch in ds.numpy(batch_size=64, shuffle=True, seed=0):   # doctest: +SKIP
    ...     batch["camera"].shape, batch["index"][:3]
    ((64, 224, 224, 3), array([412, 87, 1033]))

A batch maps each requested column to its samples: one array with the
batch first (ragged samples zero-padded to the largest), or a list for
text (``str``), json (parsed values) and bytes columns. Beside them:

- ``"index"``: the rows' stable ids (int64);
- ``"dataset"``: in a mixture (:func:`loch.mix`), the index of each row's
  dataset in the mixture (int64; ``"index"`` is then the row id in that
  dataset);
- ``"<column>.shapes"``: each sample's own shape, for columns whose declared
  shape is ragged (int64, [batch, ndim]);
- ``"<column>.null"``: which samples are empty (zero-filled), when any is.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import difflib
import errno
import inspect
import os
import struct
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypedDict, TypeVar

import numpy as np

from ._buffers import MEMORY, convert_context, fast_convert, fields_value, ints_at, tensors_fields
from ._handle import Handle
from ._library import BatchOut, library
from ._status import Status
from .dtypes import VARIABLE
from .epochs import Epochs
from .errors import Closed, InternalError, InvalidArgument
from .schema import Schema

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["Loader", "LoaderOptions", "CommonLoaderOptions", "Source", "Batch", "Transform"]

#: A batch: column names (and "index", "<column>.shapes", "<column>.null")
#: to arrays or lists.
Batch = dict[str, Any]

#: A ``transform`` argument: Go image transforms by column
#: (``{"image": "decode,resize=256,center_crop=224,to_float,normalize=imagenet,chw"}``),
#: one spec string for every image column, or a Python callable applied to
#: each batch.
Transform = Mapping[str, str] | str | Callable[[Batch], Batch]


class CommonLoaderOptions(TypedDict, total=False):
    """The keyword arguments that every loader takes: :class:`Loader`'s,
    but those a framework adapter sets from its own view of the run
    (``rank``, ``world_size``, ``split``, ``epochs``; see
    :class:`LoaderOptions`). The one definition that
    :meth:`loch.Dataset.numpy`, :meth:`~loch.Dataset.pytorch`,
    :meth:`~loch.Dataset.jax`, :meth:`~loch.Dataset.tensorflow` and the
    same methods of :class:`loch.Mixture` extend and type their
    ``**kwargs`` with, so that editors and type checkers see them. Each is
    documented under :class:`Loader`'s Arguments; a test keeps the two in
    step."""

    columns: Sequence[str] | None
    batch_size: int
    shuffle: bool | str
    seed: int
    epoch: int
    drop_last: bool
    rows: Sequence[int] | None
    joined: Sequence[Mapping[str, Any]] | None
    query: str | None
    transform: Transform | None
    sample_transform: Callable[[Batch], Batch] | None
    prefetch_batches: int | None
    prefetch_bytes: int | None
    workers: int | None
    fetch_concurrency: int | None
    window_rows: int | None
    skip_bad_samples: bool
    cache_dir: str | None
    cache_bytes: int | None
    allow_version_change: bool


class LoaderOptions(CommonLoaderOptions, total=False):
    """The keyword arguments of :class:`Loader` (``ds.numpy(**kwargs)``,
    ``ds.tensorflow(**kwargs)``): :class:`CommonLoaderOptions` and the
    shard settings that the torch and jax adapters take as
    ``distributed=`` instead."""

    rank: int
    world_size: int
    split: tuple[int, int] | None
    epochs: Epochs | None


# loch_batch (loch.h; _library.BatchOut) read in one piece: epoch, index,
# n, positions, row_ids, ncols, reserved, cols, datasets.
BATCH = struct.Struct("@qqqPPiiPP")
assert BATCH.size == ctypes.sizeof(BatchOut)

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


def _shuffle_mode(shuffle: bool | str | None) -> Any:
    """The Go shuffle mode: True is the Go loader's default mode, False
    "none"; anything else is passed through for Go to check ("none",
    "block" or "full")."""
    if shuffle is True:
        return ""
    if shuffle is False or shuffle is None:
        return "none"
    return shuffle


def int_option(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """``value`` of the option ``name`` as an int, refused with
    :class:`loch.InvalidArgument` (naming the option, what it takes and
    what was given) unless it is an int (a numpy integer too; not a bool),
    and, where given, ``low <= value < high`` (else within Go's int64). Checked here, before the
    configuration goes to Go, whose JSON decoding would name its own
    structs instead; the ranges Go checks itself (loader.Config.Validate)
    are left to it."""
    want = "an int"
    if high is not None:
        want = f"an int in [{low or 0}, {_bound(high)})"
    elif low is not None:
        want = f"an int >= {low}"
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise InvalidArgument(f"{name}={value!r}: want {want}, got {type(value).__name__}")
    v = int(value)
    if (low is not None and v < low) or (high is not None and v >= high):
        raise InvalidArgument(f"{name}={v}: want {want}")
    if high is None and not -(1 << 63) <= v < 1 << 63:  # Go's int64 (its own bound, if any, is lower)
        raise InvalidArgument(f"{name}={v}: want an int in [{'-2**63' if low is None else low}, 2**63)")
    return v


def _bound(n: int) -> str:
    """A bound of a range as written in a message: a large power of two as
    one (``2**64``)."""
    return f"2**{n.bit_length() - 1}" if n > 1 << 32 and n & (n - 1) == 0 else str(n)


def _optional_int(name: str, value: Any) -> int | None:
    """An option that is None (the Go loader's default) or an int."""
    return None if value is None else int_option(name, value)


def _bool_option(name: str, value: Any) -> bool:
    """``value`` of the option ``name``, refused unless a bool (a truthy
    string such as "no" must not mean yes)."""
    if not isinstance(value, bool | np.bool_):
        raise InvalidArgument(f"{name}={value!r}: want True or False, got {type(value).__name__}")
    return bool(value)


def _rank_option(rank: Any, world_size: Any) -> tuple[int, int]:
    """(rank, world_size) checked: ints, ``world_size >= 1`` (Go would
    take 0 for its default, 1); Go checks the rank's range."""
    return int_option("rank", rank), int_option("world_size", world_size, low=1)


def _columns_option(columns: Any, schema: Schema) -> list[str]:
    """The columns to load: all (None), one (a str) or those named (a
    sequence of str, not empty)."""
    if columns is None:
        return list(schema)
    if isinstance(columns, str):
        columns = [columns]
    elif not isinstance(columns, Sequence) or isinstance(columns, bytes):
        raise InvalidArgument(
            f"columns={columns!r}: want a column name or a list of them, got {type(columns).__name__}"
        )
    if not columns:
        raise InvalidArgument(
            f"columns={columns!r}: name at least one column (or leave columns out, or None, to load them all)"
        )
    for c in columns:
        if not isinstance(c, str):
            raise InvalidArgument(f"columns={columns!r}: want column names (str), got {type(c).__name__} {c!r}")
        if c not in schema:
            raise InvalidArgument(f"no column {c!r} (have {list(schema)})")
    return list(columns)


def _shuffle_option(shuffle: Any) -> bool | str | None:
    """The shuffle option, refused unless a bool, None or a mode string
    (which Go checks)."""
    if shuffle is None or isinstance(shuffle, bool | np.bool_ | str):
        return bool(shuffle) if isinstance(shuffle, np.bool_) else shuffle
    raise InvalidArgument(
        f"shuffle={shuffle!r}: want True, False or a mode ('none', 'block', 'full'), got {type(shuffle).__name__}"
    )


def check_keywords(method: str, kwargs: Mapping[str, Any], options: type) -> None:
    """Raises TypeError, as Python does for an unknown keyword argument but
    naming the public method the user called (``method``, e.g.
    ``"ds.numpy()"``) and the closest known names, for a keyword that
    neither ``options`` (the method's TypedDict of keywords) nor
    :class:`LoaderOptions` has (those an adapter sets itself it refuses
    with its own message)::

        >>> check_keywords("ds.numpy()", {"batch_sise": 8}, LoaderOptions)
        Traceback (most recent call last):
        TypeError: ds.numpy() got an unexpected keyword argument 'batch_sise' (did you mean 'batch_size'?)
    """
    known = set(getattr(options, "__optional_keys__", ())) | set(getattr(options, "__required_keys__", ()))
    known |= set(LoaderOptions.__optional_keys__)
    for key in kwargs:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"{method} got an unexpected keyword argument {key!r}{hint}")


#: The keyword arguments that ``ds.pytorch()`` and ``ds.jax()`` take
#: besides :class:`CommonLoaderOptions` (those of :class:`loch.torch.TorchLoader`
#: and :class:`loch.jax.JaxLoader`), with their annotations and defaults:
#: what :func:`keyword_signature` shows for them without importing torch or
#: jax. A test keeps them in step with the adapters' own ``__init__``.
ADAPTER_KEYWORDS: dict[str, dict[str, tuple[str, Any]]] = {
    "pytorch": {
        "pin_memory": ("bool", False),
        "device": ("str | torch.device | None", None),
        "distributed": ("bool | Sequence[int] | None", None),
    },
    "jax": {
        "sharding": ("jax.sharding.Sharding | None", None),
        "device": ("jax.Device | str | None", None),
        "distributed": ("bool | Sequence[int] | None", None),
    },
}

#: The options an adapter sets itself (from ``distributed=`` and its
#: DataLoader workers): in :class:`LoaderOptions`, not in :class:`CommonLoaderOptions`.
_ADAPTER_SETS = ("rank", "world_size", "split", "epochs")


def keyword_signature(framework: str) -> Callable[[F], F]:
    """A decorator giving a loader method (``numpy``, ``pytorch``, ``jax`` or
    ``tensorflow`` of a dataset, a mixture or a selection; ``framework``
    names which) the runtime signature of the keyword arguments its
    ``**kwargs`` takes, so that ``help()``, :func:`inspect.signature` and
    notebooks' completion show them by name, with their defaults (type
    checkers read the ``Unpack`` of its annotation instead):
    :class:`Loader`'s own, less those an adapter sets itself, plus the
    adapter's (:data:`ADAPTER_KEYWORDS`)::

        >>> list(inspect.signature(loch.Dataset.numpy).parameters)[:4]
        ['self', 'columns', 'batch_size', 'shuffle']
        >>> inspect.signature(loch.Dataset.pytorch).parameters["batch_size"].default
        32
    """
    adapter = ADAPTER_KEYWORDS.get(framework, {})

    def sign(method: F) -> F:
        params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        for p in list(inspect.signature(Loader.__init__).parameters.values())[2:]:  # after self, dataset
            if framework in ADAPTER_KEYWORDS and p.name in _ADAPTER_SETS:
                continue
            params.append(p)
        params += [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
            for name, (annotation, default) in adapter.items()
        ]
        returns = inspect.signature(method).return_annotation
        method.__signature__ = inspect.Signature(params, return_annotation=returns)  # type: ignore[attr-defined]
        return method

    return sign


def _checked(config: Mapping[str, Any]) -> dict[str, Any]:
    """Checks a Go loader configuration with Go's own checks
    (loader.Config.Validate, through loch_loader_config), raising
    :class:`loch.InvalidArgument` with Go's message naming the setting, and
    returns it with Go's defaults filled in. Through the loader service:
    a loader object made for each epoch is checked just before its loader
    starts, whose workers a call into Go from this thread would leave a
    Go processor short (see :class:`_GoLoader`)."""
    result: dict[str, Any] = library().request("loader_config", config=config)
    return result


class Source(Protocol):
    """What a :class:`Loader` reads: a dataset at one snapshot
    (:class:`loch.Dataset`), or a mixture of several
    (:class:`loch.mixture.Mixture`). loch.loader (and the framework
    adapters above it) see a dataset only through this protocol, so that
    loch.dataset can make loaders without the two modules importing each
    other; the two underscored members are the package-internal seam,
    documented on Dataset.

    Making a loader object makes no call into Go from the calling thread
    once the snapshot's schema is known (the first loader of a snapshot
    asks Go for it): a loader made for each epoch is made just before the
    epoch starts, and a thread returning from a call into Go keeps a Go
    processor for up to 20 ms, which the epoch's workers then lack (on two
    cores its first batch came 8 ms later; bench/history/2026-11-26-issue-17.md)."""

    @property
    def schema(self) -> Schema:
        """The columns, as :attr:`loch.Dataset.schema`."""
        ...

    @property
    def row_keys(self) -> tuple[str, ...]:
        """The keys of a batch that describe its rows rather than hold a
        column (int64 each): ``("index",)``, and ``"dataset"`` for a
        mixture. No column loaded may have one of these names."""
        ...

    def _start_loader(
        self, owner: object, config: Mapping[str, Any], stream_depth: int = 0
    ) -> tuple[Handle, tuple[int, int] | None]:
        """Starts a Go loader configured by ``config`` (loch_loader_new's
        JSON object) over the current snapshot; its handle closes it when
        ``owner`` is collected, and closing the source closes it first.
        With ``stream_depth`` it also streams at once (in the same request
        to the loader service), and the caller's ends of the stream's
        pipes (batch, report) come with the handle."""
        ...

    def _loader_view(self) -> tuple[Schema, Callable[[object], Source]]:
        """The schema of the snapshot this source reads now, and a
        picklable function that returns the source given to it when that
        is usable in the calling process, else this snapshot opened there.
        Made without a call into Go from this thread once the schema is
        known (see :class:`_GoLoader`)."""
        ...


class _GoLoader:
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

    def __init__(self, source: Source, config: Mapping[str, Any], stream: bool = False) -> None:
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


# (rows, sample shape) -> the ".shapes" array of a batch whose samples all
# have that shape, copied for each batch (filling a new array from a tuple
# costs several times the copy).
_SAME_SHAPES: dict[tuple[int, tuple[int, ...]], np.ndarray] = {}


def _same_shapes(n: int, shape: tuple[int, ...]) -> np.ndarray:
    """A new (n, len(shape)) int64 array with ``shape`` in each row."""
    t = _SAME_SHAPES.get((n, shape))
    if t is None:
        if len(_SAME_SHAPES) >= 256:
            _SAME_SHAPES.clear()
        t = _SAME_SHAPES[(n, shape)] = np.empty((n, len(shape)), dtype=np.int64)
        t[:] = shape
    return t.copy()


def _close_fds(fds: tuple[int, int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


class Loader:
    """Streams one rank's batches of a dataset's snapshot, epoch after
    epoch, as dicts of numpy arrays (see the module documentation).

    Arguments:
        dataset: the :class:`loch.Dataset` to read (any :class:`Source`).
        columns: the columns to load: a list of names, or one name (default:
            all; an empty list is refused).
        batch_size: rows per batch (0: the Go loader's default, 32; at
            most 2**31-1, and a batch larger than the rank's rows is all
            of them).
        shuffle: False (stored order), True (the Go loader's default
            shuffle), or a mode: "none", "block", "full".
        seed, epoch: select the shuffle; ``epoch`` is the first iteration's
            (see Epochs below).
        drop_last: drop the end of the epoch so that every rank gets the
            same number of full batches; otherwise the last ranks are padded
            by repeating rows (as PyTorch's DistributedSampler).
        rank, world_size: this process's shard of a data-parallel run
            (:meth:`set_rank` changes them).
        rows: restrict to these row ids.
        joined: a selection's joined columns (:attr:`loch.Selection.joined`,
            in the form of docs/format.md §2.7), each with one value per row
            of ``rows``: a batch holds each row's own value under the
            column's name, beside the dataset's columns.
        query: the SQL that chose ``rows`` (a :class:`loch.Selection`
            passes it): recorded in the saved state, and a resume under
            another query is refused unless ``allow_version_change``.
        transform: Go transforms by column (image steps, and ``clip=...``
            or ``resample=``/``segment=``/``mono`` for video and audio
            columns: transform/doc.go has the grammar), one spec for every
            image column, or a Python callable applied to each batch.
        sample_transform: a Python callable applied to each sample (a dict
            of one row's values); the results are stacked again.
        prefetch_batches, prefetch_bytes, workers, fetch_concurrency,
        window_rows, skip_bad_samples: passed to the Go loader
            (``prefetch_batches``: the Go loader's default, twice
            ``workers`` and at least 4, within ``prefetch_bytes``;
            ``workers``: by default one per
            CPU the Go runtime uses, GOMAXPROCS, as for ``loch bench``;
            ``fetch_concurrency``: 16 reads at once, 128 in a full
            shuffle, which reads each sample alone, unless a transform
            reads video clips or audio segments). Each is bounded, so that
            a typo raises :class:`loch.InvalidArgument` instead of
            exhausting memory: ``prefetch_batches`` at most 65536,
            ``workers`` and ``fetch_concurrency`` at most 4096 (as a
            dataset's ``parallelism``).
        cache_dir, cache_bytes: keep fetched chunks in a disk cache shared by
            the processes of the machine (default budget 10 GiB), so that
            epochs after the first read them locally; processes that miss
            the same chunk at once fetch it once between them.
        split: (index, count): deliver only the batches whose number in the
            epoch is index modulo count (how PyTorch DataLoader workers share
            a rank's batches); the Go loader fetches nothing for the others.
        allow_version_change: let :meth:`load_state_dict` resume a state
            saved on another version of the dataset (by default that raises
            :class:`loch.InvalidArgument`). The loader goes on at the same
            epoch and batch count over this version's order, so in that
            epoch some rows may be seen twice or not at all.
        epochs: the epoch counter (default: one of its own, in memory,
            starting at ``epoch``; one given should start there too): the
            PyTorch adapter passes one that its DataLoader workers' copies
            share (:class:`loch.epochs.SharedEpochs`).

    Attributes:
        dataset: the dataset read; None in a copy pickled into another
            process until that copy first reads (it then holds the snapshot
            opened there).
        columns: the columns loaded.
        row_keys: the keys of a batch beside the columns' that describe its
            rows: ``"index"``, and ``"dataset"`` for a mixture.
        batch_size: rows per batch.

    Iterating starts a Go loader for the next epoch over the dataset's
    current snapshot; breaking out of the loop stops it.

    Epochs: iterating again advances the epoch; :meth:`set_epoch` sets the
    next iteration's; :meth:`load_state_dict` resumes the saved one (the
    rule of every loch loader, see :mod:`loch.epochs`)::

        >>> ds = loch.create("mem://epochs-doc", schema={"n": loch.Tensor("int64", shape=())})
        >>> ds.extend({"n": np.arange(10)}); _ = ds.commit()
        >>> loader = ds.numpy(batch_size=10, shuffle=True, seed=1)
        >>> first, second = [b["n"].tolist() for b in loader], [b["n"].tolist() for b in loader]
        >>> first != second, loader.epoch
        (True, 2)
        >>> loader.set_epoch(0)
        >>> [b["n"].tolist() for b in loader] == first
        True

    :meth:`state_dict` and :meth:`load_state_dict` save and resume
    mid-epoch::

        >>> ds = loch.create("mem://loader-doc", schema={"n": loch.Tensor("int64", shape=())})
        >>> ds.extend({"n": np.arange(10)}); _ = ds.commit()
        >>> loader = ds.numpy(batch_size=2, shuffle=True, seed=1)
        >>> it = iter(loader); first = next(it)
        >>> saved = loader.state_dict()
        >>> again = ds.numpy(batch_size=2, shuffle=True, seed=1)
        >>> again.load_state_dict(saved)                 # resumes after `first`
        >>> whole = [b["n"].tolist() for b in ds.numpy(batch_size=2, shuffle=True, seed=1)]
        >>> [first["n"].tolist()] + [b["n"].tolist() for b in again] == whole
        True

    A loader can be pickled into another process, without the dataset's
    handle: there it opens the dataset's URL again, at the version the
    dataset had when the loader was made (so not a ``mem://`` dataset). A
    loader inherited by a process forked from this one does the same when
    it first reads there. This is how PyTorch DataLoader workers read.

    Framework adapters (:mod:`loch.torch`, :mod:`loch.jax`,
    :mod:`loch.tensorflow`) wrap one Loader each (:class:`loch.adapter.Adapter`)
    and take its batches through :meth:`batches`.
    """

    def __init__(
        self,
        dataset: Source,
        *,
        columns: Sequence[str] | None = None,
        batch_size: int = 32,
        shuffle: bool | str = False,
        seed: int = 0,
        epoch: int = 0,
        drop_last: bool = False,
        rank: int = 0,
        world_size: int = 1,
        rows: Sequence[int] | None = None,
        joined: Sequence[Mapping[str, Any]] | None = None,
        query: str | None = None,
        transform: Transform | None = None,
        sample_transform: Callable[[Batch], Batch] | None = None,
        prefetch_batches: int | None = None,
        prefetch_bytes: int | None = None,
        workers: int | None = None,
        fetch_concurrency: int | None = None,
        window_rows: int | None = None,
        skip_bad_samples: bool = False,
        cache_dir: str | None = None,
        cache_bytes: int | None = None,
        split: tuple[int, int] | None = None,
        allow_version_change: bool = False,
        epochs: Epochs | None = None,
    ) -> None:
        schema, self._reopen = dataset._loader_view()
        self.columns = _columns_option(columns, schema)
        self.row_keys = tuple(dataset.row_keys)
        for key in self.row_keys:
            if key in self.columns:
                raise InvalidArgument(
                    f'a column named "{key}" clashes with the "{key}" a batch holds beside its columns: load the others'
                )
        #: The joined columns delivered beside the dataset's: name to
        #: (dtype, shape of one value).
        self.joined: dict[str, tuple[str, tuple[int, ...]]] = {}
        for j in joined or ():
            name = str(j["name"])
            if name in schema or name in self.row_keys:
                raise InvalidArgument(
                    f'joined column "{name}" clashes with the "{name}" a batch holds: rename it (AS) in the query'
                )
            self.joined[name] = (str(j["dtype"]), tuple(int(d) for d in j.get("shape") or ()))
        self.dataset: Source | None = dataset
        self._ragged = frozenset(c for c in self.columns if schema[c].ragged and schema[c].dtype not in VARIABLE)
        self._fast_ctx: tuple[Any, tuple[Any, ...]] | None = None  # (library, ctx of fast_convert)
        go_transforms: dict[str, str] = {}
        self._batch_transform: Callable[[Batch], Batch] | None = None
        if callable(transform):
            self._batch_transform = transform
        elif isinstance(transform, str):
            go_transforms = {c: transform for c in self.columns if schema[c].kind == "image"}
            if not go_transforms:
                raise InvalidArgument(f"transform {transform!r}: none of the columns {self.columns} is an image column")
        elif transform is not None:
            go_transforms = dict(transform)
        if sample_transform is not None and not callable(sample_transform):
            raise InvalidArgument(f"sample_transform={sample_transform!r}: want a callable")
        self._sample_transform = sample_transform
        # Types and ranges are checked here; what only Go knows (a shuffle
        # mode, a transform spec) by _checked below.
        rank, world_size = _rank_option(rank, world_size)
        self._config: dict[str, Any] = {
            "columns": self.columns,
            "batch_size": int_option("batch_size", batch_size),
            "shuffle": _shuffle_mode(_shuffle_option(shuffle)),
            "seed": int_option("seed", seed, low=0, high=1 << 64),  # Go's is a uint64
            "world_size": world_size,
            "rank": rank,
            "drop_last": _bool_option("drop_last", drop_last),
            "skip_bad_samples": _bool_option("skip_bad_samples", skip_bad_samples),
        }
        epoch = int_option("epoch", epoch)
        if _bool_option("allow_version_change", allow_version_change):
            self._config["allow_version_change"] = True
        for key, value in (
            ("rows", None if rows is None else [int(r) for r in rows]),
            ("joined", [dict(j) for j in joined] if joined else None),
            ("query", None if query is None else str(query)),
            ("prefetch_batches", _optional_int("prefetch_batches", prefetch_batches)),
            ("prefetch_bytes", _optional_int("prefetch_bytes", prefetch_bytes)),
            ("workers", _optional_int("workers", workers)),
            ("fetch_concurrency", _optional_int("fetch_concurrency", fetch_concurrency)),
            ("window_rows", _optional_int("window_rows", window_rows)),
            ("transforms", go_transforms or None),
            ("cache_dir", None if cache_dir is None else str(cache_dir)),
            ("cache_bytes", _optional_int("cache_bytes", cache_bytes)),
            ("split", None if split is None else _split(split)),
        ):
            if value is not None:
                self._config[key] = value
        # Go checks the settings (and fills in its defaults) now, so that a
        # bad one raises here rather than at the first batch.
        # (The row ids and joined values, possibly many, are left to
        # loch_loader_new.)
        checked = _checked({k: v for k, v in self._config.items() if k not in ("rows", "joined")} | {"epoch": epoch})
        self.batch_size = int(checked["batch_size"])
        self._epochs = epochs if epochs is not None else Epochs(epoch)
        self._resume: dict[str, Any] | None = None  # a loaded state: where the next iteration starts
        self._active: _GoLoader | None = None
        self._active_epoch = 0
        self._stopped: dict[str, Any] | None = None  # the state an iteration left early stopped at
        self._stats: dict[str, Any] = {}  # of the last iteration

    def __repr__(self) -> str:
        """The dataset, the columns and the settings that decide the batches
        (an adapter's repr is this one under its own name)."""
        url = getattr(self.dataset, "url", None) or "(dataset not reopened yet)"
        shuffle = self._config["shuffle"] or "block"  # "": Go's default
        return (f"<loch.Loader {url} columns={self.columns} batch_size={self.batch_size} shuffle={shuffle!r} "
                f"epoch={self.epoch} rank={self.rank}/{self.world_size}>")  # fmt: skip

    @property
    def epoch(self) -> int:
        """The epoch the next iteration delivers (during an iteration, the
        one after it, unless :meth:`set_epoch` changed it)."""
        return self._epochs.peek()

    def set_epoch(self, epoch: int) -> None:
        """Makes the next iteration deliver epoch ``epoch`` (its shuffle);
        the ones after it go on from there. A state loaded for another
        epoch is dropped."""
        epoch = int(epoch)
        self._epochs.set(epoch)
        self._stopped = None
        if self._resume is not None and self._resume.get("epoch", epoch) != epoch:
            self._resume = None

    @property
    def rank(self) -> int:
        """This process's rank of :attr:`world_size` (its shard)."""
        return int(self._config["rank"])

    @property
    def world_size(self) -> int:
        """The number of ranks sharing each epoch."""
        return int(self._config["world_size"])

    def set_rank(self, rank: int, world_size: int) -> None:
        """Sets the shard of the next iteration: ``rank`` of ``world_size``
        (ints, else :class:`loch.InvalidArgument`; their range is checked
        when the iteration starts)::

            >>> ds = loch.create("mem://set-rank-doc", schema={"n": loch.Tensor("int64", shape=())})
            >>> ds.extend({"n": np.arange(10)}); _ = ds.commit()
            >>> loader = ds.numpy(batch_size=2)
            >>> loader.set_rank(1, 2); loader.rank, loader.world_size, len(loader)
            (1, 2, 3)
        """
        self._config["rank"], self._config["world_size"] = _rank_option(rank, world_size)

    @property
    def ragged_columns(self) -> frozenset[str]:
        """The loaded columns whose samples' shapes may differ: a batch
        holds each one zero-padded, with the samples' own shapes under
        ``"<column>.shapes"``."""
        return self._ragged

    def config(self) -> dict[str, Any]:
        """The Go loader configuration of the next iteration."""
        return self._go_config(self._epochs.peek())

    def _go_config(self, epoch: int) -> dict[str, Any]:
        """The Go loader configuration of an iteration of ``epoch``: a
        loaded state resumes it when it is of that epoch."""
        cfg = dict(self._config, epoch=epoch)
        if self._resume is not None and self._resume.get("epoch", epoch) == epoch:
            cfg["resume"] = self._resume
        return cfg

    def reopen_if_forked(self) -> None:
        """Opens the loader's snapshot in this process now, if it was
        forked from the one that made the loader (after that one loaded the
        library), with a private copy of the library; elsewhere it does
        nothing. Reading does it anyway (see the class documentation): call
        it to open the dataset before the first batch is asked for."""
        self._source()

    def _source(self) -> Source:
        """The dataset: the one given, or, in a copy pickled into another
        process or inherited by a forked one, its snapshot opened there on
        first use."""
        self.dataset = self._reopen(self.dataset)
        return self.dataset

    def _start(self, split: tuple[int, int] | None, epoch: int | None) -> _GoLoader:
        source = self._source()
        taken = epoch is None
        if epoch is None:
            epoch = self._epochs.take()
        config = self._go_config(epoch)
        if split is not None:
            config["split"] = _split(split)
        try:
            go = _GoLoader(source, config, stream=True)
        except BaseException:
            if taken:  # the iteration did not start: the next one is still this epoch
                self._epochs.set(epoch)
            raise
        self._resume = self._stopped = None
        self._active, self._active_epoch = go, epoch
        return go

    def __iter__(self) -> Iterator[Batch]:
        """One epoch of batches (see :meth:`batches`)."""
        return self.batches()

    def batches(
        self,
        convert: Callable[[Batch], Batch] | None = None,
        *,
        split: tuple[int, int] | None = None,
        epoch: int | None = None,
    ) -> Iterator[Batch]:
        """Iterates one epoch, as ``iter(loader)`` does, with hooks for
        framework adapters:

        convert: turns each numpy batch (after ``sample_transform``) into a
            framework's batch, before a callable ``transform`` sees it (so
            that the callable gets tensors of the framework).
        split: (index, count) for this iteration instead of the loader's
            own: a PyTorch DataLoader worker's share of the rank's batches.
        epoch: the epoch to deliver, which the adapter took from the
            loader's counter itself (a DataLoader worker's claim, see
            :meth:`loch.epochs.SharedEpochs.claim`); by default the
            iteration takes the next epoch from the counter.

        The Go loader starts at the first ``next`` and stops when the
        iteration ends or the iterator is closed or collected::

            >>> ds = loch.create("mem://batches-doc", schema={"n": loch.Tensor("int64", shape=())})
            >>> ds.extend({"n": np.arange(10)}); _ = ds.commit()
            >>> [b["n"].tolist() for b in ds.numpy(batch_size=4).batches(lambda b: {"n": b["n"] * 10})]
            [[0, 10, 20, 30], [40, 50, 60, 70], [80, 90]]
        """
        go = self._start(split, epoch)
        ended = False

        def convert_go(p: int) -> Batch:
            return self._convert(go, p)

        try:
            while True:
                batch = go.take(convert_go)
                if batch is None:
                    ended = True
                    break
                yield self._finish(batch, convert)
        finally:
            try:
                if self._active is go:
                    self._active = None
                    try:
                        self._stats = go.stats()
                        if not ended:
                            self._stopped = _position(self._active_epoch, go.state())
                    except Exception:  # noqa: BLE001 (closing after an error)
                        self._stats = {}
            finally:  # also after Ctrl-C while the statistics were asked for
                go.close()

    def peek(self) -> Batch | None:
        """The first batch of the next iteration (None when it has none),
        read by a separate Go loader that prefetches only it; this loader's
        position, state and statistics are unchanged. For working out what
        batches look like (the element spec of :mod:`loch.tensorflow` under
        Go transforms)::

            >>> ds = loch.create("mem://peek-doc", schema={"n": loch.Tensor("int64", shape=())})
            >>> ds.extend({"n": np.arange(10)}); _ = ds.commit()
            >>> loader = ds.numpy(batch_size=4)
            >>> loader.peek()["n"].tolist(), loader.stats()
            ([0, 1, 2, 3], {})
        """
        go = _GoLoader(self._source(), dict(self.config(), prefetch_batches=1), stream=True)
        try:
            batch = go.take(lambda p: self._convert(go, p))
            return None if batch is None else self._finish(batch, None)
        finally:
            go.close()

    def _finish(self, batch: Batch, convert: Callable[[Batch], Batch] | None) -> Batch:
        """A batch of numpy arrays (:meth:`_convert`) through the Python
        stages: the sample transform, ``convert``, the batch transform."""
        if self._sample_transform is not None:
            batch = per_sample(batch, self._sample_transform, self.columns, self.row_keys)
        if convert is not None:
            batch = convert(batch)
        if self._batch_transform is not None:
            batch = self._batch_transform(batch)
        return batch

    def _convert(self, go: _GoLoader, addr: int) -> Batch:
        """Converts a Go batch (the address of its loch_batch), taking its
        buffers: in one compiled call where the batch is of the plain form
        it handles (every column dense, no nulls; see
        :func:`loch._buffers.fast_convert`), else here."""
        fast = fast_convert()
        if fast is not None:
            if self._fast_ctx is None or self._fast_ctx[0] is not go.lib:
                self._fast_ctx = (go.lib, convert_context(go.lib, self._ragged))
            out = fast(addr, self._fast_ctx[1])
            if out is not None:
                return out
        _, _, n, _, row_ids, ncols, _, cols, datasets = BATCH.unpack_from(MEMORY, addr)
        out: Batch = {}
        for f in tensors_fields(cols, ncols):
            name = ctypes.string_at(f[0]).decode()
            value, shapes, nulls = fields_value(go.lib, f, stack=True)
            out[name] = value
            if name in self._ragged:
                if shapes is None:  # samples of one shape
                    shapes = _same_shapes(n, value.shape[1:])
                out[name + ".shapes"] = shapes
            if nulls is not None:
                out[name + ".null"] = nulls
        out["index"] = ints_at(row_ids, n)  # uint64 row ids, all < 2**63
        if datasets:
            out["dataset"] = ints_at(datasets, n)
        return out

    def __len__(self) -> int:
        """The number of batches of the next (or current) iteration."""
        if self._active is not None:
            return len(self._active)
        go = _GoLoader(self._source(), dict(self.config(), prefetch_batches=1))
        try:
            return len(go)
        finally:
            go.close()

    def state_dict(self) -> dict[str, Any]:
        """Where the loader stands, to resume from: during an iteration,
        after the batches it delivered so far (after the epoch's last
        batch: the start of the next epoch); after an iteration left
        early, where it stopped; otherwise at the start of the next epoch
        (:attr:`epoch`, or a state loaded and not yet resumed). A JSON-able
        dict: ``{"epoch": ..., "loader": the Go loader's state}``, which
        always pins the snapshot and the order settings."""
        if self._active is not None:
            return _position(self._active_epoch, self._active.state())
        if self._stopped is not None:
            return dict(self._stopped)
        cfg = self.config()
        if cfg.get("resume") is not None:
            return {"epoch": cfg["epoch"], "loader": cfg["resume"]}
        # The start of the next epoch, pinned to the snapshot and the order
        # settings as any other state is: asked of a Go loader that reads
        # nothing but its plan.
        cfg.pop("split", None)
        go = _GoLoader(self._source(), dict(cfg, prefetch_batches=1))
        try:
            return {"epoch": cfg["epoch"], "loader": go.state()}
        finally:
            go.close()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Makes the next iteration resume from a saved :meth:`state_dict`:
        its epoch, from where it stopped; the iterations after it deliver
        the epochs after that one."""
        if "epoch" not in state or "loader" not in state:
            raise InvalidArgument(f"not a loch loader state: {state!r}")
        self._epochs.set(int(state["epoch"]))
        self._resume = state["loader"]
        self._stopped = None

    def stats(self) -> dict[str, Any]:
        """The Go loader's statistics of the current or last iteration:
        batches, samples, bytes fetched, fetch/decode/wait time (ns),
        ``wait_share`` (the share of the time the consumer waited), ..."""
        if self._active is not None:
            return self._active.stats()
        return dict(self._stats)

    def close(self) -> None:
        """Stops the current iteration's Go loader, if any."""
        if self._active is not None:
            self._active.close()

    def __getstate__(self) -> dict[str, Any]:
        """Pickles the loader without the dataset's handle or a running Go
        loader (see the class documentation)."""
        state = self.__dict__.copy()
        state["dataset"] = None
        state["_active"] = None
        state["_fast_ctx"] = None  # the library of this process
        return state


def _position(epoch: int, state: dict[str, Any]) -> dict[str, Any]:
    """The state_dict of an iteration of ``epoch`` whose Go loader is at
    ``state``. Once the epoch's last batch is delivered (the loop may not
    have asked for the end yet) the Go state is the start of the next
    epoch, whose number it carries: saved as that epoch's, so that a
    resume goes on with it rather than repeat the whole epoch."""
    return {"epoch": int(state.get("epoch", epoch)), "loader": state}


def _split(split: tuple[int, int]) -> dict[str, int]:
    """A split argument as the Go loader's configuration holds it."""
    index, count = split
    return {"index": int(index), "count": int(count)}


def per_sample(
    batch: Batch, fn: Callable[[Batch], Batch], columns: Sequence[str], row_keys: Sequence[str] = ("index",)
) -> Batch:
    """Applies ``fn`` to each sample of a numpy batch of these columns and
    stacks the results again (lists where shapes differ). A sample is a
    dict of its row keys (``"index"``, the row id; ``"dataset"`` in a
    mixture) as ints and its value in each column: padding removed (by
    ``"<column>.shapes"``), None when empty (``"<column>.null"``). Column
    names may hold dots (``"emb.npy"``)::

        >>> b = {"index": np.array([7, 8]), "a.npy": np.array([[1, 0], [2, 3]]),
        ...      "a.npy.shapes": np.array([[1], [2]])}
        >>> per_sample(b, lambda row: {"n": len(row["a.npy"])}, ["a.npy"])["n"].tolist()
        [1, 2]
    """
    n = len(batch["index"])
    rows = []
    for i in range(n):
        row: Batch = {k: int(batch[k][i]) for k in row_keys}
        for k in columns:
            v = batch[k][i]
            if k + ".null" in batch and batch[k + ".null"][i]:
                v = None
            elif k + ".shapes" in batch and isinstance(v, np.ndarray):
                v = v[tuple(slice(0, int(d)) for d in batch[k + ".shapes"][i])]
            row[k] = v
        rows.append(fn(row))
    out: Batch = {}
    for k in rows[0] if rows else []:
        vals = [r[k] for r in rows]
        if all(isinstance(v, np.ndarray) for v in vals) and len({v.shape for v in vals}) == 1:
            out[k] = np.stack(vals)
        elif all(isinstance(v, (int, float, np.generic)) for v in vals):
            out[k] = np.asarray(vals)
        else:
            out[k] = vals
    return out
