"""ds.pytorch() on a GPU: ``device="cuda"`` (the Go loader's workers fill
page-locked buffers of a pinned pool, then a non_blocking copy on a side
stream one batch ahead, the consumer's stream recorded on each tensor, the
host buffers kept until the copy's event completed: loch._device), ``pin_memory=True``, device validation, epochs
and resume, and a DataLoader with workers and ``pin_memory``. Every batch
is checked against the CPU loader's batch of the same seed and against
the values its row ids imply (conftest.expected)."""

from __future__ import annotations

import gc
import json
import re
import shutil
import subprocess
import warnings
from typing import Any

import numpy as np
import pytest
import torch
import torch.utils.data
from conftest import BATCH, DRY_RUN, ROWS, expected, needs_cuda

import loch

ARRAYS = ("x", "img", "y", "h", "index")
LISTS = ("s", "j")
DTYPES = {"x": torch.float32, "img": torch.uint8, "y": torch.int64, "h": torch.bfloat16, "index": torch.int64}


def check_values(b: dict[str, Any], device: torch.device) -> None:
    """Asserts that batch b is on device with the values its row ids imply."""
    assert sorted(b) == sorted(ARRAYS + LISTS), f"keys {sorted(b)}"
    for k in ARRAYS:
        v = b[k]
        assert isinstance(v, torch.Tensor), f"{k}: {type(v)}"
        assert v.device == device, f"{k} is on {v.device}, want {device}"
        assert v.dtype == DTYPES[k], f"{k}: {v.dtype}"
    want = expected(b["index"].cpu().numpy())
    assert torch.equal(b["x"].cpu(), torch.from_numpy(want["x"]))
    assert torch.equal(b["img"].cpu(), torch.from_numpy(want["img"]))
    assert torch.equal(b["y"].cpu(), torch.from_numpy(want["y"]))
    assert torch.equal(b["h"].float().cpu(), torch.from_numpy(want["h"]))
    for k in LISTS:
        assert isinstance(b[k], list), f"{k} should stay a list, is {type(b[k])}"
        assert b[k] == want[k]


def check_same(got: dict[str, Any], want: dict[str, Any], device: torch.device) -> None:
    """Asserts that got (from a device loader) is want (the CPU loader's
    batch) moved to device."""
    assert sorted(got) == sorted(want)
    for k, w in want.items():
        g = got[k]
        if isinstance(w, torch.Tensor):
            assert isinstance(g, torch.Tensor) and g.device == device, f"{k}: {type(g)} {getattr(g, 'device', '')}"
            assert g.dtype == w.dtype and g.shape == w.shape, f"{k}: {g.dtype} {g.shape}, want {w.dtype} {w.shape}"
            assert torch.equal(g.cpu(), w), f"{k} differs from the CPU loader's"
        else:
            assert isinstance(g, list) and g == w, f"{k}: {type(g)}"


def order(batches: list[dict[str, Any]]) -> list[list[int]]:
    return [b["index"].tolist() for b in batches]


def test_device_batches_equal_the_cpu_loaders(ds: loch.Dataset, device: torch.device) -> None:
    """Every dtype, the row ids ("index": a tensor on the device like the
    rest) and the lists of text and json, shuffled: the CPU loader's
    batches, on the device."""
    cpu = list(ds.pytorch(batch_size=BATCH, shuffle=True, seed=3))
    got = list(ds.pytorch(batch_size=BATCH, shuffle=True, seed=3, device=device.type))
    assert len(got) == len(cpu) == -(-ROWS // BATCH)
    for g, c in zip(got, cpu):
        check_same(g, c, device)
        check_values(g, device)
    assert sorted(i for b in got for i in b["index"].tolist()) == list(range(ROWS))


@pytest.mark.parametrize("form", ["string", "torch.device"])
def test_device_with_an_index(ds: loch.Dataset, device: torch.device, form: str) -> None:
    dev: Any = f"{device.type}:0" if form == "string" else torch.device(device.type, 0)
    want = torch.device("cuda", 0) if device.type == "cuda" else device
    n = 0
    for b in ds.pytorch(batch_size=100, columns=["x", "s"], device=dev):
        assert b["x"].device == want and b["index"].device == want
        assert b["s"] == [f"row {i}" for i in b["index"].tolist()]
        n += len(b["s"])
    assert n == ROWS


def test_a_device_index_past_the_count_is_a_clear_error(ds: loch.Dataset, device: torch.device) -> None:
    needs_cuda()
    count = torch.cuda.device_count()
    for dev in ("cuda:99", f"cuda:{count}", torch.device("cuda", count)):
        with pytest.raises(loch.InvalidArgument, match=rf"^device={re.escape(repr(dev))}: there are {count} CUDA devices$"):
            ds.pytorch(batch_size=8, device=dev)  # type: ignore[arg-type]
    last = f"cuda:{count - 1}"  # the last one there is works
    (b,) = list(ds.pytorch(batch_size=ROWS, columns=["y"], device=last))
    assert b["y"].device == torch.device(last)


def test_pin_memory_without_a_device(ds: loch.Dataset, device: torch.device) -> None:
    """pin_memory=True: the batches stay on the host, page-locked (CUDA
    only; a dry run gets pageable memory and a warning)."""
    cpu = list(ds.pytorch(batch_size=BATCH, shuffle=True, seed=5))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = list(ds.pytorch(batch_size=BATCH, shuffle=True, seed=5, pin_memory=True))
    pin_warnings = [str(w.message) for w in caught if "pin_memory" in str(w.message)]
    assert bool(pin_warnings) == DRY_RUN, f"warnings about pin_memory: {pin_warnings}"
    for g, c in zip(got, cpu, strict=True):
        check_same(g, c, torch.device("cpu"))
        for k in ARRAYS:
            assert g[k].is_pinned() == (device.type == "cuda"), f"{k}: is_pinned() is {g[k].is_pinned()}"


def test_batches_kept_while_the_gpu_lags_stay_correct(ds: loch.Dataset, device: torch.device) -> None:
    """The side stream one batch ahead: the default stream runs far behind
    the loop (a sleep kernel before each batch's work), the loop drops most
    batches at once (their memory goes back to the allocator while kernels
    reading it are still queued) and keeps some. If a batch's memory were
    reused before the consumer's stream was done with it (record_stream)
    or the consumer read it before its copy ended (wait_event), the sums
    or the kept batches would be wrong."""
    sleep = getattr(torch.cuda, "_sleep", None) if device.type == "cuda" else None
    sums, kept = [], []
    loader = ds.pytorch(batch_size=16, shuffle=True, seed=7, columns=["x", "img", "h"], device=device.type)
    for n, b in enumerate(loader):
        if sleep is not None:
            sleep(2_000_000)  # about a millisecond or two of the default stream
        sums.append((b["index"], b["x"].sum(dim=1), b["img"].flatten(1).double().sum(dim=1), b["h"].float().sum(1)))
        if n % 4 == 0:
            kept.append(b)
        del b
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    assert len(sums) == -(-ROWS // 16)
    for index, x, img, h in sums:
        want = expected(index.cpu().numpy())
        assert torch.equal(x.cpu(), torch.from_numpy(want["x"].sum(axis=1)))
        assert torch.equal(img.cpu(), torch.from_numpy(want["img"].reshape(len(index), -1).astype(np.float64).sum(1)))
        assert torch.equal(h.cpu(), torch.from_numpy(want["h"].sum(1)))
    for b in kept:
        w = expected(b["index"].cpu().numpy())
        assert torch.equal(b["x"].cpu(), torch.from_numpy(w["x"]))
        assert torch.equal(b["img"].cpu(), torch.from_numpy(w["img"]))


def test_the_go_loader_fills_page_locked_memory(ds: loch.Dataset, device: torch.device,
                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The ring on CUDA (loch._device): every Go column's buffer is
    page-locked memory of the loader's pinned pool (no fallback, no
    allocator failure), the copies run on the side stream, and a side
    stream held back by a sleep kernel before each batch's copies cannot
    make a batch wrong: the host buffers go back to Go only once the
    copy's event has completed, while the Go workers keep filling others.
    Afterwards no page-locked buffer is in use and the pool is within its
    limit."""
    needs_cuda()
    from loch._device import CudaOps

    pinned: list[list[bool]] = []
    copy = CudaOps.copy

    def lagging(self: CudaOps, host: Any) -> Any:
        pinned.append([h.is_pinned() for h in host])
        with torch.cuda.stream(self.stream):
            torch.cuda._sleep(2_000_000)  # the copy engine's stream a millisecond or two behind
        return copy(self, host)

    monkeypatch.setattr(CudaOps, "copy", lagging)
    cpu = list(ds.pytorch(batch_size=BATCH, shuffle=True, seed=13, columns=["x", "img", "y", "h"]))
    gc.collect()
    live = loch.buffer_stats()["live"]  # the CPU batches' included
    loader = ds.pytorch(batch_size=BATCH, shuffle=True, seed=13, columns=["x", "img", "y", "h"], device=device.type)
    for _ in range(2):
        got = []
        for b in loader:
            torch.cuda._sleep(1_000_000)  # and the consumer's stream behind too
            got.append(b)
        for g, c in zip(got, cpu, strict=True):
            check_same(g, c, device)
    assert pinned and all(all(p) for p in pinned), f"copies from pageable memory: {pinned[:3]}"
    stats = loader.pinned_stats()
    assert stats is not None, "no pinned pool: the CUDA runtime's cudaHostAlloc was not found"
    assert stats["fallbacks"] == 0 and stats["failures"] == 0, stats
    assert 0 < stats["peak"] <= stats["limit"], stats
    gc.collect()
    assert loader.pinned_stats()["live"] == 0, loader.pinned_stats()  # type: ignore[index]
    assert loch.buffer_stats()["live"] == live


def test_gpu_batches_outlive_the_host_buffers(ds: loch.Dataset, device: torch.device) -> None:
    """Every batch of two epochs kept to the end: each still holds its
    values after the loader moved on (and reused or freed the Go buffers
    it was copied from); with CUDA no host buffer stays alive for them."""
    gc.collect()
    live = loch.buffer_stats()["live"]
    loader = ds.pytorch(batch_size=BATCH, shuffle=True, seed=11, device=device.type)
    batches = list(loader) + list(loader)
    gc.collect()
    if device.type == "cuda":
        assert loch.buffer_stats()["live"] == live, "the GPU batches keep Go host buffers alive"
    for b in batches:
        check_values(b, device)
    assert sorted(i for b in batches[: len(batches) // 2] for i in b["index"].tolist()) == list(range(ROWS))


def test_epochs_match_the_cpu_loader(ds: loch.Dataset, device: torch.device) -> None:
    def make(dev: str | None) -> Any:
        return ds.pytorch(batch_size=BATCH, shuffle=True, seed=13, device=dev, columns=["y"])

    cpu, gpu = make(None), make(device.type)
    want = [order(list(cpu)) for _ in range(3)]
    assert want[0] != want[1], "each epoch its own shuffle"
    assert [order(list(gpu)) for _ in range(3)] == want
    cpu.set_epoch(7)
    gpu.set_epoch(7)
    assert order(list(gpu)) == order(list(cpu))


@pytest.mark.parametrize("when", ["while iterating", "after the loop broke off", "holding the last batch"])
def test_resume_mid_epoch_on_the_device(ds: loch.Dataset, device: torch.device, when: str) -> None:
    """state_dict() after 5 batches of epoch 1 (or all of them, the loop not
    having asked for the end), then a new loader resumed from it: the
    remaining batches are the CPU loader's (none skipped, none repeated),
    although the side stream has taken a batch ahead; then epoch 2."""

    def make(dev: str | None) -> Any:
        return ds.pytorch(batch_size=BATCH, shuffle=True, seed=17, device=dev)

    cpu = make(None)
    cpu.set_epoch(1)
    whole = order(list(cpu))
    got = len(whole) if when == "holding the last batch" else 5
    loader = make(device.type)
    loader.set_epoch(1)
    it = iter(loader)
    head = [next(it) for _ in range(got)]
    if when == "while iterating":
        state = loader.state_dict()
        del it
    else:
        del it
        gc.collect()
        state = loader.state_dict()
    state = json.loads(json.dumps(state))
    resumed = make(device.type)
    resumed.load_state_dict(state)
    rest = [] if when == "holding the last batch" else list(resumed)
    assert order(head) == whole[:got]
    assert order(rest) == whole[got:], f"resumed at batch {len(whole) - len(rest)} of {len(whole)}, want {got}"
    for b in head + rest:
        check_values(b, device)
    assert order(list(resumed)) == order(list(cpu)), "the epoch after the resumed one (2)"


def test_a_mixture_on_the_device(ds: loch.Dataset, device: torch.device) -> None:
    mixture = loch.mix([ds, ds], [0.5, 0.5])
    cpu = list(mixture.pytorch(batch_size=BATCH, columns=["x", "s"]))
    got = list(mixture.pytorch(batch_size=BATCH, columns=["x", "s"], device=device.type))
    assert len(got) == len(cpu) > 0
    for g, c in zip(got, cpu):
        check_same(g, c, device)


def test_dataloader_workers_with_pin_memory(ds: loch.Dataset, device: torch.device) -> None:
    """The documented DataLoader use: DataLoader(ds.pytorch(...),
    batch_size=None, num_workers=2) with the DataLoader's own pin_memory,
    then a non_blocking copy: the batches of the loader itself, in order,
    pinned. Spawned workers: JAX, imported by the other tests, runs threads
    that make a fork unsafe."""
    cpu = list(ds.pytorch(batch_size=BATCH, shuffle=True, seed=19))
    dl = torch.utils.data.DataLoader(ds.pytorch(batch_size=BATCH, shuffle=True, seed=19), batch_size=None,
                                     num_workers=2, pin_memory=device.type == "cuda", multiprocessing_context="spawn")  # fmt: skip
    got = []
    for b in dl:
        for k in ARRAYS:
            assert b[k].is_pinned() == (device.type == "cuda"), f"{k}: is_pinned() is {b[k].is_pinned()}"
        got.append({k: v.to(device, non_blocking=True) if isinstance(v, torch.Tensor) else v for k, v in b.items()})
    assert len(got) == len(cpu)
    for g, c in zip(got, cpu):
        check_same(g, c, device)
        check_values(g, device)


def test_device_loader_in_dataloader_workers_is_refused(ds: loch.Dataset, device: torch.device) -> None:
    """DataLoader(ds.pytorch(device="cuda"), num_workers=2): the workers
    cannot hand CUDA tensors on (a forked one cannot even start CUDA), so
    each refuses with loch's message naming the remedy rather than torch's
    "Cannot re-initialize CUDA in forked subprocess" or a dead worker."""
    dl = torch.utils.data.DataLoader(ds.pytorch(batch_size=BATCH, device=device.type), batch_size=None,
                                     num_workers=2, multiprocessing_context="spawn")  # fmt: skip
    if device.type != "cuda":  # the dry run: nothing to move, the workers serve batches
        assert sum(len(b["index"]) for b in dl) == ROWS
        return
    with pytest.raises(loch.InvalidArgument, match=r"in a DataLoader worker: batches are moved to the GPU"):
        next(iter(dl))


def test_cli_version_is_the_packages() -> None:
    """The loch command on PATH (the wheel's, in run.sh) is this SDK's version."""
    exe = shutil.which("loch")
    assert exe is not None, "no loch command on PATH"
    out = subprocess.run([exe, "version"], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.split("\n")[0].split() == ["loch", loch.__version__], f"{exe} version: {out!r}"


# decode="gpu": JPEG columns decoded by nvJPEG (torchvision's decode_jpeg on
# the device) and transformed on the GPU, against the Go loader's pixels.
# The tolerances are docs/loader.md's ("Decoding on the GPU"); the measured
# differences are printed (pytest -s) and, where $OUT is set, written to
# $OUT/gpu_decode.txt.
DECODE_SPECS = {  # spec -> (grey levels per output unit, max, mean abs difference allowed)
    "decode=full": (1, 24, 1.5),
    "decode=full,resize=40x30": (1, 24, 1.5),
    "center_crop=48,flip=1,to_float,normalize=imagenet,chw": (255 * 0.225, 24, 1.5),
}


def photo(w: int, h: int, seed: int) -> np.ndarray:
    """A photo-like RGB image (smooth shapes and fine texture)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    coarse = Image.fromarray(rng.integers(0, 256, (h // 8 + 1, w // 8 + 1, 3), dtype=np.uint8))
    base = np.asarray(coarse.resize((w, h), Image.BICUBIC), dtype=np.float32)
    return np.clip(base + rng.normal(0, 12, (h, w, 3)), 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def jpeg_ds(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Colour JPEGs of several sizes, then grayscale, CMYK and progressive
    ones (the last three: rows 8, 9, 10)."""
    import io

    from PIL import Image

    def jpeg(img: Any, **kw: Any) -> loch.EncodedImage:
        out = io.BytesIO()
        img.save(out, "JPEG", quality=90, **kw)
        return loch.EncodedImage(out.getvalue())

    imgs = [Image.fromarray(photo(64 + 8 * i, 48 + 8 * (i % 3), i)) for i in range(8)]
    odd = [jpeg(imgs[0].convert("L")), jpeg(imgs[0].convert("CMYK")), jpeg(imgs[0], progressive=True)]
    d = loch.create(str(tmp_path_factory.mktemp("jpeg") / "ds"), schema={"image": loch.Image("jpeg")})
    d.extend({"image": [jpeg(m) for m in imgs] + odd})
    d.commit("jpegs")
    yield d
    d.close()


def report(line: str) -> None:
    import os

    print(line)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "gpu_decode.txt"), "a") as f:
            f.write(line + "\n")


@pytest.mark.parametrize("spec", list(DECODE_SPECS))
def test_gpu_decode_matches_the_cpu_loader(jpeg_ds: Any, device: torch.device, spec: str) -> None:
    kw = {"batch_size": 8, "transform": {"image": spec}}
    (go,) = list(jpeg_ds.pytorch(**kw, rows=range(8)))
    (gpu,) = list(jpeg_ds.pytorch(**kw, rows=range(8), device=device.type, decode="gpu"))
    assert gpu["image"].device.type == device.type and gpu["image"].dtype == go["image"].dtype
    assert gpu["image"].shape == go["image"].shape and torch.equal(gpu["index"].cpu(), go["index"])
    unit, max_tol, mean_tol = DECODE_SPECS[spec]
    d = (gpu["image"].cpu().double() - go["image"].double()).abs() * unit
    report(f"decode='gpu' on {device}: {spec}: max {float(d.max()):.3g}, mean {float(d.mean()):.3g} grey levels")
    assert float(d.max()) <= max_tol and float(d.mean()) <= mean_tol


def test_gpu_decode_of_grayscale_cmyk_progressive(jpeg_ds: Any, device: torch.device) -> None:
    """nvJPEG's refusals (CMYK) fall back to the CPU decoder: every row
    decodes, to 3 channels, close to torchvision's CPU decode."""
    kw = {"batch_size": 3, "rows": [8, 9, 10], "transform": {"image": "decode"}, "decode": "gpu"}
    (gpu,) = list(jpeg_ds.pytorch(**kw, device=device.type))
    (cpu,) = list(jpeg_ds.pytorch(**kw))
    assert gpu["image"].shape == cpu["image"].shape == (3, 48, 64, 3)
    d = (gpu["image"].cpu().double() - cpu["image"].double()).abs()
    report(f"decode='gpu' on {device}: grayscale, CMYK, progressive: "
           f"max {float(d.max()):.3g}, mean {float(d.mean()):.3g}")  # fmt: skip
    assert float(d.mean()) <= 1.5
