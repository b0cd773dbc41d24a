"""Issue 15's benchmarks, each beside its baseline in the same run:

1. loch.ray.write of N png images from 8 Ray tasks (one commit) against
   the single-process ``loch ingest imagefolder`` of the same files;
2. loch.ray.read throughput against ``loch scan`` of the same dataset;
3. loch.from_huggingface of an N-row image dataset against Hugging Face's
   own ``save_to_disk`` of it.

    .venv/bin/python python/bench/bench_scaleout.py --images 20000

Prints one JSON object. Ray runs locally with ``num_cpus=2``.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image as PILImage

import loch
from loch.query import cli


def make_images(root: Path, n: int, size: int) -> list[tuple[str, int]]:
    rng = np.random.default_rng(1)
    out = []
    for i in range(n):
        label = i % 10
        d = root / f"class{label}"
        d.mkdir(parents=True, exist_ok=True)
        p = d / f"{i:06d}.png"
        PILImage.fromarray(rng.integers(0, 255, (size, size, 3), np.uint8)).save(p, format="PNG")
        out.append((str(p), label))
    return out


def timed(fn: Any) -> tuple[Any, float]:
    t = time.perf_counter()
    r = fn()
    return r, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=20000)
    ap.add_argument("--size", type=int, default=32)
    args = ap.parse_args()
    import datasets
    import ray

    import loch.ray as lray

    res: dict[str, Any] = {"images": args.images, "size": args.size}
    with tempfile.TemporaryDirectory(prefix="loch-scaleout-") as tmp:
        root = Path(tmp)
        files = make_images(root / "imgs", args.images, args.size)

        _, res["ingest_s"] = timed(lambda: subprocess.run(
            [cli(), "ingest", "imagefolder", str(root / "imgs"), str(root / "single"), "-q"], check=True, capture_output=True))  # fmt: skip

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
        names = [f"class{i}" for i in range(10)]
        schema = {"image": loch.Image("png"), "label": loch.ClassLabel(names)}

        def load(batch: dict[str, np.ndarray]) -> dict[str, Any]:
            return {"image": np.array([Path(p).read_bytes() for p in batch["path"]], dtype=object),
                    "label": batch["label"].astype(np.int64)}  # fmt: skip

        rds = ray.data.from_items([{"path": p, "label": lab} for p, lab in files], override_num_blocks=8).map_batches(load)
        _, res["ray_write_s"] = timed(lambda: lray.write(rds, str(root / "ray"), schema=schema, mode="create"))
        assert len(loch.open(str(root / "ray"))) == args.images

        def ray_read() -> int:
            n = 0
            for b in lray.read(str(root / "ray")).iter_batches(batch_size=1024):
                n += len(b["label"])
            return n

        n, res["ray_read_s"] = timed(ray_read)
        assert n == args.images
        scan = subprocess.run([cli(), "scan", str(root / "ray"), "--json"], check=True, capture_output=True, text=True)
        res["scan_rows_per_s"] = json.loads(scan.stdout)["rows_per_s"]
        res["ray_read_rows_per_s"] = args.images / res["ray_read_s"]
        ray.shutdown()

        feats = datasets.Features({"image": datasets.Image(), "label": datasets.ClassLabel(names=names)})
        hf = datasets.Dataset.from_dict(
            {"image": [{"bytes": Path(p).read_bytes(), "path": None} for p, _ in files], "label": [lab for _, lab in files]},
            features=feats)  # fmt: skip
        _, res["hf_save_to_disk_s"] = timed(lambda: hf.save_to_disk(str(root / "hf")))
        _, res["from_huggingface_s"] = timed(lambda: loch.from_huggingface(hf, str(root / "fromhf")))
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
