"""PyTorch: a dataset's batches as dicts of torch tensors.

    loader = ds.pytorch(batch_size=64, shuffle=True, seed=0)
    for epoch in range(3):
        loader.set_epoch(epoch)      # optional: each pass is the next epoch anyway
        for batch in loader:
            images, labels = batch["image"], batch["label"]  # row ids: batch["index"]

Tensors share the memory the Go loader filled (``torch.from_numpy``: no
copy). With ``device="cuda"`` the Go loader's workers fill page-locked
buffers (a pool it allocates from with ``cudaHostAlloc``), and each batch
is copied from them to the GPU, ``non_blocking`` on a side stream while the
previous step computes: every tensor, the row ids under ``"index"`` too
(through a staging buffer); lists of text, json or bytes samples stay
lists. The rule (:mod:`loch._device`): the loop's stream waits for the
copy's CUDA event; a batch's host buffers go back to the loader only after
that event has completed; at most 4 batches' copies are outstanding; the
pinned bytes are bounded by the loader's ``prefetch_bytes`` and a quarter,
64 MiB of freed buffers and 6 of the largest batch, beyond which buffers
come from ordinary memory through a staging copy
(:meth:`TorchLoader.pinned_stats`). ``state_dict`` then is
still the state after the batches the loop got, although the next one is on
its way. Such a loader moves batches in the process that iterates it, so
DataLoader workers refuse it (give them ``ds.pytorch()`` and the
DataLoader ``pin_memory=True``).

The fastest path is iterating the loader itself (``num_workers=0``): the Go
threads do the parallel work. ``torch.utils.data.DataLoader(loader,
batch_size=None, num_workers=N)`` works too, with every start method (fork,
spawn, forkserver): each worker loads the Go library in its own process and
delivers every N-th batch of the rank, so that the DataLoader yields the
rank's batches in order, each row once per epoch. Pass ``batch_size=None``
to the DataLoader: the batches are already made. Workers open the dataset
again by URL, so it must be reachable from other processes (not
``mem://``). Each worker's Go loader is given its share as a split (the C
ABI's ``split``): it fetches and decodes only the batches it delivers, so N
workers divide the rank's reading between them rather than repeat it (a
chunk holding rows of several workers' batches is fetched by each of them;
a shared ``cache_dir`` makes that one read).

Epochs follow the rule of every loch loader (:mod:`loch.epochs`): each
pass delivers the next epoch; ``set_epoch(e)`` makes the next pass epoch
``e``; ``load_state_dict`` resumes the saved one. The same holds for passes
over ``DataLoader(loader, batch_size=None, num_workers=N)``, with persistent
workers or not and under every start method, although the main process then
never iterates the loader: the loader and its copies in the workers share
their epoch counter (a small file, :class:`loch.epochs.SharedEpochs`), and
the workers of one pass agree on its epoch by claiming the pass, which they
name by the DataLoader's base seed for the pass (``get_worker_info().seed``
less the worker's id: new for each pass of non-persistent workers) and the
number of passes the worker process has run (counting the passes of
persistent workers). The one case it cannot tell apart: non-persistent
workers of a pass that was stopped before one of them started (a worker
still importing when the loop broke off), followed by a pass with the same
base seed (a DataLoader ``generator`` seeded alike for each pass) whose first
worker to start is that one: it joins the earlier pass's epoch. Calling
``set_epoch`` before each pass rules that out (it closes the passes before
it).

Data-parallel training (DDP, FSDP): with ``distributed=None`` (the default)
the rank and world size come from ``torch.distributed`` when it is
initialised, else from the ``RANK`` and ``WORLD_SIZE`` environment
variables (set by torchrun), so each rank reads its own shard.
"""

from __future__ import annotations

import copy
import os
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.utils.data

from ._decode import plan_decode
from ._device import CudaOps, DeviceCopyError, DeviceOps, DeviceRing, PinnedPool, pinned_limit
from .adapter import Adapter, distributed_option
from .epochs import SharedEpochs
from .errors import InvalidArgument
from .loader import ADAPTER_SETS, Batch, CommonLoaderOptions, Loader, LoaderSettings, Source

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._gpu_transform import BatchDecoder

__all__ = ["TorchLoader", "TorchOptions", "to_torch", "distributed_world"]

# The Go loader's prefetch_bytes when not set (loader.Config).
DEFAULT_PREFETCH_BYTES = 256 << 20


class TorchOptions(CommonLoaderOptions, total=False):
    """The keyword arguments of :class:`TorchLoader` (``ds.pytorch(**kwargs)``):
    those of every loader (:class:`loch.loader.CommonLoaderOptions`) and
    ``pin_memory``, ``device``, ``distributed``, ``decode`` (see
    :class:`TorchLoader`)."""

    pin_memory: bool
    device: str | torch.device | None
    distributed: bool | Sequence[int] | None
    decode: str


def distributed_world(distributed: bool | Sequence[int] | None = None) -> tuple[int, int]:
    """Returns (rank, world size): given as a pair (a tuple or a list);
    (0, 1) for False; else from torch.distributed when initialised, else
    from the RANK and WORLD_SIZE environment variables
    (``distributed=True`` requires one of them). Any other value raises
    :class:`loch.InvalidArgument` (:func:`loch.adapter.distributed_option`)."""
    distributed = distributed_option(distributed)
    if isinstance(distributed, tuple):
        return distributed
    if distributed is False:
        return 0, 1
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    if "WORLD_SIZE" in os.environ:
        env_rank = os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0"))
        return int(env_rank), int(os.environ["WORLD_SIZE"])
    if distributed is True:
        raise InvalidArgument("distributed=True, but torch.distributed is not initialised and WORLD_SIZE is not set")
    return 0, 1


def _tensor(v: Any) -> Any:
    """A numpy array as a tensor sharing its memory; other values as is."""
    if not isinstance(v, np.ndarray):
        return v
    # dtype.name is computed in Python (microseconds): look at it only for
    # dtypes that are not numpy's own numbers (ml_dtypes' bfloat16 is "V").
    if v.dtype.kind == "V" and v.dtype.name == "bfloat16":
        return torch.from_numpy(v.view(np.uint16)).view(torch.bfloat16)
    return torch.from_numpy(v)


def to_torch(batch: Batch) -> dict[str, Any]:
    """Converts a numpy batch to torch tensors without copying (lists of
    text, json or bytes samples stay lists)."""
    out: dict[str, Any] = {}
    for k, v in batch.items():
        # The common case inline (once per column and batch): an array of
        # one of numpy's own dtypes; _tensor for the rest.
        out[k] = _from_numpy(v) if type(v) is _ndarray and v.dtype.kind != "V" else _tensor(v)
    return out


_ndarray, _from_numpy = np.ndarray, torch.from_numpy


class _Transfer:
    """Moves batches to a device. To CUDA (or any :class:`DeviceOps`
    given as ``ops``): through a :class:`loch._device.DeviceRing`, one
    batch ahead, so that the copy of batch i+1 overlaps the step on batch
    i, from the page-locked buffers the Go loader filled (``pool``) where
    it could, else through staging buffers. With ``pin_memory`` alone, each
    tensor is copied to page-locked memory of its own.

    Running ahead, it has taken batch i+1 from the loader while the
    consumer has batch i, so the loader's own state counts one batch too
    many: ``mark`` (the loader's ``state_dict``) is called before each
    batch is taken, and :attr:`behind` is the state after the batches the
    consumer got, while the consumer has one and the next is taken (also
    after the consumer broke off there); None otherwise."""

    def __init__(
        self,
        device: torch.device | None,
        pin_memory: bool,
        mark: Callable[[], dict[str, Any]] | None = None,
        *,
        ops: DeviceOps | None = None,
        pool: PinnedPool | None = None,
        prefetch_bytes: int = 0,
    ) -> None:
        self.device = device
        if ops is None and device is not None and device.type == "cuda":
            ops = CudaOps(device)
        self.pin = pin_memory and ops is None
        if self.pin and not torch.cuda.is_available():
            warnings.warn("loch: pin_memory needs CUDA, which is not available: batches stay in pageable memory",
                          stacklevel=3)  # fmt: skip
            self.pin = False
        self.ring = None if ops is None else DeviceRing(ops, pool=pool, prefetch_bytes=prefetch_bytes)
        #: Whether batch i+1 is taken and sent while the consumer has batch i.
        self.ahead = self.ring is not None
        self.mark = mark
        self.behind: dict[str, Any] | None = None

    def _send(self, batch: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        if self.ring is not None:
            return self.ring.send(batch)

        def move(v: Any) -> Any:
            if not isinstance(v, torch.Tensor):
                return v
            if self.pin:
                v = v.pin_memory()
            if self.device is not None:
                v = v.to(self.device, non_blocking=self.pin)
            return v

        return {k: move(v) for k, v in batch.items()}, None

    def _receive(self, sent: tuple[dict[str, Any], Any]) -> dict[str, Any]:
        return sent[0] if self.ring is None else self.ring.receive(sent)

    def __call__(self, batches: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        if self.device is None and not self.pin and not self.ahead:
            return batches  # as they are: no generator in between
        return self._moved(batches)

    def _moved(self, batches: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        if not self.ahead:
            for b in batches:
                yield self._receive(self._send(b))
            return
        ahead = None
        try:
            while True:
                state = self.mark() if ahead is not None and self.mark is not None else None
                b = next(batches, None)
                sent = None if b is None else self._send(b)
                del b  # the host batch lives on in the ring until its copy is done, no longer
                if ahead is not None:
                    self.behind = state
                    yield self._receive(ahead)
                if sent is None:
                    break
                ahead = sent
            self.behind = None
            self._close_ring(raising=True)
        finally:
            self._close_ring(raising=False)  # after a break or an error: let go of everything
            close = getattr(batches, "close", None)
            if close is not None:
                close()  # the loader records where it stopped now, not when collected

    def _close_ring(self, raising: bool) -> None:
        """Waits for the ring's copies and lets go of their host memory;
        their errors are raised only if ``raising``."""
        if self.ring is None:
            return
        try:
            self.ring.close()
        except DeviceCopyError:
            if raising:
                raise


def _usable(device: str | torch.device, dev: torch.device) -> None:
    """Raises :class:`loch.InvalidArgument` unless torch can place tensors
    on ``dev``, a device of neither CPU nor CUDA (MPS where this torch or
    machine has none, a backend this torch is built without)."""
    if dev.type == "mps":
        if not torch.backends.mps.is_available():
            raise InvalidArgument(
                f"device={device!r}: MPS is not available (torch.backends.mps.is_available() is False: "
                'it needs Apple silicon and a torch built with MPS): leave device out (or "cpu")'
            )
        return
    try:
        torch.empty(0, device=dev)
    except Exception as e:  # noqa: BLE001 (each backend fails in its own way)
        first = str(e).splitlines()[0] if str(e) else ""
        raise InvalidArgument(
            f"device={device!r}: torch cannot place tensors there ({type(e).__name__}: {first}); "
            'use "cpu" or "cuda"'
        ) from None


def _device(device: str | torch.device | None) -> torch.device | None:
    """The device batches go to, checked now rather than at the first
    batch: :class:`loch.InvalidArgument` names a device torch does not
    know, or cannot use here (MPS where it is not available, a backend
    this torch lacks), or a CUDA device where CUDA is not available or has
    fewer devices."""
    if device is None:
        return None
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise InvalidArgument(f"device={device!r}: not a torch device ({e})") from None
    if dev.type not in ("cpu", "cuda"):
        _usable(device, dev)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            why = "this torch is built without CUDA" if torch.version.cuda is None else "no CUDA GPU is visible"
            raise InvalidArgument(
                f"device={device!r}: CUDA is not available ({why}; torch.cuda.is_available() is False): "
                'leave device out (or "cpu") to get batches in host memory'
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise InvalidArgument(f"device={device!r}: there are {torch.cuda.device_count()} CUDA devices")
    return dev


class TorchLoader(Adapter, torch.utils.data.IterableDataset):  # type: ignore[type-arg]
    """A PyTorch IterableDataset over a loch dataset's snapshot: each
    iteration is one epoch of this rank's batches, as dicts of tensors
    (see :mod:`loch.loader` for the keys), the row ids under ``"index"``.
    It wraps one :class:`loch.Loader` (:attr:`loader`, see
    :class:`loch.adapter.Adapter`), whose methods it shares: ``set_epoch``,
    ``state_dict``, ``load_state_dict``, ``stats``, ``len``.

    Arguments are those of :class:`loch.Loader` and:
        pin_memory: return batches in page-locked memory (CUDA only).
        device: move batches to this device (``"cuda"``: from page-locked
            buffers the Go loader fills, asynchronously, on a side stream,
            one batch ahead; see the module documentation).
        distributed: None (detect, see :func:`distributed_world`), True
            (detect, and require a distributed run), False, or (rank,
            world_size) (a tuple or a list).
        decode: where the JPEG columns are decoded and transformed:
            ``"cpu"`` (the default: by the Go loader), ``"gpu"`` (the loader
            delivers their stored bytes and each batch is decoded by
            ``torchvision.io.decode_jpeg`` on ``device``, nvJPEG on a GPU,
            and run through the same ``transform`` spec there; without a
            CUDA device, on the CPU) or ``"auto"`` (``"gpu"`` when
            ``device`` is CUDA and a loaded column keeps JPEG). See
            :mod:`loch._gpu_transform` for what it runs and
            docs/loader.md for how its pixels differ from Go's::

                loader = ds.pytorch(batch_size=256, shuffle=True, device="cuda", decode="gpu",
                                    transform={"image": "random_resized_crop=224,flip,to_float,normalize=imagenet,chw"})

    Each iteration is the next epoch, in the main process or over a
    DataLoader's workers (see the module documentation); ``set_epoch``
    sets the next one. DataLoader workers read the snapshot the dataset had
    when the loader was made. Save and resume mid-epoch with
    :meth:`state_dict` and :meth:`load_state_dict` when iterating in the
    main process; under DataLoader workers the main process's state_dict is
    the start of the next epoch.
    """

    def __init__(
        self,
        dataset: Source,
        *,
        pin_memory: bool = False,
        device: str | torch.device | None = None,
        distributed: bool | Sequence[int] | None = None,
        decode: str = "cpu",
        **options: Unpack[CommonLoaderOptions],
    ) -> None:
        for k in ADAPTER_SETS:
            if k in options:
                raise InvalidArgument(f"TorchLoader takes distributed=(rank, world_size), not {k}=")
        settings = LoaderSettings(**options)
        distributed = distributed_option(distributed)
        device_ = _device(device)
        plan = plan_decode(decode, dataset.schema, settings, device_ is not None and device_.type == "cuda")
        if plan is not None:
            settings = plan.settings
        #: The decoder of the JPEG columns with ``decode="gpu"``, else None.
        self.decoder: BatchDecoder | None = None
        if plan is not None:
            from ._gpu_transform import BatchDecoder  # imports torchvision

            self.decoder = BatchDecoder(plan.specs, plan.channels, device_, seed=settings.seed,
                                        skip_bad=settings.skip_bad_samples, ragged=plan.ragged)  # fmt: skip
        rank, world = distributed_world(distributed)
        self._epochs = SharedEpochs(settings.epoch)
        loader = Loader.from_settings(dataset, replace(settings, rank=rank, world_size=world, epochs=self._epochs))
        super().__init__(loader)
        self._distributed = distributed
        self._pin = pin_memory
        self._device = device_
        self._worker_passes = 0  # passes this copy started in a DataLoader worker
        self._transfer: _Transfer | None = None  # of the last iteration in this process
        #: The device operations of device="cuda" (a fake device in tests),
        #: and the page-locked pool the Go loader fills (None where CUDA's
        #: allocator was not found): made at the first iteration, kept.
        self._ops: DeviceOps | None = None
        self._pool: PinnedPool | None = None

    @property
    def _dataset(self) -> Source | None:
        """The dataset in this process: None in a pickled copy until it
        iterates (the name older code and tests know; see :attr:`dataset`)."""
        return self.loader.dataset

    def convert(self, batch: Batch) -> Batch:
        """The batch as tensors sharing its memory (:func:`to_torch`)."""
        return to_torch(batch)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """One epoch, the next: in the main process this rank's batches (the
        rank detected again when ``distributed`` is None), in a DataLoader
        worker its share of them, moved to the device if one was given. A
        worker claims its pass's epoch at once (the DataLoader calls
        ``iter`` when the pass starts); the batches are read as they are
        asked for. In a worker process the dataset is opened again first."""
        info = torch.utils.data.get_worker_info()
        if info is None:
            if self._distributed is None:
                self.loader.set_rank(*distributed_world(None))
            ops, pool = self._device_path()
            prefetch = int(self.loader.config().get("prefetch_bytes") or DEFAULT_PREFETCH_BYTES)
            self._transfer = _Transfer(self._device, self._pin, mark=self.loader.state_dict,
                                       ops=ops, pool=pool, prefetch_bytes=prefetch)  # fmt: skip
            pinned = None if pool is None else pool.handle
            epoch = self.loader.epoch  # the one batches() takes
            return self._decoded(self._transfer(self.loader.batches(self.convert, pinned_pool=pinned)), epoch)
        if self._device is not None and self._device.type == "cuda":
            # A worker cannot hand CUDA tensors on (and a forked one cannot
            # start CUDA at all): the copy belongs in the main process.
            raise InvalidArgument(
                f"ds.pytorch(device={str(self._device)!r}) in a DataLoader worker: batches are moved to the GPU in "
                "the process that iterates; iterate the loader itself (its Go workers already use every core), or "
                "give the workers ds.pytorch() and the DataLoader pin_memory=True, moving batches in the loop"
            )
        # The pass: the DataLoader's base seed for it and this worker
        # process's count of passes (see the module documentation).
        key = (info.seed - info.id, self._worker_passes)
        self._worker_passes += 1
        epoch = self._epochs.claim(key, info.id)
        split = None if info.num_workers <= 1 else (info.id, info.num_workers)
        batches = self._worker_part(self.loader.batches(self.convert, split=split, epoch=epoch), key, info.id)
        return self._decoded(_Transfer(self._device, self._pin)(batches), epoch)

    def _decoded(self, batches: Iterator[dict[str, Any]], epoch: int) -> Iterator[dict[str, Any]]:
        """The batches of ``epoch`` with their JPEG columns decoded (by
        :attr:`decoder`, with ``decode="gpu"``), after the transfer has
        moved the rest to the device; as they are otherwise."""
        if self.decoder is None:
            return batches
        return self._decode_each(self.decoder, batches, epoch)

    @staticmethod
    def _decode_each(decoder: BatchDecoder, batches: Iterator[dict[str, Any]], epoch: int) -> Iterator[dict[str, Any]]:
        decoder.skipped = []
        try:
            for b in batches:
                out = decoder(b, epoch)
                if out is not None:  # None: every row was skipped
                    yield out
        finally:
            close = getattr(batches, "close", None)
            if close is not None:
                close()

    def _device_path(self) -> tuple[DeviceOps | None, PinnedPool | None]:
        """The device operations and the page-locked pool of this loader's
        device (see :mod:`loch._device`), made once: (None, None) for the
        host; no pool where the device has no host allocator."""
        if self._ops is None and self._device is not None and self._device.type == "cuda":
            self._ops = CudaOps(self._device)
        if self._ops is not None and self._pool is None:
            allocator = self._ops.host_allocator()
            if allocator is not None:
                prefetch = int(self.loader.config().get("prefetch_bytes") or DEFAULT_PREFETCH_BYTES)
                self._pool = PinnedPool(allocator, pinned_limit(prefetch, DeviceRing.DEPTH, 0))
        return self._ops, self._pool

    def pinned_stats(self) -> dict[str, int] | None:
        """The page-locked pool's statistics with ``device="cuda"`` (see
        :meth:`loch._device.PinnedPool.stats`: ``fallbacks`` counts batch
        buffers that were not page-locked and went through a staging copy),
        or None before the first iteration or without a pool."""
        return None if self._pool is None else self._pool.stats()

    def _worker_part(self, batches: Iterator[Batch], key: tuple[int, int], member: int) -> Iterator[Batch]:
        """A worker's part of a pass, whose statistics it records for the
        main process (:meth:`worker_stats`) when it ends."""
        try:
            yield from batches
        finally:
            self._epochs.record(key, member, self.loader.stats())

    def state_dict(self) -> dict[str, Any]:
        """The state to resume from (see :meth:`loch.Loader.state_dict`):
        after the batches the loop got, also with ``device="cuda"``, whose
        transfer has taken the next batch from the loader already."""
        behind = None if self._transfer is None else self._transfer.behind
        return copy.deepcopy(behind) if behind is not None else self.loader.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Makes the next iteration resume from a saved :meth:`state_dict`."""
        self._transfer = None
        self.loader.load_state_dict(state)

    def set_epoch(self, epoch: int) -> None:
        """Makes the next iteration deliver epoch ``epoch`` (see
        :meth:`loch.Loader.set_epoch`)."""
        self._transfer = None
        self.loader.set_epoch(epoch)

    def stats(self) -> dict[str, Any]:
        """The loader's statistics (see :meth:`loch.Loader.stats`), with
        the rows that ``decode="gpu"`` skipped among ``skipped``."""
        stats = self.loader.stats()
        return stats if self.decoder is None else self.decoder.with_skipped(stats)

    def worker_stats(self) -> list[dict[str, Any]]:
        """The Go loader statistics of each DataLoader worker (by worker
        id) of the last pass over a ``DataLoader(loader, num_workers=N)``,
        for those whose part of the pass ended, or [] when no worker ran a
        pass. Each is what :meth:`stats` gives for an iteration in the main
        process, e.g. ``bytes_fetched``: their sum is what the workers read
        together::

            >>> dl = torch.utils.data.DataLoader(loader, batch_size=None, num_workers=4)  # doctest: +SKIP
            >>> for batch in dl: ...                                               # doctest: +SKIP
            >>> sum(s["bytes_fetched"] for s in loader.worker_stats())             # doctest: +SKIP
        """
        last = self._epochs.last_pass()
        return [] if last is None else list(last["stats"].values())

    def __len__(self) -> int:
        """The number of batches of this rank in the next (or current) epoch."""
        return len(self.loader)

    def __getstate__(self) -> dict[str, Any]:
        """Pickles for a DataLoader worker: the Loader goes without its
        dataset's handle (the worker reopens the snapshot), and with the
        rank detected here when ``distributed`` is None (a worker cannot
        detect it)."""
        if self._distributed is None:
            self.loader.set_rank(*distributed_world(None))
        state = self.__dict__.copy()
        state["_transfer"] = None  # its CUDA stream stays here
        state["_ops"] = state["_pool"] = None  # so do the device's stream and page-locked memory
        return state
