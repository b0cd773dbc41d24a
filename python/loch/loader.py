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

The loader's parts: its options, typed and checked once
(:mod:`loch._loader_options`: :class:`LoaderSettings`,
:class:`LoaderOptions`), the stream of one Go loader's batches
(:mod:`loch._stream`), and their collation into numpy arrays
(:mod:`loch._collate`). This module holds the :class:`Loader` (its
epochs, iterations and saved states) and what it reads (:class:`Source`),
and re-exports the names of the others that were its own.
"""

from __future__ import annotations

import inspect
import os  # noqa: F401 (tests reach the stream's os.write as loch.loader.os)
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np  # noqa: F401 (the doctests' np)

from ._buffers import convert_context, fast_convert
from ._collate import BATCH, Batch, per_sample, to_numpy
from ._handle import Handle
from ._loader_options import (
    ADAPTER_KEYWORDS,
    ADAPTER_SETS,
    CommonLoaderOptions,
    LoaderOptions,
    LoaderSettings,
    Transform,
    check_keywords,
    go_checked,
    int_option,
    split_config,
)
from ._stream import (
    STREAM_BATCH,
    STREAM_DEPTH,
    STREAM_DONE,
    STREAM_END,
    STREAM_FREED,
    STREAM_PIPE_BUF,
    STREAM_READ,
    STREAM_RECORD,
    STREAM_RETURN,
    STREAM_WAITING,
    Starter,
)
from ._stream import GoLoader as _GoLoader
from .dtypes import VARIABLE
from .epochs import Epochs
from .errors import InvalidArgument
from .schema import Schema

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "Loader", "LoaderOptions", "CommonLoaderOptions", "LoaderSettings", "Source", "Batch", "Transform",
    "keyword_signature", "check_keywords", "int_option", "per_sample", "ADAPTER_KEYWORDS",
    "BATCH", "STREAM_RECORD", "STREAM_DEPTH", "STREAM_READ", "STREAM_PIPE_BUF", "STREAM_BATCH", "STREAM_END",
    "STREAM_DONE", "STREAM_FREED", "STREAM_RETURN", "STREAM_WAITING",
]  # fmt: skip


class Source(Starter, Protocol):
    """What a :class:`Loader` reads: a dataset at one snapshot
    (:class:`loch.Dataset`), or a mixture of several
    (:class:`loch.mixture.Mixture`). loch.loader (and the framework
    adapters above it) see a dataset only through this protocol, so that
    loch.dataset can make loaders without the two modules importing each
    other; the two underscored members are the package-internal seam,
    documented on Dataset (``_start_loader`` is used by
    :mod:`loch._stream`, whose :class:`loch._stream.Starter` names it, and
    ``_loader_view`` by :class:`Loader`).

    Making a loader object makes no call into Go from the calling thread
    once the snapshot's schema is known (the first loader of a snapshot
    asks Go for it): a loader made for each epoch is made just before the
    epoch starts, and a thread returning from a call into Go keeps a Go
    processor for up to 20 ms, which the epoch's workers then lack (on two
    cores its first batch came 8 ms later;
    bench/history/2026-11-26-issue-17.md)."""

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
        encoded: png or jpeg columns (sample compression png or jpeg) to
            deliver as their stored bytes, a list of ``bytes`` per batch,
            instead of decoded pixels: for a decoder of one's own (the
            torch and jax adapters' ``decode="gpu"`` sets it). Such a
            column takes no Go transform.
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
    :mod:`loch.tensorflow`) wrap one Loader each (:class:`loch.adapter.Adapter`),
    made with :meth:`from_settings` from the options checked once
    (:class:`LoaderSettings`), and take its batches through :meth:`batches`.
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
        encoded: Sequence[str] | None = None,
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
        """Checks the options (see the class documentation) and asks Go to
        check the configuration; starts nothing."""
        settings = LoaderSettings(
            columns=columns, batch_size=batch_size, shuffle=shuffle, seed=seed, epoch=epoch, drop_last=drop_last,
            rank=rank, world_size=world_size, rows=rows, joined=joined, query=query, transform=transform,
            sample_transform=sample_transform, encoded=encoded, prefetch_batches=prefetch_batches,
            prefetch_bytes=prefetch_bytes, workers=workers, fetch_concurrency=fetch_concurrency,
            window_rows=window_rows,
            skip_bad_samples=skip_bad_samples, cache_dir=cache_dir, cache_bytes=cache_bytes, split=split,
            allow_version_change=allow_version_change, epochs=epochs,
        )  # fmt: skip
        self._setup(dataset, settings)

    @classmethod
    def from_settings(cls, dataset: Source, settings: LoaderSettings) -> Loader:
        """A loader of ``dataset`` made with ``settings`` (checked already):
        how the framework adapters make theirs::

            >>> ds = loch.create("mem://settings-doc", schema={"n": loch.Tensor("int64", shape=())})
            >>> ds.extend({"n": np.arange(10)}); _ = ds.commit()
            >>> loader = Loader.from_settings(ds, LoaderSettings(batch_size=4))
            >>> [len(b["n"]) for b in loader]
            [4, 4, 2]
        """
        loader = cls.__new__(cls)
        loader._setup(dataset, settings)
        return loader

    def _setup(self, dataset: Source, settings: LoaderSettings) -> None:
        """Makes this loader of ``dataset`` with ``settings``: resolves the
        columns and the transforms against the dataset's schema and has Go
        check the configuration (and fill in its defaults) now, so that a
        bad setting raises here rather than at the first batch."""
        schema, self._reopen = dataset._loader_view()
        self.dataset: Source | None = dataset
        self.columns = _columns(settings.columns, schema)
        self.row_keys = tuple(dataset.row_keys)
        #: The joined columns delivered beside the dataset's: name to
        #: (dtype, shape of one value).
        self.joined = _joined(settings.joined or (), schema, self.columns, self.row_keys)
        encoded = settings.encoded or ()  # delivered as lists of bytes
        self._ragged = frozenset(
            c for c in self.columns if schema[c].ragged and schema[c].dtype not in VARIABLE and c not in encoded
        )
        self._fast_ctx: tuple[Any, tuple[Any, ...]] | None = None  # (library, ctx of fast_convert)
        transform = settings.transform
        self._batch_transform: Callable[[Batch], Batch] | None = transform if callable(transform) else None
        self._sample_transform = settings.sample_transform
        self._config = settings.go_config(self.columns, _go_transforms(transform, schema, self.columns))
        # (The row ids and joined values, possibly many, are left to
        # loch_loader_new.)
        plain = {k: v for k, v in self._config.items() if k not in ("rows", "joined")}
        checked = go_checked(plain | {"epoch": settings.epoch})
        self.batch_size = int(checked["batch_size"])
        self._epochs = settings.epochs if settings.epochs is not None else Epochs(settings.epoch)
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
        settings = LoaderSettings(rank=rank, world_size=world_size)
        self._config["rank"], self._config["world_size"] = settings.rank, settings.world_size

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

    def _start(self, split: tuple[int, int] | None, epoch: int | None, pinned_pool: int | None = None) -> _GoLoader:
        source = self._source()
        taken = epoch is None
        if epoch is None:
            epoch = self._epochs.take()
        config = self._go_config(epoch)
        if split is not None:
            config["split"] = split_config(split)
        if pinned_pool is not None:
            config["pinned_pool"] = pinned_pool
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
        pinned_pool: int | None = None,
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
        pinned_pool: the handle of a pool of page-locked memory that the Go
            loader allocates the batches' buffers from
            (:class:`loch._device.PinnedPool`, for ``device="cuda"``).

        The Go loader starts at the first ``next`` and stops when the
        iteration ends or the iterator is closed or collected::

            >>> ds = loch.create("mem://batches-doc", schema={"n": loch.Tensor("int64", shape=())})
            >>> ds.extend({"n": np.arange(10)}); _ = ds.commit()
            >>> [b["n"].tolist() for b in ds.numpy(batch_size=4).batches(lambda b: {"n": b["n"] * 10})]
            [[0, 10, 20, 30], [40, 50, 60, 70], [80, 90]]
        """
        go = self._start(split, epoch, pinned_pool)
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
        return to_numpy(go.lib, addr, self._ragged)

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


def _columns(columns: Sequence[str] | None, schema: Schema) -> list[str]:
    """The columns to load, of ``schema``: all of them (None) or those
    named, each of which it must have."""
    if columns is None:
        return list(schema)
    for c in columns:
        if c not in schema:
            raise InvalidArgument(f"no column {c!r} (have {list(schema)})")
    return list(columns)


def _joined(
    joined: Sequence[Mapping[str, Any]], schema: Schema, columns: Sequence[str], row_keys: Sequence[str]
) -> dict[str, tuple[str, tuple[int, ...]]]:
    """The joined columns by name, each's (dtype, shape of one value); no
    name may be a column's or a row key's, nor a row key a loaded
    column's."""
    for key in row_keys:
        if key in columns:
            raise InvalidArgument(
                f'a column named "{key}" clashes with the "{key}" a batch holds beside its columns: load the others'
            )
    out: dict[str, tuple[str, tuple[int, ...]]] = {}
    for j in joined:
        name = str(j["name"])
        if name in schema or name in row_keys:
            raise InvalidArgument(
                f'joined column "{name}" clashes with the "{name}" a batch holds: rename it (AS) in the query'
            )
        out[name] = (str(j["dtype"]), tuple(int(d) for d in j.get("shape") or ()))
    return out


def _go_transforms(transform: Transform | None, schema: Schema, columns: Sequence[str]) -> dict[str, str] | None:
    """The Go transforms by column of a ``transform`` option: a spec
    string is every loaded image column's (one at least); a callable is
    Python's, no Go transform."""
    if transform is None or callable(transform):
        return None
    if isinstance(transform, str):
        go = {c: transform for c in columns if schema[c].kind == "image"}
        if not go:
            raise InvalidArgument(f"transform {transform!r}: none of the columns {list(columns)} is an image column")
        return go
    return dict(transform)


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
            if framework in ADAPTER_KEYWORDS and p.name in ADAPTER_SETS:
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


def _position(epoch: int, state: dict[str, Any]) -> dict[str, Any]:
    """The state_dict of an iteration of ``epoch`` whose Go loader is at
    ``state``. Once the epoch's last batch is delivered (the loop may not
    have asked for the end yet) the Go state is the start of the next
    epoch, whose number it carries: saved as that epoch's, so that a
    resume goes on with it rather than repeat the whole epoch."""
    return {"epoch": int(state.get("epoch", epoch)), "loader": state}
