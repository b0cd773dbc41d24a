"""Batches on their way to an accelerator: the ring of page-locked host
buffers that the Go loader's workers fill and a device copies from.

The rule (``ds.pytorch(device="cuda")``):

1. The Go loader allocates its batches' buffers from a pool of page-locked
   (pinned) host memory, :class:`PinnedPool` (C ABI 26,
   ``loch_pinned_pool_new``), so its workers decode and collate straight
   into memory that the device's copy engine reads: no copy on the Python
   thread. The pool's memory comes from ``cudaHostAlloc`` (portable, on the
   loader's device), found in the CUDA runtime that torch loaded.
2. Each batch's tensors are copied to the device on a side stream
   (``non_blocking``), and an event is recorded after the copies; the
   consumer's stream waits for that event before it uses the batch, and the
   device tensors are marked in use by the consumer's stream
   (``record_stream``). While the consumer works on batch i, the copy of
   batch i+1 is in flight and the Go workers fill the batches after it.
3. A batch's host buffers are kept (the tensors over them referenced by
   the ring) until its copy's event has completed; only then are they
   dropped, which hands the buffers back to Go for reuse. A buffer is never
   back in Go's hands, nor refilled, while a copy may still read it.
4. At most ``depth`` batches' copies are outstanding: a new one waits for
   the oldest to complete (the Python loop otherwise runs ahead of the
   device, holding ever more memory).
5. Pinned bytes are bounded: the pool holds at most :func:`pinned_limit`
   bytes, in use and kept for reuse, i.e. the loader's ``prefetch_bytes``
   (the batches it prepares ahead, plus a quarter for those streamed to
   Python), the buffers freed and not yet handed back to Go (at most
   ``FREED_BYTES``), and ``depth + 2`` of the largest batch seen (the ring,
   the batch the consumer holds and the one being taken). A buffer that
   does not fit comes from ordinary memory; tensors in ordinary memory (the
   row ids, a buffer over the limit, every tensor where no pool could be
   made) are copied through reused page-locked staging buffers
   (:class:`Staging`) first, the path before ABI 26.

Why a pool the loader allocates from, not ``cudaHostRegister`` of Go's
buffers: registration pins whole pages, and Go's size-class buffers from
``aligned_alloc`` share pages with their neighbours (overlapping
registrations fail); Go frees pooled buffers with ``free`` when its pool is
over its limit or trimmed, which would leave stale registrations; and the
first fill of every buffer would be into unregistered memory, registered
after the fact at a cost of a system call per buffer. The pool's memory is
page-locked from the start, never freed while the pool is open, and
counted against its own limit.

The device operations are behind :class:`DeviceOps` (pin, copy, events,
the consumer's wait), so that the ring runs against a fake device in the
tests (host memory, a thread doing the copy, :class:`threading.Event`
events) as it does against CUDA.
"""

from __future__ import annotations

import collections
import ctypes
import os
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch

from . import _library
from .errors import Error

__all__ = ["CudaOps", "DeviceCopyError", "DeviceOps", "DeviceRing", "HostAllocator", "PinnedPool", "pinned_limit"]


class DeviceCopyError(Error, RuntimeError):
    """A batch's copy to the device failed (raised where the batch would
    have been delivered, naming the device and the batch's columns)."""


class Event(Protocol):
    """The completion of the copies issued before it (``torch.cuda.Event``)."""

    def query(self) -> bool:
        """Whether it has completed (without waiting)."""
        ...

    def synchronize(self) -> None:
        """Waits until it has completed; raises the copy's error if any."""
        ...


@dataclass(frozen=True)
class HostAllocator:
    """A page-locked host allocator for :class:`PinnedPool`: the addresses
    of C functions of loch.h's ``loch_host_alloc_fn``, ``loch_host_free_fn``
    and ``loch_host_select_fn`` (0: none) types, the device selected before
    each call, the flags passed to alloc, and ``keep``: objects that must
    live as long as the functions are called (ctypes callbacks)."""

    alloc: int
    free: int
    select: int
    device: int
    flags: int
    keep: Any = None


class DeviceOps(Protocol):
    """The device operations the ring uses; :class:`CudaOps` is CUDA's."""

    #: The device, for messages ("cuda:0").
    name: str

    def host_allocator(self) -> HostAllocator | None:
        """The allocator of page-locked memory for the loader's batches, or
        None where there is none (every tensor then goes through staging)."""
        ...

    def is_pinned(self, t: torch.Tensor) -> bool:
        """Whether the host tensor is in page-locked memory."""
        ...

    def empty_pinned(self, nbytes: int) -> torch.Tensor:
        """A page-locked uint8 host tensor of nbytes (a staging buffer)."""
        ...

    def copy(self, host: Sequence[torch.Tensor]) -> tuple[list[torch.Tensor], Event]:
        """Starts copying the host tensors to the device (on a side stream,
        not waiting) and returns the device tensors and an event that
        completes when every copy has."""
        ...

    def deliver(self, tensors: Sequence[torch.Tensor], event: Event) -> None:
        """Makes the consumer's work on the device tensors wait for event."""
        ...


# CUDA runtime constants (cuda_runtime_api.h).
CUDA_HOST_ALLOC_PORTABLE = 1


def _cudart() -> ctypes.CDLL | None:
    """The CUDA runtime torch loaded (found in this process's mappings), or
    one by its usual names; None where there is none."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "libcudart" in line}
    except OSError:
        paths = set()
    for name in sorted(paths) + ["libcudart.so.13", "libcudart.so.12", "libcudart.so"]:
        if "libcudart" not in os.path.basename(name):
            continue
        try:
            lib = ctypes.CDLL(name)
            lib.cudaHostAlloc, lib.cudaFreeHost, lib.cudaSetDevice  # noqa: B018 (present)
        except (OSError, AttributeError):
            continue
        return lib
    return None


class CudaOps:
    """:class:`DeviceOps` of a CUDA device: copies on a side stream of it."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.index = device.index if device.index is not None else torch.cuda.current_device()
        self.name = f"cuda:{self.index}"
        self.stream = torch.cuda.Stream(self.index)

    def host_allocator(self) -> HostAllocator | None:
        torch.cuda.init()
        lib = _cudart()
        if lib is None:
            return None
        addr = ctypes.cast
        return HostAllocator(
            alloc=addr(lib.cudaHostAlloc, ctypes.c_void_p).value or 0,
            free=addr(lib.cudaFreeHost, ctypes.c_void_p).value or 0,
            select=addr(lib.cudaSetDevice, ctypes.c_void_p).value or 0,
            device=self.index,
            flags=CUDA_HOST_ALLOC_PORTABLE,
            keep=lib,
        )

    def is_pinned(self, t: torch.Tensor) -> bool:
        return bool(t.is_pinned())

    def empty_pinned(self, nbytes: int) -> torch.Tensor:
        return torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)

    def copy(self, host: Sequence[torch.Tensor]) -> tuple[list[torch.Tensor], Event]:
        with torch.cuda.stream(self.stream):
            out = [h.to(self.device, non_blocking=True) for h in host]
            event = torch.cuda.Event()
            event.record(self.stream)
        return out, event

    def deliver(self, tensors: Sequence[torch.Tensor], event: Event) -> None:
        stream = torch.cuda.current_stream(self.device)
        stream.wait_event(event)  # type: ignore[arg-type]
        for v in tensors:
            v.record_stream(stream)  # its memory is in use by the consumer's stream now


def pinned_limit(prefetch_bytes: int, depth: int, batch_bytes: int) -> int:
    """The most page-locked bytes a loader's pool holds (see the module
    documentation, rule 5): ``prefetch_bytes`` and a quarter, the freed
    buffers not yet handed back to Go, and ``depth + 2`` batches of
    ``batch_bytes`` (each tensor rounded up by Go's size classes: at most
    an eighth, and a page)."""
    per_batch = batch_bytes + batch_bytes // 8
    return prefetch_bytes + prefetch_bytes // 4 + _library.FREED_BYTES + (depth + 2) * per_batch


class PinnedPool:
    """A Go pool of page-locked batch buffers (``loch_pinned_pool_new``),
    closed when collected or by :meth:`close`. Give :attr:`handle` to a
    loader as ``pinned_pool``; its batches' buffers then come from the pool
    while it has room (``limit`` bytes)."""

    def __init__(self, allocator: HostAllocator, limit: int) -> None:
        self._lib = _library.library()
        # Its functions must outlive the pool and every buffer of it: Go
        # frees buffers in use after a close as they come back.
        if allocator not in _ALLOCATORS:
            _ALLOCATORS.append(allocator)
        h = _library.c_uintptr()
        self._lib.call("loch_pinned_pool_new", allocator.alloc, allocator.free, allocator.select or None,
                       allocator.device, allocator.flags, int(limit), ctypes.byref(h))  # fmt: skip
        self.handle = int(h.value)
        self._close = weakref.finalize(self, _close_pool, self._lib, self.handle)

    @property
    def limit(self) -> int:
        """The pool's limit in bytes."""
        return self.stats()["limit"]

    def set_limit(self, limit: int) -> None:
        """Sets the limit (kept buffers beyond it are freed now)."""
        self._lib.call("loch_pinned_pool_set_limit", self.handle, int(limit))

    def stats(self) -> dict[str, int]:
        """``{"live", "kept", "limit", "peak", "fallbacks", "failures"}``:
        bytes in buffers in use and kept for reuse, the limit, the most
        bytes held at once, buffers that came from ordinary memory instead
        (over the limit or refused) and the allocator's refusals."""
        out = (ctypes.c_int64 * 6)()
        self._lib.flush_buffers()
        self._lib.call("loch_pinned_pool_stats", self.handle, out)
        return dict(zip(("live", "kept", "limit", "peak", "fallbacks", "failures"), out))

    def close(self) -> None:
        """Frees the kept buffers; those in use go back to the allocator as
        they are freed (loaders that have the pool keep working, from
        ordinary memory)."""
        self._close()


# The allocators pools were made with (few: one a loader of a device).
_ALLOCATORS: list[HostAllocator] = []


def _close_pool(lib: _library.Library, handle: int) -> None:
    if lib.usable:
        lib.flush_buffers()
        lib.call("loch_pinned_pool_close", handle)


class Staging:
    """Page-locked host buffers that tensors in ordinary memory are copied
    through on their way to the device, reused rather than allocated per
    batch: at most ``depth`` of them, each reused once the copy that read it
    (its event) has completed. The copy into them is numpy's, on the
    calling thread: ``Tensor.pin_memory()`` or ``copy_`` per batch ran
    torch's intra-op threads, which took the cores from the Go loader
    (bench/history/2026-11-26-issue-17.md)."""

    ALIGN = 64

    def __init__(self, ops: DeviceOps, depth: int = 4) -> None:
        self.ops = ops
        self.depth = depth
        self.bufs: list[tuple[torch.Tensor, Event]] = []  # (uint8 buffer, event of its last copy)
        self.taken: torch.Tensor | None = None

    def stage(self, tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """Page-locked copies of tensors, in one buffer, valid until the copy
        from them is done (see :meth:`release`)."""
        sizes = [v.numel() * v.element_size() for v in tensors]
        spans = [-(-n // self.ALIGN) * self.ALIGN for n in sizes]  # each tensor's place, aligned
        buf = self._take(sum(spans))
        out, off = [], 0
        for v, n, span in zip(tensors, sizes, spans):
            if n:
                # numpy's copy, a memcpy on this thread: torch's copy_ runs
                # on its intra-op threads, whose spinning took the cores
                # from the Go loader's decoders.
                np.copyto(buf[off : off + n].numpy(), v.contiguous().reshape(-1).view(torch.uint8).numpy())
            out.append(buf[off : off + n].view(v.dtype).view(v.shape))
            off += span
        self.taken = buf
        return out

    def release(self, event: Event) -> None:
        """The buffer of the last :meth:`stage` is free once event (recorded
        after the copies from it) has completed."""
        if self.taken is not None:
            self.bufs.append((self.taken, event))
            self.taken = None

    def _take(self, nbytes: int) -> torch.Tensor:
        for i, (buf, event) in enumerate(self.bufs):
            if buf.numel() >= nbytes and event.query():
                return self.bufs.pop(i)[0]
        if len(self.bufs) >= self.depth:  # wait for the oldest copy: reuse its buffer if large enough
            buf, event = self.bufs.pop(0)
            event.synchronize()
            if buf.numel() >= nbytes:
                return buf
        return self.ops.empty_pinned(1 << max(nbytes - 1, 0).bit_length())


class DeviceRing:
    """Sends batches to a device by the rule of the module documentation:
    :meth:`send` starts a batch's copies and keeps its host tensors until
    their event completes (at most ``depth`` batches outstanding),
    :meth:`receive` makes the consumer wait for them, :meth:`close` waits
    for every copy and lets go of the host memory. With ``pool`` (the
    loader's :class:`PinnedPool`), its limit follows the largest batch
    (:func:`pinned_limit` of ``prefetch_bytes``)."""

    #: The default depth: batches whose copies may be outstanding.
    DEPTH = 4

    def __init__(self, ops: DeviceOps, depth: int = DEPTH, pool: PinnedPool | None = None,
                 prefetch_bytes: int = 0) -> None:  # fmt: skip
        if depth < 1:
            raise ValueError(f"DeviceRing depth {depth}: want >= 1")
        self.ops = ops
        self.depth = depth
        self.pool = pool
        self.prefetch_bytes = prefetch_bytes
        self.staging = Staging(ops, depth)
        #: The batches whose copies may be outstanding: (event, host
        #: tensors kept for it, the batch's description for messages).
        self.inflight: collections.deque[tuple[Event, list[torch.Tensor], str]] = collections.deque()
        self.batch_bytes = 0  # the largest batch so far
        self.sent = 0

    def send(self, batch: dict[str, Any]) -> tuple[dict[str, Any], Event]:
        """Starts copying the batch's tensors to the device; returns the
        batch with device tensors in their place (to be used only after
        :meth:`receive`) and the copies' event."""
        self._retire(self.depth - 1)
        keys = [k for k, v in batch.items() if isinstance(v, torch.Tensor)]
        what = f"batch {self.sent} ({', '.join(keys)}) to {self.ops.name}"
        tensors = [batch[k] for k in keys]
        pinned = [self.ops.is_pinned(v) for v in tensors]
        staged = self.staging.stage([v for v, p in zip(tensors, pinned) if not p])
        it = iter(staged)
        host = [v if p else next(it) for v, p in zip(tensors, pinned)]
        try:
            moved, event = self.ops.copy(host)
        except Exception as e:
            self.staging.taken = None  # its copy may have started: never reuse it
            raise DeviceCopyError(f"loch: copying {what} failed: {e}") from e
        self.staging.release(event)
        self.inflight.append((event, [v for v, p in zip(tensors, pinned) if p], what))
        self.sent += 1
        self._track(sum(v.numel() * v.element_size() for v in tensors))
        out = dict(batch)
        out.update(zip(keys, moved))
        return out, event

    def receive(self, sent: tuple[dict[str, Any], Event]) -> dict[str, Any]:
        """The batch of :meth:`send`, for the consumer: its stream waits
        for the copies."""
        batch, event = sent
        try:
            self.ops.deliver([v for v in batch.values() if isinstance(v, torch.Tensor)], event)
        except Exception as e:
            what = next((f[2] for f in self.inflight if f[0] is event), f"a batch to {self.ops.name}")
            raise DeviceCopyError(f"loch: copying {what} failed: {e}") from e
        return batch

    def close(self) -> None:
        """Waits for every outstanding copy and lets go of the host memory
        (back to Go); raises the first copy's error, after letting go of
        all."""
        try:
            self._retire(0)
        finally:
            self.inflight.clear()
            self.staging.bufs.clear()

    def _retire(self, keep: int) -> None:
        """Lets go of the host tensors of completed copies, and waits for
        the oldest until at most ``keep`` are outstanding."""
        while self.inflight and (len(self.inflight) > keep or self.inflight[0][0].query()):
            event, what = self.inflight[0][0], self.inflight[0][2]  # not the host tensors: a traceback keeps locals
            try:
                event.synchronize()
            except Exception as e:
                self.inflight.popleft()
                raise DeviceCopyError(f"loch: copying {what} failed: {e}") from e
            self.inflight.popleft()  # its host tensors, and so its buffers, go back to Go now

    def _track(self, nbytes: int) -> None:
        """Raises the pool's limit to :func:`pinned_limit` when a batch is
        the largest so far."""
        if nbytes > self.batch_bytes:
            self.batch_bytes = nbytes
            if self.pool is not None:
                self.pool.set_limit(pinned_limit(self.prefetch_bytes, self.depth, nbytes))
