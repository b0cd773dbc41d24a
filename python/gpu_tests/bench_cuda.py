#!/usr/bin/env python3
"""Measures ``ds.pytorch(device="cuda")`` against the CPU loader on the
datasets of ``python/bench/bench_loaders.py --generate sdk`` (made here
when missing), printing every baseline measured in the same run:

``cpu``
    ``ds.pytorch()``, the loop only counts rows (the loader's ceiling).
``cpu + .to()``
    ``ds.pytorch()``, each batch's image copied to the GPU by the loop
    (``.to(device)`` from pageable memory), then the step.
``device=``
    ``ds.pytorch(device=...)``: the Go loader's workers fill page-locked
    buffers of its pinned pool, copied non_blocking on a side stream, one
    batch ahead (loch._device), then the step; its pool's statistics are
    printed (``fallbacks``: buffers that went through the staging copy).
``device= staging``
    The same without the pinned pool (the path before C ABI 26): each
    batch copied by the loop's thread into reused page-locked buffers
    first; the A/B of the Go-filled pinned buffers.
``pin_memory()``
    What ``device=`` did before (and the usual recipe): each tensor's
    ``Tensor.pin_memory()``, then a non_blocking copy on a side stream, one
    batch ahead, over ``ds.pytorch()``; the A/B of the reused buffers.

With ``--step-ms`` the step first keeps the GPU busy that long, as a
training step would (``torch.cuda._sleep``). Otherwise the step is a trivial GPU op (the mean of the image as float32, added to
an accumulator on the GPU; no synchronisation until the epoch ends). Each
contender runs a warm-up epoch, then ``--epochs`` measured epochs, in
each of ``--rounds`` rounds (every other round in reverse order); the
median is reported with the loader's statistics of its last epoch
(``wait_share``: the share of the time the loop waited for the loader).

    python python/gpu_tests/bench_cuda.py --dir /tmp/bl
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

import loch
from loch._device import CudaOps

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import bench_loaders  # noqa: E402


def pinned_per_batch(batches: Any, device: torch.device) -> Any:
    """The ``pin_memory()`` contender: batches moved through each tensor's
    own pinned copy, on a side stream, one batch ahead."""
    stream = torch.cuda.Stream(device)

    def send(b: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        with torch.cuda.stream(stream):
            out = {k: v.pin_memory().to(device, non_blocking=True) if isinstance(v, torch.Tensor) else v
                   for k, v in b.items()}  # fmt: skip
            event = torch.cuda.Event()
            event.record(stream)
        return out, event

    def receive(sent: tuple[dict[str, Any], Any]) -> dict[str, Any]:
        b, event = sent
        current = torch.cuda.current_stream(device)
        current.wait_event(event)
        for v in b.values():
            if isinstance(v, torch.Tensor):
                v.record_stream(current)
        return b

    ahead = None
    for b in batches:
        sent = send(b)
        if ahead is not None:
            yield receive(ahead)
        ahead = sent
    if ahead is not None:
        yield receive(ahead)


class NoPool(CudaOps):
    """The device path without a pinned pool: every batch through the
    staging copy on the loop's thread."""

    def host_allocator(self) -> None:
        return None


def epoch(loader: Any, mode: str, device: torch.device, acc: torch.Tensor, step_cycles: int = 0) -> int:
    """One epoch of loader, each batch through the step of mode; returns
    the rows."""
    n = 0
    for b in pinned_per_batch(loader, device) if mode == "pin_memory()" else loader:
        img = b["image"]
        n += len(img)
        if mode == "cpu":
            continue
        if mode == "cpu + .to()":
            img = img.to(device)
        if step_cycles:
            torch.cuda._sleep(step_cycles)  # the GPU busy with a training step
        acc += img.float().mean()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return n


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", type=Path, required=True, help="the data of bench_loaders.py --generate sdk (made if missing)")
    p.add_argument("--images", type=int, default=10000)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--epochs", type=int, default=2, help="measured epochs per contender and round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--device", default="cuda")
    p.add_argument("--step-ms", type=float, default=0.0, help="make each step keep the GPU busy about this long "
                   "first (torch.cuda._sleep, at --clock-ghz): a training step, which a copy on the default stream "
                   "waits for and one on a side stream overlaps")
    p.add_argument("--clock-ghz", type=float, default=1.98, help="the GPU's clock, for --step-ms")
    args = p.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit(f"bench_cuda: --device {args.device}: CUDA is not available (torch {torch.__version__})")
    paths = bench_loaders.prepare_sdk(args.dir, args)
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "none"
    print(f"bench_cuda: {os.cpu_count()} cores, GPU {gpu}, torch {torch.__version__}, loch {loch.__version__}; "
          f"{args.images} images {args.size}x{args.size}, batch size {args.batch_size}, {args.epochs} epochs x "
          f"{args.rounds} rounds, GPU step {args.step_ms:g} ms, load {os.getloadavg()[0]:.2f}")  # fmt: skip
    acc = torch.zeros((), device=device)
    step_cycles = int(args.step_ms * args.clock_ghz * 1e6)
    modes = ["cpu", "cpu + .to()", "device=", "device= staging", "pin_memory()"]
    for name, transform in (("loch-lz4", None), ("loch-jpeg", {"image": "decode"})):
        ds = loch.open(paths[name])
        loaders = {
            m: ds.pytorch(batch_size=args.batch_size, shuffle=True, seed=0, columns=["image", "label"],
                          transform=transform, device=args.device if m.startswith("device=") else None)
            for m in modes
        }  # fmt: skip
        loaders["device= staging"]._ops = NoPool(device)
        for m in modes:
            epoch(loaders[m], m, device, acc)  # warm-up: page cache, CUDA kernels, pinned pool
        rates: dict[str, list[float]] = {m: [] for m in modes}
        stats: dict[str, dict[str, Any]] = {}
        for r in range(args.rounds):
            for m in modes if r % 2 == 0 else modes[::-1]:
                t0 = time.perf_counter()
                n = sum(epoch(loaders[m], m, device, acc, step_cycles) for _ in range(args.epochs))
                rates[m].append(n / (time.perf_counter() - t0))
                stats[m] = loaders[m].stats()
        base = statistics.median(rates["cpu"])
        print(f"\n{name}{' + decode' if transform else ''}: samples/s (median of {args.rounds} rounds), x cpu, "
              "loader statistics of the last epoch")  # fmt: skip
        print(f"  {'contender':14} {'samples/s':>10} {'x cpu':>6}  {'rounds':26} {'wait_share':>10} "
              f"{'first batch ms':>14} {'fetch ms':>8} {'decode ms':>9} {'elapsed ms':>10}")  # fmt: skip
        for m in modes:
            med, s = statistics.median(rates[m]), stats[m]
            rounds = " ".join(f"{v:.0f}" for v in rates[m])
            print(f"  {m:14} {med:10.0f} {med / base:6.3f}  {rounds:26} {s.get('wait_share', 0):10.3f} "
                  f"{s.get('first_batch_ns', 0) / 1e6:14.1f} {s.get('fetch_ns', 0) / 1e6:8.1f} "
                  f"{s.get('decode_ns', 0) / 1e6:9.1f} {s.get('elapsed_ns', 0) / 1e6:10.1f}")  # fmt: skip
        print(f"  device= pinned pool: {loaders['device='].pinned_stats()}")
        ds.close()
    print(f"\n(checksum {float(acc):.1f}; load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
