"""JAX: a dataset's batches as dicts of jax arrays.

    for batch in ds.jax(batch_size=64, shuffle=True):
        params = step(params, batch["image"], batch["label"])

With a ``sharding`` (a ``jax.sharding.Sharding``) each array is placed on
it: on one host with ``jax.device_put``; across hosts each process loads its
own shard of the rows (rank ``jax.process_index()`` of
``jax.process_count()``) and the global array is assembled with
``jax.make_array_from_process_local_data``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from ._decode import plan_decode
from .adapter import Adapter, distributed_option
from .errors import InvalidArgument
from .loader import Batch, CommonLoaderOptions, Loader, LoaderSettings, Source

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["JaxLoader", "JaxOptions"]


class JaxOptions(CommonLoaderOptions, total=False):
    """The keyword arguments of :class:`JaxLoader` (``ds.jax(**kwargs)``):
    those of every loader (:class:`loch.loader.CommonLoaderOptions`) and
    ``sharding``, ``device``, ``distributed``, ``decode`` (see
    :class:`JaxLoader`)."""

    sharding: jax.sharding.Sharding | None
    device: jax.Device | str | None
    distributed: bool | Sequence[int] | None
    decode: str


def _device(device: jax.Device | str | None) -> jax.Device | None:
    """The device arrays are placed on, checked now rather than at the
    first batch (where ``jax.device_put`` refuses anything but a device):
    a ``jax.Device`` as is; a platform name (``"gpu"``, ``"cuda:1"``) as
    that device of ``jax.devices(platform)``; anything else, or a platform
    JAX has no device of here, raises :class:`loch.InvalidArgument`."""
    if device is None or isinstance(device, jax.Device):
        return device
    have = f"jax.devices() is {jax.devices()}"
    if not isinstance(device, str):
        raise InvalidArgument(f"device={device!r}: want a jax.Device or a platform name, got {type(device).__name__}")
    platform, _, index = device.partition(":")
    if not platform or (index and not index.isdigit()):
        raise InvalidArgument(f"device={device!r}: want a platform name, optionally with :index (\"gpu:0\")")
    try:
        devices = jax.devices(platform)
    except (RuntimeError, ValueError):
        raise InvalidArgument(f"device={device!r}: JAX has no {platform!r} device here ({have})") from None
    i = int(index or 0)
    if i >= len(devices):
        raise InvalidArgument(f"device={device!r}: JAX has {len(devices)} {platform!r} devices ({have})")
    return devices[i]


def _fits(name: str, v: np.ndarray) -> None:
    """Raises :class:`loch.InvalidArgument` when JAX would wrap v's
    integers: without ``jax_enable_x64`` it holds int64 and uint64 arrays
    (the row ids under ``"index"``, timestamps, token ids) as int32 and
    uint32, and ``jax.device_put`` wraps what they cannot hold without a
    word. Floats only lose precision, as JAX users expect."""
    if v.dtype.kind not in "iu" or v.size == 0:
        return
    to = jax.dtypes.canonicalize_dtype(v.dtype)
    if to.itemsize >= v.dtype.itemsize:
        return
    info, lo, hi = np.iinfo(to), v.min(), v.max()
    if lo >= info.min and hi <= info.max:
        return
    flat = v.reshape(-1)
    bad = flat[np.flatnonzero((flat < info.min) | (flat > info.max))[0]]  # the first, in the batch's order
    out = "" if name == "index" else ", or leave the column out (columns=)"  # the row ids always come
    raise InvalidArgument(
        f"column {name!r}: {v.dtype} value {bad} does not fit JAX's {to}, which it would wrap "
        f"(jax_enable_x64 is off): enable it before loading (jax.config.update(\"jax_enable_x64\", True)){out}"
    )


def _gpu(device: jax.Device | None, sharding: jax.sharding.Sharding | None) -> int | None:
    """The CUDA ordinal of the GPU that arrays go to (the device's, the
    sharding's first, or JAX's default device's), or None when it is not
    a GPU: where ``decode="gpu"`` decodes."""
    if device is None and sharding is not None:
        device = sorted(sharding.device_set, key=lambda d: d.id)[0]
    if device is None:
        device = jax.devices()[0]
    if device.platform != "gpu":
        return None
    return int(getattr(device, "local_hardware_id", None) or device.id)


def _from_torch(v: Any) -> Any:
    """A torch tensor (a column that ``decode="gpu"`` decoded) as a jax
    array through DLPack, on its device, without a copy; an int64 one
    (sample shapes) as a numpy array, for :func:`_fits`."""
    if str(v.dtype) == "torch.int64":
        return v.cpu().numpy()
    return jax.dlpack.from_dlpack(v)


class JaxLoader(Adapter):
    """One :class:`loch.Loader` (:attr:`loader`, see
    :class:`loch.adapter.Adapter`) whose batches hold jax arrays (lists of
    text, json or bytes samples stay lists).

    Without ``jax_enable_x64``, JAX holds 64-bit integers in 32 bits: the
    row ids under ``"index"`` and int64 columns arrive as int32 (uint64 as
    uint32), exact while they fit. A batch holding a value that does not
    fit raises :class:`loch.InvalidArgument` naming the column, rather than
    arriving wrapped.

    Arguments are those of :class:`loch.Loader` and:
        sharding: place each array on this sharding (its leading axis is the
            batch), or None for the default device.
        device: place each array on this device (when no sharding): a
            ``jax.Device``, or a platform name with an optional index
            (``"cpu"``, ``"gpu"``, ``"cuda:1"``, ``"tpu"``) that
            ``jax.devices(platform)`` has; checked here.
        distributed: None or True reads the rank and world size from
            JAX's processes; False is one process; or (rank, world_size)
            (a tuple or a list).
        decode: ``"cpu"`` (the default: the Go loader decodes), ``"gpu"``
            or ``"auto"``, as :class:`loch.torch.TorchLoader`'s: with
            ``"gpu"`` the JPEG columns are decoded and transformed by torch
            (torchvision, nvJPEG on the GPU of ``device``, or of JAX's
            default backend when it is a GPU; else the CPU) and handed to
            JAX through DLPack, without a copy. Needs torch and
            torchvision.
    """

    def __init__(
        self,
        dataset: Source,
        *,
        sharding: jax.sharding.Sharding | None = None,
        device: jax.Device | str | None = None,
        distributed: bool | Sequence[int] | None = None,
        decode: str = "cpu",
        **options: Unpack[CommonLoaderOptions],
    ) -> None:
        if "rank" in options or "world_size" in options:
            raise InvalidArgument("JaxLoader takes distributed=(rank, world_size), not rank= or world_size=")
        distributed = distributed_option(distributed)
        device = _device(device)
        if isinstance(distributed, tuple):
            rank, world = distributed
        elif distributed is False:
            rank, world = 0, 1
        else:
            rank, world = jax.process_index(), jax.process_count()
        settings = LoaderSettings(**options, rank=rank, world_size=world)
        gpu = _gpu(device, sharding)
        plan = plan_decode(decode, dataset.schema, settings, gpu is not None)
        self.decoder: Any = None  # a loch._gpu_transform.BatchDecoder with decode="gpu"
        if plan is not None:
            settings = plan.settings
            from ._gpu_transform import BatchDecoder  # imports torch and torchvision

            self.decoder = BatchDecoder(
                plan.specs, plan.channels, "cpu" if gpu is None else f"cuda:{gpu}", seed=settings.seed,
                skip_bad=settings.skip_bad_samples, ragged=plan.ragged,
            )  # fmt: skip
        super().__init__(Loader.from_settings(dataset, settings))
        self.sharding = sharding
        self.device = device
        self._global = sharding is not None and world > 1

    def __iter__(self) -> Iterator[Batch]:
        """The next epoch, as batches of jax arrays; with ``decode="gpu"``
        the JPEG columns decoded by :attr:`decoder` first."""
        if self.decoder is None:
            return super().__iter__()
        return self._decoded(self.decoder, self.loader.epoch)

    def _decoded(self, decoder: Any, epoch: int) -> Iterator[Batch]:
        batches = self.loader.batches(lambda b: decoder(b, epoch))
        decoder.skipped = []
        try:
            for b in batches:
                if b is not None:  # None: every row was skipped
                    yield self.convert(b)
        finally:
            batches.close()

    def _place(self, name: str, v: Any) -> Any:
        if not isinstance(v, np.ndarray):
            if not hasattr(v, "__dlpack__"):
                return v
            v = _from_torch(v)  # a column decoded by torch
            if not isinstance(v, np.ndarray):
                return self._put(v)
        _fits(name, v)
        return self._put(v)

    def _put(self, v: Any) -> Any:
        """A numpy or jax array placed on the sharding or the device."""
        if self._global:
            return jax.make_array_from_process_local_data(self.sharding, v)
        if self.sharding is not None:
            return jax.device_put(v, self.sharding)
        return jax.device_put(v, self.device)

    def stats(self) -> dict[str, Any]:
        """The loader's statistics (see :meth:`loch.Loader.stats`), with
        the rows that ``decode="gpu"`` skipped among ``skipped``."""
        stats = self.loader.stats()
        return stats if self.decoder is None else self.decoder.with_skipped(stats)

    def convert(self, batch: Batch) -> Batch:
        """The batch's arrays placed on the sharding or device."""
        return {k: self._place(k, v) for k, v in batch.items()}
