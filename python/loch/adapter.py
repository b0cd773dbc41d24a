"""The shape of every framework adapter: one :class:`loch.Loader`, whose
numpy batches the adapter converts.

:mod:`loch.torch`, :mod:`loch.jax` and :mod:`loch.tensorflow` each make a
Loader from their arguments (the rank and world size from their
framework's view of the run), wrap it in a subclass of :class:`Adapter`
that defines :meth:`~Adapter.convert`, and leave everything else (epochs,
resume, statistics, length) to the Loader. A new framework needs no more::

    >>> import loch
    >>> from loch.adapter import Adapter
    >>> class Lists(Adapter):
    ...     def convert(self, batch):
    ...         return {k: v.tolist() if k == "n" else v for k, v in batch.items()}
    >>> ds = loch.create("mem://adapter-doc", schema={"n": loch.Tensor("int64", shape=())})
    >>> ds.extend({"n": np.arange(5)}); _ = ds.commit()
    >>> lists = Lists(ds.numpy(batch_size=2))
    >>> [b["n"] for b in lists], len(lists)
    ([[0, 1], [2, 3], [4]], 3)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from .errors import InvalidArgument
from .loader import Batch, Loader, Source

__all__ = ["Adapter", "distributed_option"]


def distributed_option(distributed: Any) -> bool | tuple[int, int] | None:
    """An adapter's ``distributed`` argument, checked: None (detect the
    run), True or False as given; (rank, world_size), as any sequence of
    two ints (a list too), as a tuple. Anything else raises
    :class:`loch.InvalidArgument` rather than being taken for None::

        >>> distributed_option([1, 2])
        (1, 2)
        >>> distributed_option("yes")
        Traceback (most recent call last):
        loch.errors.InvalidArgument: distributed='yes': want None (detect), True, False or (rank, world_size), got str
    """
    if distributed is None or isinstance(distributed, bool | np.bool_):
        return None if distributed is None else bool(distributed)
    pair = isinstance(distributed, Sequence) and not isinstance(distributed, str | bytes) and len(distributed) == 2
    if pair and all(isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_) for v in distributed):
        rank, world = int(distributed[0]), int(distributed[1])
        if world < 1 or not 0 <= rank < world:
            raise InvalidArgument(
                f"distributed={distributed!r}: want (rank, world_size) with world_size >= 1 and 0 <= rank < world_size"
            )
        return rank, world
    raise InvalidArgument(
        f"distributed={distributed!r}: want None (detect), True, False or (rank, world_size), "
        f"got {type(distributed).__name__}"
    )


class Adapter:
    """One :class:`loch.Loader` (:attr:`loader`) whose batches come through
    :meth:`convert`. Iterating is one epoch of ``loader.batches(convert)``:
    ``convert`` runs after the loader's ``sample_transform`` and before a
    callable ``transform``, which so sees the framework's batches. The other
    methods are the Loader's, and so is the epoch rule: iterating again is
    the next epoch (see :mod:`loch.epochs`).
    """

    def __init__(self, loader: Loader) -> None:
        #: The Loader wrapped (it owns the configuration and the epoch's state).
        self.loader = loader

    def convert(self, batch: Batch) -> Batch:
        """Converts one numpy batch to the framework's (here: unchanged)."""
        return batch

    def __iter__(self) -> Iterator[Batch]:
        """The next epoch, as converted batches."""
        return self.loader.batches(self.convert)

    def __len__(self) -> int:
        """The number of batches of this rank in the next (or current) epoch."""
        return len(self.loader)

    def __repr__(self) -> str:
        # The Loader's repr, under this adapter's name.
        return repr(self.loader).replace("<loch.Loader ", f"<{type(self).__module__}.{type(self).__qualname__} ", 1)

    @property
    def dataset(self) -> Source | None:
        """The dataset read (see :attr:`loch.Loader.dataset`)."""
        return self.loader.dataset

    @property
    def columns(self) -> list[str]:
        """The columns loaded."""
        return self.loader.columns

    @property
    def batch_size(self) -> int:
        """Rows per batch."""
        return self.loader.batch_size

    @property
    def rank(self) -> int:
        """This process's rank of :attr:`world_size`."""
        return self.loader.rank

    @property
    def world_size(self) -> int:
        """The number of ranks sharing each epoch."""
        return self.loader.world_size

    @property
    def epoch(self) -> int:
        """The epoch the next iteration delivers."""
        return self.loader.epoch

    def set_epoch(self, epoch: int) -> None:
        """Makes the next iteration deliver epoch ``epoch`` (its shuffle),
        as DistributedSampler.set_epoch; the ones after it go on from there.
        A state loaded for another epoch is dropped."""
        self.loader.set_epoch(epoch)

    def config(self) -> dict[str, Any]:
        """The Go loader configuration of the next iteration."""
        return self.loader.config()

    def state_dict(self) -> dict[str, Any]:
        """The state to resume from: after the batches delivered so far, or
        at the start of the next epoch (see :meth:`loch.Loader.state_dict`)."""
        return self.loader.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Makes the next iteration resume from a saved state (the same
        snapshot and seed; another world size is allowed)."""
        self.loader.load_state_dict(state)

    def stats(self) -> dict[str, Any]:
        """The Go loader's statistics of the current or last epoch, with
        ``wait_share``: the share of the time the training loop waited."""
        return self.loader.stats()

    def close(self) -> None:
        """Stops the current epoch's Go loader, if any."""
        self.loader.close()
