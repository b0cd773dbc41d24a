#!/usr/bin/env python3
"""The GPU machine's figures for issue 40 beside examples/train_resnet.py,
each baseline measured in the same run, on the same JPEG files:

``prepare``
    Writes ``--images`` synthetic JPEGs (sides 224-320 px, drawn as
    python/bench/bench_loaders.py draws them) into ``DIR/jpeg/<class>/``
    with a process per core, then keeps them byte for byte in the loch
    dataset ``DIR/loch`` (``loch ingest imagefolder --image-compression
    jpeg``). Reused when its parameters match.
``decode``
    JPEG decode images/s on the GPU against the CPU on every core: each
    contender decodes the same files' bytes, read into memory first (the
    reads are not timed): torchvision's batched ``decode_jpeg(...,
    device="cuda")`` (nvJPEG); PIL and torchvision's CPU ``decode_jpeg`` in
    one process per core; and with ``--dataset``, loch's CPU loader
    (``transform "decode,center_crop=C"``, the crop being needed to batch
    images of several sizes) and, when this loch has it, its GPU decode.
``dali``
    DALI's ImageNet pipeline (``fn.readers.file`` over the JPEG folder,
    ``fn.decoders.image(device="mixed")``, ``fn.random_resized_crop``,
    ``fn.crop_mirror_normalize``) feeding the training loop of
    examples/train_resnet.py (the same model, optimiser, autocast and
    figures; DDP under torchrun as it is).

    python python/gpu_tests/bench_resnet.py prepare --dir /tmp/rn --images 10000
    python python/gpu_tests/bench_resnet.py decode --dir /tmp/rn --json decode.json
    torchrun --standalone --nproc_per_node=gpu python/gpu_tests/bench_resnet.py dali --dir /tmp/rn --json dali.json

DALI comes from PyPI (``nvidia-dali-cuda130``; ``make gpu-wheels`` fetches
it and its dependencies for a machine without a network); without it the
``dali`` command says so and exits 3.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python" / "bench"))
sys.path.insert(0, str(ROOT / "examples"))

#: Exit status of the dali command when DALI is not installed.
NO_DALI = 3

# prepare: the JPEG folder and the loch dataset of its files.


def _write_shard(job: tuple[str, int, int, int, int, int, int]) -> int:
    """Writes images start..start+n-1 as JPEGs under root (a worker's part
    of prepare); each image's side is drawn from [lo, hi] from its number."""
    import numpy as np
    from bench_loaders import synthetic_images
    from PIL import Image

    root, start, n, classes, lo, hi, quality = job
    for i in range(start, start + n):
        rng = np.random.default_rng(i)
        w, h = (int(v) for v in rng.integers(lo, hi + 1, 2))
        img, label = synthetic_images(i, 1, classes, max(w, h))
        path = Path(root) / f"class{int(label[0]):03d}" / f"{i:07d}.jpg"
        Image.fromarray(img[0, :h, :w]).save(path, quality=quality)
    return n


def prepare(args: argparse.Namespace) -> None:
    """The prepare command (see the module's documentation)."""
    d: Path = args.dir
    params = {"images": args.images, "classes": args.classes, "sides": [args.min_side, args.max_side],
              "quality": args.quality}  # fmt: skip
    stamp = d / "params.json"
    if stamp.exists() and json.loads(stamp.read_text()) == params and (d / "loch").exists():
        print(f"reusing the JPEGs and the dataset in {d}", flush=True)
        return
    stamp.unlink(missing_ok=True)
    shutil.rmtree(d / "jpeg", ignore_errors=True)
    shutil.rmtree(d / "loch", ignore_errors=True)
    for c in range(args.classes):
        (d / "jpeg" / f"class{c:03d}").mkdir(parents=True)
    t0 = time.perf_counter()
    step = 256
    jobs = [(str(d / "jpeg"), s, min(step, args.images - s), args.classes, args.min_side, args.max_side, args.quality)
            for s in range(0, args.images, step)]  # fmt: skip
    with ProcessPoolExecutor(os.cpu_count()) as pool:
        done = sum(pool.map(_write_shard, jobs))
    size = sum(p.stat().st_size for p in (d / "jpeg").rglob("*.jpg"))
    print(f"{done} JPEGs, {size / 2**20:.0f} MiB, in {time.perf_counter() - t0:.1f} s", flush=True)
    t0 = time.perf_counter()
    ingest = [args.loch, "ingest", "imagefolder", str(d / "jpeg"), str(d / "loch"), "--image-compression", "jpeg"]
    subprocess.run(ingest, check=True)
    print(f"ingested into {d / 'loch'} in {time.perf_counter() - t0:.1f} s", flush=True)
    stamp.write_text(json.dumps(params))


def jpeg_files(folder: Path, limit: int = 0) -> list[Path]:
    """The JPEGs under folder's class folders, in a fixed order."""
    files = sorted(folder.glob("*/*.jpg"))
    if not files:
        raise SystemExit(f"no JPEGs under {folder}/<class>/: run the prepare command first")
    return files[:limit] if limit else files


# decode: GPU against CPU decode.


def decode_gpu(blobs: list[bytes], batch: int, rounds: int) -> float:
    """images/s of torchvision's batched nvJPEG decode (the blobs decoded
    ``rounds`` times after a warm-up batch)."""
    import torch
    import torchvision.io as tio

    data = [torch.frombuffer(bytearray(b), dtype=torch.uint8) for b in blobs]
    tio.decode_jpeg(data[:batch], device="cuda")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(rounds):
        for i in range(0, len(data), batch):
            tio.decode_jpeg(data[i : i + batch], device="cuda", mode=tio.ImageReadMode.RGB)
    torch.cuda.synchronize()
    return rounds * len(data) / (time.perf_counter() - t0)


def _decode_worker(paths: list[str], how: str, rounds: int, ready: Any, done: Any) -> None:
    """One core's part of a CPU decode: read its files, wait for the
    start, decode them ``rounds`` times, report."""
    blobs = [Path(p).read_bytes() for p in paths]
    if how == "pil":
        import io

        import numpy as np
        from PIL import Image

        def decode(b: bytes) -> Any:
            return np.asarray(Image.open(io.BytesIO(b)).convert("RGB"))
    else:
        import torch
        import torchvision.io as tio

        torch.set_num_threads(1)

        def decode(b: bytes) -> Any:
            return tio.decode_jpeg(torch.frombuffer(bytearray(b), dtype=torch.uint8), mode=tio.ImageReadMode.RGB)

    decode(blobs[0])
    ready.wait()
    for _ in range(rounds):
        for b in blobs:
            decode(b)
    done.put(rounds * len(blobs))


def decode_cpu(paths: list[Path], how: str, rounds: int, procs: int) -> float:
    """images/s of ``how`` (pil or torchvision) on ``procs`` processes, a
    share of the files each, timed from a common start to the last one's end."""
    shares = [[str(p) for p in paths[i::procs]] for i in range(procs)]
    if not shares[-1]:
        raise ValueError(f"{len(paths)} files for {procs} processes: too few to time")
    ctx = mp.get_context("spawn")  # no CUDA state or threads inherited
    ready, done = ctx.Barrier(procs + 1), ctx.Queue()
    workers = [ctx.Process(target=_decode_worker, args=(s, how, rounds, ready, done)) for s in shares]
    for w in workers:
        w.start()
    ready.wait(timeout=120)
    t0 = time.perf_counter()
    n = sum(done.get(timeout=600) for _ in workers)
    elapsed = time.perf_counter() - t0
    for w in workers:
        w.join()
    return n / elapsed


def decode_loch(dataset: str, crop: int, decode: str, batch: int) -> float:
    """images/s of one epoch of loch's loader over the dataset with the
    transform "decode,center_crop=crop": decode "cpu" (the Go loader's
    workers, batches on the host) or "gpu" (ds.pytorch(decode="gpu"),
    batches on the GPU)."""
    import torch

    import loch

    ds = loch.open(dataset)
    opts: dict[str, Any] = {"device": "cuda", "decode": decode} if decode != "cpu" else {}
    loader = ds.pytorch(batch_size=batch, columns=["image"], transform={"image": f"decode,center_crop={crop}"}, **opts)
    for b in loader:  # a warm-up epoch
        b["image"].sum()
        break
    t0 = time.perf_counter()
    n = 0
    for b in loader:
        n += len(b["image"])
    if decode != "cpu":
        torch.cuda.synchronize()
    return n / (time.perf_counter() - t0)


def decode(args: argparse.Namespace) -> None:
    """The decode command: every contender's images/s, printed and in JSON."""
    paths = jpeg_files(args.dir / "jpeg", args.images)
    blobs = [p.read_bytes() for p in paths]
    cores = os.cpu_count() or 1
    mb = sum(map(len, blobs)) / 2**20
    print(f"{len(paths)} JPEGs ({mb:.0f} MiB), {cores} cores, load {os.getloadavg()[0]:.1f}", flush=True)
    contenders: list[tuple[str, Callable[[], float]]] = [
        (f"PIL, {cores} processes", lambda: decode_cpu(paths, "pil", args.rounds, cores)),
        (f"torchvision decode_jpeg CPU, {cores} processes",
         lambda: decode_cpu(paths, "torchvision", args.rounds, cores)),
    ]  # fmt: skip
    if args.dataset:
        contenders.append((f"loch loader CPU (decode,center_crop={args.crop})",
                           lambda: decode_loch(args.dataset, args.crop, "cpu", args.batch)))  # fmt: skip
    import torch

    if torch.cuda.is_available():
        contenders.append(("torchvision decode_jpeg cuda, batched (nvJPEG)",
                           lambda: decode_gpu(blobs, args.batch, args.rounds)))  # fmt: skip
        from train_resnet import loader_decodes

        if args.dataset and loader_decodes():
            contenders.append((f"loch loader GPU decode (decode,center_crop={args.crop})",
                               lambda: decode_loch(args.dataset, args.crop, "gpu", args.batch)))  # fmt: skip
    else:
        print("no CUDA device: the GPU contenders are left out", flush=True)
    results = []
    for name, fn in contenders:
        try:
            rate = fn()
            results.append({"name": name, "images_per_s": round(rate, 1)})
            print(f"{name}: {rate:,.0f} images/s", flush=True)
        except Exception as e:  # one contender's failure is a row, not the end of the run
            results.append({"name": name, "error": f"{type(e).__name__}: {e}"})
            print(f"{name}: FAILED {type(e).__name__}: {e}", flush=True)
    if args.json:
        report = {"images": len(paths), "mib": round(mb, 1), "cores": cores, "load": os.getloadavg()[0],
                  "rounds": args.rounds, "cuda": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
                  "results": results}  # fmt: skip
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")


# dali: DALI's ImageNet pipeline feeding the same training loop.


def dali_batches(folder: Path, args: argparse.Namespace, rank: int, world: int, device_id: int | None) -> Any:
    """A DALIGenericIterator over DALI's ImageNet training pipeline: crops
    normalised (float32 HWC) and labels, on GPU ``device_id`` (decoded by
    nvJPEG, "mixed"), or with None on the CPU (a smoke run)."""
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy
    from train_resnet import MEAN, STD

    @pipeline_def(batch_size=args.batch_size, num_threads=max(1, (os.cpu_count() or 1) // world), device_id=device_id,
                  seed=rank + 1, prefetch_queue_depth=2)  # fmt: skip
    def imagenet() -> Any:
        jpegs, labels = fn.readers.file(file_root=str(folder), random_shuffle=True, shard_id=rank, num_shards=world,
                                        pad_last_batch=True, name="Reader")  # fmt: skip
        images = fn.decoders.image(jpegs, device="cpu" if device_id is None else "mixed", output_type=types.RGB)
        images = fn.random_resized_crop(images, size=(args.image_size, args.image_size))
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="HWC", mean=list(MEAN),
                                          std=list(STD), mirror=fn.random.coin_flip(probability=0.5))  # fmt: skip
        return images, labels if device_id is None else labels.gpu()

    return DALIGenericIterator([imagenet()], ["image", "label"], reader_name="Reader", auto_reset=True,
                               last_batch_policy=LastBatchPolicy.DROP)  # fmt: skip


def dali(args: argparse.Namespace) -> None:
    """The dali command: train_resnet.run over DALI's pipeline."""
    try:
        import nvidia.dali  # noqa: F401
    except ImportError as e:
        print(f"*** DALI IS NOT INSTALLED ({e}): no DALI baseline. `make gpu-wheels` fetches it for a machine "
              "without a network (python/gpu_tests/run.sh installs dist/gpu-wheels)", flush=True)  # fmt: skip
        sys.exit(NO_DALI)
    import torch
    import train_resnet

    folder = args.dir / "jpeg"
    classes = len([p for p in folder.iterdir() if p.is_dir()])
    env = train_resnet.setup(args.device)
    rank, world, device = env
    it = dali_batches(folder, args, rank, world, None if device.type == "cpu" else device.index or 0)

    def prepare_batch(b: Any) -> tuple[torch.Tensor, torch.Tensor]:
        out = b[0]
        x = out["image"].permute(0, 3, 1, 2)  # NHWC memory: an NCHW channels_last view
        return x, out["label"].view(-1).long()

    def batches(epoch: int) -> Iterable[Any]:
        return it

    if rank == 0:
        print(f"DALI {nvidia.dali.__version__}: {folder}, {classes} classes, {world} ranks", flush=True)
    try:
        how = "cpu (DALI)" if device.type == "cpu" else "gpu (DALI mixed)"
        extra = {"dataset": str(folder), "decode": how, "dali": nvidia.dali.__version__}
        train_resnet.run("dali", args, batches, prepare_batch, classes, env, extra)
    finally:
        if world > 1:
            torch.distributed.destroy_process_group()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    pp = sub.add_parser("prepare", help="make the JPEG folder and the loch dataset")
    pp.add_argument("--images", type=int, default=10000)
    pp.add_argument("--classes", type=int, default=100)
    pp.add_argument("--min-side", type=int, default=224)
    pp.add_argument("--max-side", type=int, default=320)
    pp.add_argument("--quality", type=int, default=90)
    pp.add_argument("--loch", default=shutil.which("loch") or "loch", help="the loch command")
    pd = sub.add_parser("decode", help="GPU against CPU JPEG decode")
    pd.add_argument("--images", type=int, default=0, help="decode only the first N files (0: all)")
    pd.add_argument("--rounds", type=int, default=1, help="decode the files this many times")
    pd.add_argument("--batch", type=int, default=256)
    pd.add_argument("--crop", type=int, default=224, help="the loch loader's center_crop")
    pd.add_argument("--dataset", help="the loch dataset of the same files (prepare's DIR/loch)")
    pt = sub.add_parser("dali", help="the ResNet loop of train_resnet.py fed by DALI")
    pt.add_argument("--epochs", type=int, default=1)
    pt.add_argument("--batch-size", type=int, default=256)
    pt.add_argument("--steps", type=int, default=0)
    pt.add_argument("--lr", type=float, default=0.1)
    pt.add_argument("--model", default="resnet50")
    pt.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke run (DALI's CPU decoder)")
    pt.add_argument("--image-size", type=int, default=224)
    pt.add_argument("--no-amp", dest="amp", action="store_false")
    for s in (pp, pd, pt):
        s.add_argument("--dir", type=Path, required=True, help="the data: DIR/jpeg and DIR/loch")
        s.add_argument("--json", help="write the figures here")
    args = p.parse_args()
    {"prepare": prepare, "decode": decode, "dali": dali}[args.command](args)


if __name__ == "__main__":
    main()
