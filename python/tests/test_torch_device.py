"""The device path of ds.pytorch(device="cuda") (loch._device) on a fake
device: host memory as the device, page-locked memory from a Python
allocator handed to the Go loader (C ABI 26's pinned pool), a thread
doing each copy from the raw host address some time later, events as
threading.Event. The ring must keep every host buffer out of Go's hands
until its copy has completed, deliver the batches in order and intact,
bound the page-locked memory, release everything on break and close, keep
state_dict right and report copy errors clearly. python/gpu_tests runs the
same against CUDA."""

from __future__ import annotations

import ctypes
import queue
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import loch  # noqa: E402
from loch import _device, _library  # noqa: E402
from loch._device import DeviceCopyError, DeviceRing, HostAllocator, pinned_limit  # noqa: E402
from loch.torch import TorchLoader  # noqa: E402
from conftest import resume_run  # noqa: E402

ALLOC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_uint)
FREE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
_libc = ctypes.CDLL(None)
_libc.posix_memalign.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_size_t]
_libc.free.argtypes = [ctypes.c_void_p]


class FakeEvent:
    """A copy's completion: set by the copy thread, with its error if any."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None

    def query(self) -> bool:
        return self.done.is_set()

    def synchronize(self) -> None:
        self.done.wait()
        if self.error is not None:
            raise self.error


class FakeDevice:
    """loch._device.DeviceOps over host memory. Page-locked memory is
    posix_memalign's, handed to Go through ctypes callbacks and tracked;
    copies run in order on one thread (a stream) after ``delay`` seconds,
    reading the host memory by address (holding no reference, as a DMA
    engine does not); ``fail_at`` makes that copy fail. It records every
    buffer freed to loch while a copy still reads it (``violations``) and
    the most copies outstanding at once."""

    name = "fake:0"

    def __init__(self, delay: float = 0.001, fail_at: int | None = None, refuse: bool = False) -> None:
        self.delay, self.fail_at, self.refuse = delay, fail_at, refuse
        self.lock = threading.Lock()
        self.blocks: dict[int, int] = {}  # page-locked address -> bytes
        self.reading: dict[int, tuple[int, int]] = {}  # copy id -> host range it reads
        self.violations: list[int] = []
        self.outstanding = self.most_outstanding = self.copies = 0
        self.allocs = self.frees = 0
        self._alloc, self._free = ALLOC(self._alloc_py), FREE(self._free_py)
        self.queue: queue.Queue[Any] = queue.Queue()
        threading.Thread(target=self._run, daemon=True).start()

    def _alloc_py(self, ptr: Any, n: int, flags: int) -> int:
        if self.refuse:
            return 2  # as cudaErrorMemoryAllocation
        if _libc.posix_memalign(ptr, 64, n) != 0:
            return 2
        with self.lock:
            self.blocks[ptr[0]] = n
            self.allocs += 1
        return 0

    def _free_py(self, ptr: int) -> int:
        with self.lock:
            self.blocks.pop(ptr)
            self.frees += 1
        _libc.free(ptr)
        return 0

    def host_allocator(self) -> HostAllocator:
        addr = ctypes.cast
        return HostAllocator(alloc=addr(self._alloc, ctypes.c_void_p).value or 0,
                             free=addr(self._free, ctypes.c_void_p).value or 0,
                             select=0, device=0, flags=0, keep=self)  # fmt: skip

    def is_pinned(self, t: torch.Tensor) -> bool:
        a = t.data_ptr()
        with self.lock:
            return any(p <= a < p + n for p, n in self.blocks.items())

    def empty_pinned(self, nbytes: int) -> torch.Tensor:
        return torch.empty(nbytes, dtype=torch.uint8)

    def copy(self, host: Sequence[torch.Tensor]) -> tuple[list[torch.Tensor], FakeEvent]:
        out = [torch.empty_like(h) for h in host]
        srcs = [(h.data_ptr(), h.numel() * h.element_size()) for h in host]
        event = FakeEvent()
        with self.lock:
            n = self.copies
            self.copies += 1
            for i, (a, size) in enumerate(srcs):
                self.reading[n * 1000 + i] = (a, a + size)
            self.outstanding += 1
            self.most_outstanding = max(self.most_outstanding, self.outstanding)
        self.queue.put((n, srcs, [(o.data_ptr(), o) for o in out], event))
        return out, event

    def _run(self) -> None:
        while True:
            n, srcs, dsts, event = self.queue.get()
            time.sleep(self.delay)
            if n == self.fail_at:
                event.error = RuntimeError("fake device: the copy engine faulted")
            else:
                for (src, size), (dst, _) in zip(srcs, dsts):
                    ctypes.memmove(dst, src, size)
            with self.lock:
                for i in range(len(srcs)):
                    self.reading.pop(n * 1000 + i)
                self.outstanding -= 1
            event.done.set()

    def deliver(self, tensors: Sequence[torch.Tensor], event: FakeEvent) -> None:
        event.synchronize()  # the consumer's "stream" waits

    def freed(self, ptr: int) -> None:
        """Called for each buffer given back to loch: it must not be read by
        a copy in flight."""
        with self.lock:
            if any(a <= ptr < b for a, b in self.reading.values()):
                self.violations.append(ptr)


@pytest.fixture
def images(tmp_path: Path) -> loch.Dataset:
    """400 rows of 32x32x3 uint8 images and a label, in several chunks."""
    ds = loch.create(str(tmp_path / "img"), schema={
        "img": loch.Tensor("uint8", shape=(32, 32, 3), chunk_bytes=64 << 10),
        "label": loch.Tensor("int64", shape=()),
        "s": loch.Text(),
    })  # fmt: skip
    rng = np.random.default_rng(7)
    n = 400
    ds.extend({"img": rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8), "label": np.arange(n),
               "s": [f"row {i}" for i in range(n)]})  # fmt: skip
    ds.commit("images")
    yield ds
    ds.close()


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[FakeDevice]]:
    """Every buffer freed to loch is shown to the fake devices in the list
    (before loaders are made: they capture the free function)."""
    lib = _library.library()
    devices: list[FakeDevice] = []
    free = lib.free_buffer

    def checked(ptr: int, nbytes: int) -> None:
        for d in devices:
            d.freed(ptr)
        free(ptr, nbytes)

    monkeypatch.setattr(lib, "free_buffer", checked)
    yield devices


def on(loader: TorchLoader, fake: FakeDevice) -> TorchLoader:
    """The loader moving its batches to the fake device (as device="cuda"
    does to CUDA)."""
    loader._ops = fake
    return loader


def plain(batch: dict[str, Any]) -> dict[str, Any]:
    return {k: v.numpy().copy() if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def same(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.keys() == w.keys(), i
        for k in w:
            if isinstance(w[k], np.ndarray):
                np.testing.assert_array_equal(g[k], w[k], err_msg=f"batch {i} column {k}")
            else:
                assert g[k] == w[k], (i, k)


def test_batches_arrive_in_order_intact_and_buffers_wait_for_their_copy(images: loch.Dataset,
                                                                        watched: list[FakeDevice]) -> None:  # fmt: skip
    want = [plain(b) for b in images.pytorch(batch_size=48, shuffle=True, seed=3)]
    fake = FakeDevice(delay=0.002)
    watched.append(fake)
    loader = on(images.pytorch(batch_size=48, shuffle=True, seed=3), fake)
    got = []
    for b in loader:
        assert all(not fake.is_pinned(v) for v in b.values() if isinstance(v, torch.Tensor)), "device tensors"
        got.append(plain(b))
    same(got, want)
    assert fake.violations == [], "a buffer went back to Go while its copy read it"
    stats = loader.pinned_stats()
    assert stats is not None and stats["fallbacks"] == 0 and stats["peak"] > 0, stats
    assert fake.most_outstanding <= DeviceRing.DEPTH


def test_the_check_catches_a_ring_that_lets_go_early(images: loch.Dataset, watched: list[FakeDevice],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The control of the test above: a ring that drops its host tensors
    at once is caught handing buffers back during their copies."""
    monkeypatch.setattr(DeviceRing, "_retire", lambda self, keep: self.inflight.clear())
    fake = FakeDevice(delay=0.05)
    watched.append(fake)
    for _ in on(images.pytorch(batch_size=48), fake):
        pass
    assert fake.violations, "no buffer was freed during its copy"


def test_pinned_memory_is_bounded_and_released(images: loch.Dataset, watched: list[FakeDevice]) -> None:
    """A pool limit too small for every batch sends the rest through the
    staging copy, intact; break and close give every buffer back."""
    want = [plain(b) for b in images.pytorch(batch_size=40)]
    before = loch.buffer_stats()["live"]
    fake = FakeDevice(delay=0.002)
    watched.append(fake)
    loader = on(images.pytorch(batch_size=40, prefetch_bytes=1 << 20, prefetch_batches=4), fake)
    got = [plain(b) for b in loader]
    same(got, want)
    stats = loader.pinned_stats()
    assert stats is not None
    batch_bytes = 40 * (32 * 32 * 3 + 8 + 8)
    assert stats["limit"] == pinned_limit(1 << 20, DeviceRing.DEPTH, batch_bytes)
    assert 0 < stats["peak"] <= stats["limit"]
    assert stats["live"] == 0, "every page-locked buffer is back in the pool"
    assert loch.buffer_stats()["live"] == before
    # Break off mid-epoch: the ring waits for its copies and lets go.
    it = iter(loader)
    for _ in range(3):
        next(it)
    del it
    assert loader.pinned_stats()["live"] == 0  # type: ignore[index]
    assert loch.buffer_stats()["live"] == before
    assert fake.violations == []
    loader._pool.close()  # type: ignore[union-attr]
    assert fake.frees == fake.allocs and not fake.blocks, "closing the pool frees every buffer"


def test_a_limit_lower_than_a_batch_falls_back_to_staging(images: loch.Dataset, watched: list[FakeDevice],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    for module in (_device, loch.torch):
        monkeypatch.setattr(module, "pinned_limit", lambda prefetch, depth, batch: 4096)
    want = [plain(b) for b in images.pytorch(batch_size=40)]
    fake = FakeDevice()
    watched.append(fake)
    loader = on(images.pytorch(batch_size=40), fake)
    same([plain(b) for b in loader], want)
    stats = loader.pinned_stats()
    assert stats is not None and stats["fallbacks"] > 0 and stats["peak"] <= 4096, stats
    assert fake.violations == []


def test_an_allocator_that_refuses_falls_back_to_staging(images: loch.Dataset) -> None:
    want = [plain(b) for b in images.pytorch(batch_size=64)]
    fake = FakeDevice(refuse=True)
    loader = on(images.pytorch(batch_size=64), fake)
    same([plain(b) for b in loader], want)
    stats = loader.pinned_stats()
    assert stats is not None and stats["failures"] > 0 and stats["peak"] == 0, stats


def test_a_failed_copy_is_a_clear_error_and_releases_everything(images: loch.Dataset) -> None:
    before = loch.buffer_stats()["live"]
    loader = on(images.pytorch(batch_size=32, columns=["img", "label"]), FakeDevice(fail_at=3))
    got = 0
    with pytest.raises(DeviceCopyError, match=r"copying batch 3 \(img, label, index\) to fake:0 failed: "
                                              r"fake device: the copy engine faulted"):  # fmt: skip
        for _ in loader:
            got += 1
    assert got == 3
    assert isinstance(DeviceCopyError("x"), loch.Error)
    assert loader.pinned_stats()["live"] == 0  # type: ignore[index]
    assert loch.buffer_stats()["live"] == before


@pytest.mark.parametrize("when", ["while iterating", "after a break", "holding the last batch"])
def test_resume_on_the_device_path(images: loch.Dataset, when: str) -> None:
    """The ring runs a batch ahead; state_dict is the state after the
    batches the loop got (as test_torch's test on the CPU stand-in)."""

    def make() -> TorchLoader:
        return on(images.pytorch(batch_size=25, shuffle=True, seed=11), FakeDevice())

    whole, taken, _, _ = resume_run(make, 5 if when != "holding the last batch" else None, when)
    assert taken == whole


def test_epochs_reuse_the_pool(images: loch.Dataset) -> None:
    fake = FakeDevice()
    loader = on(images.pytorch(batch_size=50, columns=["img"]), fake)
    for _ in range(3):
        assert sum(len(b["index"]) for b in loader) == 400
    assert fake.copies == 24
    assert fake.allocs < 12, "buffers are reused across batches and epochs, not allocated for each"


def test_pinned_limit_rule() -> None:
    mib = 1 << 20
    assert pinned_limit(256 * mib, 4, 0) == 320 * mib + _library.FREED_BYTES
    assert pinned_limit(256 * mib, 4, 8 * mib) == 320 * mib + _library.FREED_BYTES + 6 * 9 * mib
