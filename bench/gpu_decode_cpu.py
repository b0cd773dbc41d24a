"""decode="gpu" against the Go loader's decode, same JPEGs, interleaved
A/B in one run (the Go loader is the baseline):

    python bench/gpu_decode_cpu.py /tmp/jpegs [SPEC] [--device cuda]

Makes /tmp/jpegs (512 photo-like 352x264 JPEGs, quality 90) unless it
exists, then times three passes of each path and prints the best images/s
of each, their ratio and the load. Without --device the decode="gpu" path
runs on the CPU (torchvision's decoder standing in for nvJPEG); with
--device cuda it is nvJPEG on the GPU, batches landing there.
"""

from __future__ import annotations

import argparse
import io
import os
import time

import numpy as np
import torch
from PIL import Image

import loch


def make(path: str, n: int = 512) -> None:
    """n photo-like JPEGs: upsampled noise plus fine texture."""
    ds = loch.create(path, schema={"image": loch.Image("jpeg")})
    rng = np.random.default_rng(0)
    images = []
    for _ in range(n):
        coarse = Image.fromarray(rng.integers(0, 256, (33, 44, 3), dtype=np.uint8)).resize((352, 264), Image.BICUBIC)
        a = np.clip(np.asarray(coarse, dtype=np.float32) + rng.normal(0, 12, (264, 352, 3)), 0, 255)
        out = io.BytesIO()
        Image.fromarray(a.astype(np.uint8)).save(out, "JPEG", quality=90)
        images.append(loch.EncodedImage(out.getvalue()))
    ds.extend({"image": images})
    ds.commit("jpegs")


def rate(ds: loch.Dataset, spec: str, decode: str, device: str | None) -> float:
    """Images per second of one pass."""
    t, n = time.perf_counter(), 0
    for b in ds.pytorch(batch_size=64, transform={"image": spec}, decode=decode, device=device):
        n += len(b["index"])
    if device is not None and device.startswith("cuda"):
        torch.cuda.synchronize()
    return n / (time.perf_counter() - t)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path")
    p.add_argument("spec", nargs="?", default="random_resized_crop=224,flip,to_float,normalize=imagenet,chw")
    p.add_argument("--device", default=None)
    a = p.parse_args()
    if not os.path.exists(a.path):
        make(a.path)
    ds = loch.open(a.path)
    best = {"cpu": 0.0, "gpu": 0.0}
    for _ in range(3):
        for mode in best:
            best[mode] = max(best[mode], rate(ds, a.spec, mode, a.device))
    load = open("/proc/loadavg").read().split()[:3]
    print(f"{a.spec}: Go decode {best['cpu']:.0f} img/s, decode='gpu' on {a.device or 'cpu'} {best['gpu']:.0f} img/s, "
          f"ratio {best['gpu'] / best['cpu']:.2f}; torch threads {torch.get_num_threads()}, load {' '.join(load)}")


if __name__ == "__main__":
    main()
