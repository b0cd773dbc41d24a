"""Trains torchvision's ResNet-50 (random init) on a loch dataset of JPEGs
streamed with ds.pytorch(), with channels_last and bf16 autocast on
random-resized 224 px crops, over DDP on every GPU of the machine through
torchrun, and reports per epoch the samples/s, the share of the time the
training loop waited for data and the GPU utilisation (NVML, sampled in a
background thread):

    python examples/train_resnet.py /data/pets-jpeg --epochs 1 --device cuda
    torchrun --standalone --nproc_per_node=gpu examples/train_resnet.py /data/pets-jpeg --json out.json
    AWS_ENDPOINT_URL=http://127.0.0.1:9000 AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... \\
        torchrun --standalone --nproc_per_node=gpu examples/train_resnet.py s3://bucket/pets-jpeg   # MinIO
    python examples/train_resnet.py /tmp/tiny --device cpu --model resnet18 --image-size 32 --steps 2   # a smoke run

The dataset needs an image column (JPEG kept, `loch ingest imagefolder SRC
URL --image-compression jpeg`, or any image column the transform's decode
takes) and a class_label column; they are found by kind unless --image and
--label name them. S3 endpoints and credentials come from the environment
as for any loch URL (docs/storage.md).

--decode chooses where the JPEGs are decoded. cpu: by the Go loader's
workers (libjpeg-turbo), with the crop and flip; the batch crosses to the
GPU as uint8 HWC (a quarter of float32's bytes) and is normalised there,
as DALI's crop_mirror_normalize does, into an NCHW view whose memory is
channels_last. gpu: by the loader on the GPU (nvJPEG), with the whole
transform there (ds.pytorch(decode="gpu")). auto: the loader's choice;
the CPU path when this loch has no decode= option. --transform replaces
the spec (transform/doc.go's grammar).

Utilisation is NVML's "utilization.gpu" (the share of time a kernel ran on
the GPU), through torch.cuda.utilization() (pynvml) or, without pynvml,
libnvidia-ml directly; "n/a" on a CPU. Data wait is the time the loop spent
in next() on the loader, over the epoch's wall time, per rank (the mean and
the largest over ranks are reported).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import json
import os
import platform
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

#: ImageNet's channel means and standard deviations, as 0-255 levels.
MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)
STD = (0.229 * 255, 0.224 * 255, 0.225 * 255)

# Process setup.


def setup(device_name: str) -> tuple[int, int, torch.device]:
    """Starts torch.distributed when run by torchrun (nccl on GPUs, gloo
    on CPUs) and returns (rank, world size, this rank's device)."""
    device = torch.device(device_name)
    if device.type == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)
        torch.backends.cudnn.benchmark = True
    if "WORLD_SIZE" not in os.environ:
        return 0, 1, device
    torch.distributed.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return torch.distributed.get_rank(), torch.distributed.get_world_size(), device


def make_model(name: str, classes: int, device: torch.device, world: int) -> nn.Module:
    """A torchvision classification model of random weights, channels_last
    on ``device``, in DDP when ``world`` > 1."""
    import torchvision

    model = getattr(torchvision.models, name)(weights=None, num_classes=classes)
    model = model.to(device).to(memory_format=torch.channels_last)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    return model


# GPU utilisation.


def utilisation_reader(device: torch.device) -> Callable[[], float] | None:
    """A function that returns ``device``'s NVML utilisation now (percent),
    or None when there is none to read (a CPU, no NVML)."""
    if device.type != "cuda":
        return None
    with contextlib.suppress(Exception):  # pynvml missing
        torch.cuda.utilization(device)
        return lambda: float(torch.cuda.utilization(device))
    return _nvml_reader(device)


class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


def _nvml_reader(device: torch.device) -> Callable[[], float] | None:
    """NVML's utilisation through libnvidia-ml.so.1 itself (for machines
    without pynvml), for the physical GPU behind ``device``."""
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
    index = device.index or 0
    physical = int(visible[index]) if index < len(visible) and visible[index].strip().isdigit() else index
    handle = ctypes.c_void_p()
    if nvml.nvmlInit_v2() != 0 or nvml.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(physical), ctypes.byref(handle)):
        return None

    def read() -> float:
        u = _Utilization()
        if nvml.nvmlDeviceGetUtilizationRates(handle, ctypes.byref(u)) != 0:
            raise OSError("nvmlDeviceGetUtilizationRates failed")
        return float(u.gpu)

    return read


class UtilisationMeter:
    """Samples a GPU's utilisation every ``interval`` seconds in a thread of
    its own while used as a context manager; ``mean`` is the average of the
    samples (None on a CPU or when nothing could be read)."""

    def __init__(self, device: torch.device, interval: float = 0.1) -> None:
        self._read = utilisation_reader(device)
        self._interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.samples: list[float] = []

    def __enter__(self) -> UtilisationMeter:
        if self._read is not None:
            self._thread = threading.Thread(target=self._run, name="gpu-utilisation", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        assert self._read is not None
        while not self._stop.wait(self._interval):
            try:
                self.samples.append(self._read())
            except Exception:  # a driver hiccup ends the sampling, not the training
                return

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.samples) if self.samples else None


# Training.


def to_input(x: torch.Tensor, device: torch.device) -> torch.Tensor:
    """The model's input from a batch of images: uint8 NHWC (normalised
    here, on ``device``) or float32 NCHW already normalised; either way an
    NCHW tensor with channels_last memory."""
    x = x.to(device, non_blocking=True)
    if x.dtype == torch.uint8:  # [N, H, W, 3]: the permuted view is channels_last already
        mean, std = _mean_std(device)
        return (x.permute(0, 3, 1, 2).float() - mean) / std
    return x.contiguous(memory_format=torch.channels_last)


@functools.cache
def _mean_std(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """MEAN and STD as [1, 3, 1, 1] tensors on ``device``, made once: a
    copy from pageable memory each step would wait for the GPU's queue."""
    return (torch.tensor(MEAN, device=device).view(1, 3, 1, 1), torch.tensor(STD, device=device).view(1, 3, 1, 1))


def train_epoch(
    model: nn.Module,
    opt: torch.optim.Optimizer,
    batches: Iterable[Any],
    prepare: Callable[[Any], tuple[torch.Tensor, torch.Tensor]],
    device: torch.device,
    steps: int = 0,
    amp: bool = True,
) -> dict[str, Any]:
    """Trains one epoch on ``batches`` (each made (input, labels) by
    ``prepare``), at most ``steps`` steps (0: all), and returns this rank's
    figures: steps, samples, seconds, the seconds spent waiting in next()
    and the GPU utilisation sampled meanwhile."""
    model.train()
    seen = n = 0
    wait = 0.0
    loss_sum = torch.zeros((), device=device)  # summed on the device: no sync per step
    with UtilisationMeter(device) as meter:
        t0 = time.perf_counter()
        it: Iterator[Any] = iter(batches)
        while not steps or n < steps:
            w0 = time.perf_counter()
            batch = next(it, None)
            wait += time.perf_counter() - w0
            if batch is None:
                break
            x, y = prepare(batch)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
                loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            n += 1
            seen += len(y)
            loss_sum += loss.detach().float() * len(y)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        elapsed = time.perf_counter() - t0
    return {"steps": n, "samples": seen, "seconds": elapsed, "wait_seconds": wait, "gpu_utilisation": meter.mean,
            "loss": loss_sum.item() / max(seen, 1)}  # fmt: skip


def combine(mine: dict[str, Any], world: int, device: torch.device) -> dict[str, Any]:
    """One epoch's figures over every rank: samples/s (all the samples over
    the slowest rank's time), the data-wait share (mean and largest of the
    ranks'), the GPU utilisation (mean of the GPUs'; None on CPUs)."""
    share = mine["wait_seconds"] / mine["seconds"] if mine["seconds"] > 0 else 0.0
    util = mine["gpu_utilisation"]
    row = [float(mine["samples"]), mine["seconds"], share, share, -1.0 if util is None else util, mine["loss"]]
    if world > 1:
        t = torch.tensor(row, dtype=torch.float64, device=device)
        gathered = [torch.zeros_like(t) for _ in range(world)]
        torch.distributed.all_gather(gathered, t)
        rows = [g.tolist() for g in gathered]
    else:
        rows = [row]
    samples = sum(r[0] for r in rows)
    seconds = max(r[1] for r in rows)
    utils = [r[4] for r in rows if r[4] >= 0]
    return {
        "steps": mine["steps"],
        "samples": int(samples),
        "seconds": round(seconds, 3),
        "samples_per_s": round(samples / seconds, 1) if seconds > 0 else 0.0,
        "data_wait_share": round(statistics.fmean(r[2] for r in rows), 4),
        "data_wait_share_max": round(max(r[3] for r in rows), 4),
        "gpu_utilisation": round(statistics.fmean(utils), 1) if utils else None,
        "loss": round(statistics.fmean(r[5] for r in rows), 4),
    }


def describe(epoch: int, e: dict[str, Any]) -> str:
    """One epoch's line of the report."""
    util = "n/a" if e["gpu_utilisation"] is None else f"{e['gpu_utilisation']:.0f}%"
    return (f"epoch {epoch}: {e['steps']} steps, {e['samples_per_s']:.0f} samples/s, waited for data "
            f"{e['data_wait_share']:.1%} of the time (worst rank {e['data_wait_share_max']:.1%}), "
            f"GPU utilisation {util}, loss {e['loss']:.3f}")  # fmt: skip


def machine(device: torch.device, world: int) -> dict[str, Any]:
    """What ran: host, cores, load, torch, and the GPUs."""
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if device.type == "cuda" else []
    return {"host": platform.node(), "cores": os.cpu_count(), "load": os.getloadavg()[0],
            "python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda, "gpus": gpus,
            "world_size": world}  # fmt: skip


def run(
    name: str,
    args: argparse.Namespace,
    make_batches: Callable[[int], Iterable[Any]],
    prepare: Callable[[Any], tuple[torch.Tensor, torch.Tensor]],
    classes: int,
    env: tuple[int, int, torch.device],
    extra: dict[str, Any],
) -> dict[str, Any]:
    """Trains ``args.model`` for ``args.epochs`` epochs on the batches of
    ``make_batches(epoch)``, printing each epoch's line on rank 0, and
    returns the report (written to ``args.json`` by rank 0). Shared with
    python/gpu_tests/bench_resnet.py (the DALI baseline)."""
    rank, world, device = env
    model = make_model(args.model, classes, device, world)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    report: dict[str, Any] = {"loader": name, "model": args.model, "batch_size": args.batch_size,
                              "image_size": args.image_size, "device": device.type, "world_size": world,
                              "amp": "bf16" if args.amp else None, "channels_last": True, **extra,
                              "machine": machine(device, world), "epochs": []}  # fmt: skip
    for epoch in range(args.epochs):
        mine = train_epoch(model, opt, make_batches(epoch), prepare, device, args.steps, args.amp)
        e = combine(mine, world, device)
        report["epochs"].append(e)
        if rank == 0:
            print(describe(epoch, e), flush=True)
    if rank == 0 and args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return report


# The loch loader.


def loader_decodes() -> bool:
    """Whether this loch's ds.pytorch() takes decode= (GPU decode)."""
    from loch.torch import TorchOptions

    return "decode" in TorchOptions.__optional_keys__


def loader_options(args: argparse.Namespace, device: torch.device) -> tuple[str, dict[str, Any]]:
    """The decode mode that runs and ds.pytorch()'s decode-related options:
    the transform spec, device, and decode= unless it is "cpu"."""
    decode = args.decode
    if decode != "cpu" and not loader_decodes():
        if decode == "gpu":
            raise SystemExit("--decode gpu: this loch's ds.pytorch() has no decode= option (GPU decode)")
        print("--decode auto: this loch's ds.pytorch() has no decode= option; decoding on the CPU", flush=True)
        decode = "cpu"
    size = args.image_size
    crop = f"decode,random_resized_crop={size},flip"
    spec = args.transform or (crop if decode == "cpu" else crop + ",to_float,normalize=imagenet,chw")
    opts: dict[str, Any] = {"transform_spec": spec}
    if device.type == "cuda":
        opts["device"] = device
    if decode != "cpu":
        opts["decode"] = decode
    return decode, opts


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dataset", help="dataset URL or path (s3://bucket/prefix: endpoint and keys from AWS_*)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=256, help="per rank")
    p.add_argument("--steps", type=int, default=0, help="stop each epoch after this many steps (0: no limit)")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", help="cuda or cpu")
    p.add_argument("--decode", choices=["cpu", "gpu", "auto"], default="cpu")
    p.add_argument("--model", default="resnet50", help="a torchvision model name (resnet18 for a smoke run)")
    p.add_argument("--image-size", type=int, default=224, help="the crop's side, in pixels")
    p.add_argument("--transform", help="the image column's transform spec instead of the default")
    p.add_argument("--no-amp", dest="amp", action="store_false", help="float32 instead of bf16 autocast")
    p.add_argument("--image")
    p.add_argument("--label")
    p.add_argument("--json", help="write the report here (rank 0)")
    args = p.parse_args()

    import loch

    env = setup(args.device)
    rank, world, device = env
    ds = loch.open(args.dataset)
    from train_torch import column_of  # the same rule as the small example's (examples/ is on sys.path)

    image, label = column_of(ds, "image", args.image), column_of(ds, "class_label", args.label)
    names = ds.schema[label].class_names
    classes = len(names) if names else int(max(ds[label][:])) + 1
    decode, opts = loader_options(args, device)
    spec = opts.pop("transform_spec")
    loader = ds.pytorch(batch_size=args.batch_size, shuffle=True, seed=0, columns=[image, label], drop_last=True,
                        transform={image: spec}, **opts)  # fmt: skip
    if rank == 0:
        print(f"{ds.url}: {len(ds)} rows, {classes} classes, {len(loader)} batches of {args.batch_size} per epoch "
              f"on each of {world} ranks, {args.model} on {device.type}, decode {decode}, transform {spec!r}",
              flush=True)  # fmt: skip

    def batches(epoch: int) -> Iterable[Any]:
        loader.set_epoch(epoch)
        return loader

    def prepare(b: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        return to_input(b[image], device), b[label].to(device, non_blocking=True).long()

    try:
        run("loch", args, batches, prepare, classes, env,
            {"dataset": ds.url, "rows": len(ds), "decode": decode, "transform": spec})  # fmt: skip
    finally:
        if world > 1:
            torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
