"""Mixtures: several datasets read as one stream, each row drawn from one
of them in given proportions::

    mixed = loch.mix([web, books], weights=[0.8, 0.2])
    for batch in mixed.pytorch(batch_size=64, shuffle=True, columns=["tokens"]):
        batch["tokens"], batch["dataset"], batch["index"]  # the row's dataset (0 or 1), its row id there

A :class:`Mixture` has the loaders of a :class:`loch.Dataset`
(:meth:`~Mixture.numpy`, :meth:`~Mixture.pytorch`, :meth:`~Mixture.jax`,
:meth:`~Mixture.tensorflow`) with the same arguments, epochs, sharding,
``state_dict``/``load_state_dict`` resume and PyTorch DataLoader workers
(which open each dataset again by URL, at the version it had when the
loader was made). Batches hold the columns the datasets share and, beside
``"index"``, ``"dataset"``: each row's dataset, by its place in
:func:`mix`'s list (int64).

The Go loader plans the draws (``loader.NewMix``; ``loader/order``'s
documentation, "Mixtures", is the specification). In short: the weights
are made integers u_d in the same proportions; an epoch of T rows per rank
draws dataset d exactly floor(T*u_d/U) times, plus one for the datasets
with the largest remainders, in a shuffled order that every rank shares;
each dataset delivers its rows in its own shuffled order, starting a new
one (a new cycle) when it runs out. T is ``epoch_rows`` over the world
size, or by default enough for every dataset to deliver each of its rows
once (the others cycle). The datasets must have the loaded columns with
the same dtypes (else :class:`loch.InvalidArgument`, naming the dataset
and the column); their shapes may differ (then the column is ragged:
padded, with ``"<column>.shapes"``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._handle import Handle
from ._loader_methods import LoaderMethods
from .dataset import Dataset, start_mix_loader
from .errors import InvalidArgument
from .loader import Source
from .schema import Column, Schema

__all__ = ["Mixture", "mix"]


def mix(datasets: Sequence[Dataset], weights: Sequence[float], *, epoch_rows: int | None = None) -> Mixture:
    """A mixture of ``datasets`` drawn in proportion to ``weights`` (one
    each, not negative, not all zero; they need not sum to one), with
    epochs of ``epoch_rows`` rows over all ranks (None: enough for every
    dataset to deliver each of its rows at least once). Each loader of the
    mixture reads the datasets' snapshots when it starts an epoch, as a
    dataset's loaders do::

        >>> a = loch.create("mem://mix-a", schema={"n": loch.Tensor("int64", shape=())})
        >>> a.extend({"n": np.arange(100)}); _ = a.commit()
        >>> b = loch.create("mem://mix-b", schema={"n": loch.Tensor("int64", shape=())})
        >>> b.extend({"n": np.arange(100, 110)}); _ = b.commit()
        >>> batches = list(loch.mix([a, b], weights=[0.8, 0.2], epoch_rows=50).numpy(batch_size=25))
        >>> [int((batch["dataset"] == 1).sum()) for batch in batches], sum(len(batch["n"]) for batch in batches)
        ([5, 5], 50)
    """
    return Mixture(datasets, weights, epoch_rows)


class Mixture(LoaderMethods):
    """Several datasets read as one (see the module documentation); made
    by :func:`loch.mix`. A :class:`loch.loader.Source`: loaders read it as
    they read a :class:`loch.Dataset`.

    Attributes:
        datasets: the datasets mixed, in order (row ``"dataset"`` values
            index this list).
        weights: their weights.
        epoch_rows: the rows of an epoch over all ranks (None: the default).
    """

    #: The keys of a loader's batch that describe its rows: the row ids
    #: and their datasets (:attr:`loch.loader.Source.row_keys`).
    row_keys: tuple[str, ...] = ("index", "dataset")

    #: How the loader methods (:class:`loch._loader_methods.LoaderMethods`)
    #: name themselves in messages: ``mixture.numpy()``.
    _loaders_of = "mixture"

    def __init__(self, datasets: Sequence[Dataset], weights: Sequence[float], epoch_rows: int | None = None) -> None:
        self.datasets = list(datasets)
        self.weights = [float(w) for w in weights]
        self.epoch_rows = None if epoch_rows is None else int(epoch_rows)
        if not self.datasets:
            raise InvalidArgument("a mixture of no datasets: give at least one")
        for d in self.datasets:
            if not isinstance(d, Dataset):
                raise InvalidArgument(f"a mixture mixes loch.Dataset objects, not {type(d).__name__}")
        if len(self.weights) != len(self.datasets):
            raise InvalidArgument(
                f"a mixture of {len(self.datasets)} datasets with {len(self.weights)} weights: want one weight each"
            )
        self._schema = shared_schema([d.schema for d in self.datasets])

    @property
    def schema(self) -> Schema:
        """The columns every dataset has (see :func:`shared_schema`)."""
        return self._schema

    def __repr__(self) -> str:
        parts = ", ".join(f"{d.url} ({w:g})" for d, w in zip(self.datasets, self.weights, strict=True))
        return f"<loch.Mixture {parts} epoch_rows={self.epoch_rows} columns={list(self._schema)}>"

    # loch.loader.Source's seam.

    def _start_loader(
        self, owner: object, config: Mapping[str, Any], stream_depth: int = 0
    ) -> tuple[Handle, tuple[int, int] | None]:
        """Package-internal (:class:`loch.loader.Source`): starts a Go loader
        mixing the datasets' current snapshots (see
        :func:`loch.dataset.start_mix_loader`)."""
        return start_mix_loader(owner, self.datasets, self.weights, self.epoch_rows or 0, config, stream_depth)

    def _loader_view(self) -> tuple[Schema, Callable[[object], Source]]:
        """Package-internal (:class:`loch.loader.Source`): the columns every
        dataset has, and the mixture of the datasets' current snapshots, as
        a picklable function that returns the mixture given to it when its
        datasets are usable in the calling process, else a mixture of those
        snapshots opened there."""
        parts = tuple(d._loader_view()[1] for d in self.datasets)
        return self._schema, _MixReopener(parts, tuple(self.weights), self.epoch_rows)


@dataclass(frozen=True)
class _MixReopener:
    """The snapshots a mixture's loader reads, as a picklable function (see
    :meth:`Mixture._loader_view`)."""

    parts: tuple[Callable[[object], Source], ...]
    weights: tuple[float, ...]
    epoch_rows: int | None

    def __call__(self, current: object) -> Mixture:
        if isinstance(current, Mixture):
            datasets = [part(d) for part, d in zip(self.parts, current.datasets, strict=True)]
            if all(a is b for a, b in zip(datasets, current.datasets, strict=True)):
                return current
        else:
            datasets = [part(None) for part in self.parts]
        return Mixture([d for d in datasets if isinstance(d, Dataset)], self.weights, self.epoch_rows)


def shared_schema(schemas: Sequence[Schema]) -> Schema:
    """The columns that every schema has, in the first one's order, as it
    declares them, but for the shape where they differ: a dimension
    declared differently is None (ragged), and a column declared with
    shapes of different ranks (or any shape in one of them) has any shape.
    Their statistics are summed (the bounds of their shapes kept where
    they agree). Whether their dtypes agree is the Go loader's to check::

        >>> a = Schema({"x": loch.Tensor("float32", shape=(3,)), "y": loch.ClassLabel()})
        >>> b = Schema({"x": loch.Tensor("float32", shape=(4,))})
        >>> shared_schema([a, b])["x"].shape, list(shared_schema([a, b]))
        ((None,), ['x'])
    """
    out: dict[str, Column] = {}
    for name in schemas[0]:
        cols = [s[name] for s in schemas if name in s]
        if len(cols) == len(schemas):
            out[name] = _shared_column(cols)
    return Schema(out)


def _shared_column(cols: Sequence[Column]) -> Column:
    shapes = {c.shape for c in cols}
    shape = cols[0].shape
    if len(shapes) > 1:
        ranks = {None if s is None else len(s) for s in shapes}
        if len(ranks) == 1 and None not in ranks:
            shape = tuple(dims[0] if len(set(dims)) == 1 else None for dims in zip(*shapes, strict=True))
        else:
            shape = None
    return dataclasses.replace(
        cols[0],
        shape=shape,
        min_shape=cols[0].min_shape if len({c.min_shape for c in cols}) == 1 else None,
        max_shape=cols[0].max_shape if len({c.max_shape for c in cols}) == 1 else None,
        samples=sum(c.samples for c in cols),
        stored_bytes=sum(c.stored_bytes for c in cols),
        raw_bytes=sum(c.raw_bytes for c in cols),
    )
