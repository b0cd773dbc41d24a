"""PyTorch: a dataset's batches as dicts of torch tensors.

    loader = ds.pytorch(batch_size=64, shuffle=True, seed=0)
    for epoch in range(3):
        loader.set_epoch(epoch)
        for batch in loader:
            images, labels = batch["image"], batch["label"]  # row ids: batch["index"]

Tensors share the memory the Go loader filled (``torch.from_numpy``: no
copy). With ``device="cuda"`` each batch is copied to the GPU with
``non_blocking`` on a side stream while the previous step computes.

The fastest path is iterating the loader itself (``num_workers=0``): the Go
threads do the parallel work. ``torch.utils.data.DataLoader(loader,
batch_size=None, num_workers=N)`` works too, with every start method (fork,
spawn, forkserver): each worker loads the Go library in its own process and
delivers every N-th batch of the rank, so that the DataLoader yields the
rank's batches in order, each row once per epoch. Pass ``batch_size=None``
to the DataLoader: the batches are already made. Workers open the dataset
again by URL, so it must be reachable from other processes (not
``mem://``). Until the Go loader can skip other workers' batches without
reading them, each worker reads all of the rank's batches and keeps its
own: N workers cost N times the reading and decoding.

Data-parallel training (DDP, FSDP): with ``distributed=None`` (the default)
the rank and world size come from ``torch.distributed`` when it is
initialised, else from the ``RANK`` and ``WORLD_SIZE`` environment
variables (set by torchrun), so each rank reads its own shard.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch
import torch.utils.data

from . import _library
from .dataset import Dataset
from .dataset import open as open_dataset
from .errors import InvalidArgument
from .loader import Batch, Loader, Transform

__all__ = ["TorchLoader", "to_torch", "distributed_world"]


def distributed_world(distributed: bool | tuple[int, int] | None = None) -> tuple[int, int]:
    """Returns (rank, world size): given as a tuple; (0, 1) for False; else
    from torch.distributed when initialised, else from the RANK and
    WORLD_SIZE environment variables (``distributed=True`` requires one of
    them)."""
    if isinstance(distributed, tuple):
        rank, world = distributed
        return int(rank), int(world)
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
    return {k: _tensor(v) for k, v in batch.items()}


class _TorchBatches(Loader):
    """A Loader whose batches are dicts of tensors."""

    def _to_framework(self, batch: Batch) -> Batch:
        return to_torch(batch)


class _Transfer:
    """Moves batches to a device: pinned (page-locked) host memory, then a
    non_blocking copy on a side stream, one batch ahead, so that the copy
    of batch i+1 overlaps the step on batch i."""

    def __init__(self, device: torch.device | None, pin_memory: bool) -> None:
        self.device = device
        self.cuda = device is not None and device.type == "cuda"
        self.pin = pin_memory or self.cuda
        if self.pin and not torch.cuda.is_available():
            warnings.warn("loch: pin_memory needs CUDA, which is not available: batches stay in pageable memory",
                          stacklevel=3)  # fmt: skip
            self.pin = False
        self.stream = torch.cuda.Stream(device) if self.cuda else None

    def _send(self, batch: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        def move(v: Any) -> Any:
            if not isinstance(v, torch.Tensor):
                return v
            if self.pin:
                v = v.pin_memory()
            if self.device is not None:
                v = v.to(self.device, non_blocking=self.pin)
            return v

        if self.stream is None:
            return {k: move(v) for k, v in batch.items()}, None
        with torch.cuda.stream(self.stream):
            out = {k: move(v) for k, v in batch.items()}
            event = torch.cuda.Event()
            event.record(self.stream)
        return out, event

    def _receive(self, sent: tuple[dict[str, Any], Any]) -> dict[str, Any]:
        batch, event = sent
        if event is not None:
            stream = torch.cuda.current_stream(self.device)
            stream.wait_event(event)
            for v in batch.values():
                if isinstance(v, torch.Tensor) and v.is_cuda:
                    v.record_stream(stream)  # its memory is in use by the consumer's stream now
        return batch

    def __call__(self, batches: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        if self.device is None and not self.pin:
            yield from batches
            return
        if self.stream is None:
            for b in batches:
                yield self._receive(self._send(b))
            return
        ahead = None
        for b in batches:
            sent = self._send(b)
            if ahead is not None:
                yield self._receive(ahead)
            ahead = sent
        if ahead is not None:
            yield self._receive(ahead)


class TorchLoader(torch.utils.data.IterableDataset):  # type: ignore[type-arg]
    """A PyTorch IterableDataset over a loch dataset's snapshot: each
    iteration is one epoch of this rank's batches, as dicts of tensors
    (see :mod:`loch.loader` for the keys), the row ids under ``"index"``.

    Arguments are those of :class:`loch.Loader` and:
        pin_memory: return batches in page-locked memory (CUDA only).
        device: move batches to this device (``"cuda"``: asynchronously, on
            a side stream, one batch ahead).
        distributed: None (detect, see :func:`distributed_world`), False, or
            (rank, world_size).

    It reads the snapshot the dataset had when the loader was made, in
    every process. Save and resume with :meth:`state_dict` and
    :meth:`load_state_dict` (when iterating in the main process).
    """

    def __init__(
        self,
        dataset: Dataset,
        *,
        batch_size: int = 32,
        shuffle: bool | str = False,
        seed: int = 0,
        columns: Sequence[str] | None = None,
        transform: Transform | None = None,
        sample_transform: Callable[[Batch], Batch] | None = None,
        drop_last: bool = False,
        pin_memory: bool = False,
        device: str | torch.device | None = None,
        distributed: bool | tuple[int, int] | None = None,
        epoch: int = 0,
        **options: Any,
    ) -> None:
        super().__init__()
        for k in ("rank", "world_size", "split"):
            if k in options:
                raise InvalidArgument(f"TorchLoader takes distributed=(rank, world_size), not {k}=")
        self._dataset: Dataset | None = dataset
        self._url = dataset.url
        self._version = dataset.version
        self._distributed = distributed
        self._rank, self._world = distributed_world(distributed)
        self._options: dict[str, Any] = dict(
            options, batch_size=batch_size, shuffle=shuffle, seed=seed, columns=columns, drop_last=drop_last,
            sample_transform=sample_transform,
        )  # fmt: skip
        self._transform = transform
        self._pin = pin_memory
        self._device = None if device is None else torch.device(device)
        self._epoch = epoch
        self._resume: Mapping[str, Any] | None = None
        self._loader: Loader | None = None
        # Validate the arguments now, in the process that makes the loader.
        self._make_loader(dataset, None)

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def world_size(self) -> int:
        return self._world

    def _make_loader(self, dataset: Dataset, split: tuple[int, int] | None) -> Loader:
        loader = _TorchBatches(
            dataset, rank=self._rank, world_size=self._world, epoch=self._epoch, split=split,
            transform=self._transform, **self._options,
        )  # fmt: skip
        if self._resume is not None:
            loader.load_state_dict(self._resume)
        return loader

    def _dataset_here(self) -> Dataset:
        """The dataset, opened in this process (at the pinned version) when
        the one given was opened in another (DataLoader workers)."""
        ds = self._dataset
        if ds is not None and ds._h.lib.usable and not ds.closed:
            return ds
        _library.library_in_child()
        ds = open_dataset(self._url, version=self._version)
        self._dataset = ds
        return ds

    def __iter__(self) -> Iterator[dict[str, Any]]:
        info = torch.utils.data.get_worker_info()
        split = None if info is None or info.num_workers <= 1 else (info.id, info.num_workers)
        if info is None and self._distributed is None:
            self._rank, self._world = distributed_world(None)
        loader = self._make_loader(self._dataset_here(), split)
        self._resume = None
        self._loader = loader
        transfer = _Transfer(self._device, self._pin)
        yield from transfer(iter(loader))

    def __len__(self) -> int:
        """The number of batches of this rank in the next epoch."""
        if self._loader is not None and self._loader._active is not None:
            return len(self._loader)
        return len(self._make_loader(self._dataset_here(), None))

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch of the next iteration (its shuffle), as
        DistributedSampler.set_epoch."""
        self._epoch = int(epoch)
        if self._resume is not None and (self._resume.get("loader") or {}).get("epoch", epoch) != epoch:
            self._resume = None

    def state_dict(self) -> dict[str, Any]:
        """The state to resume from, after the batches delivered so far."""
        if self._loader is not None:
            return self._loader.state_dict()
        if self._resume is not None:
            return dict(self._resume)
        return {"epoch": self._epoch, "loader": None}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Makes the next iteration resume from a saved state (the same
        snapshot and seed; another world size is allowed)."""
        if "epoch" not in state or "loader" not in state:
            raise InvalidArgument(f"not a loch loader state: {state!r}")
        self._epoch = int(state["epoch"])
        self._resume = dict(state)
        self._loader = None

    def stats(self) -> dict[str, Any]:
        """The Go loader's statistics of the current or last epoch, with
        ``wait_share``: the share of the time the training loop waited."""
        return self._loader.stats() if self._loader is not None else {}

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_dataset"] = None  # a Go handle: reopened in the other process
        state["_loader"] = None
        if self._distributed is None:
            state["_rank"], state["_world"] = distributed_world(None)
        return state
