#!/usr/bin/env python3
"""Questions about ``ds.pytorch(device="cuda")`` that a test cannot assert
on every machine, answered on this one and printed (run.sh runs it after
the tests; it fails only when a probe cannot run at all):

record_stream
    Does the side-stream test (test_batches_kept_while_the_gpu_lags_stay_correct)
    see the hazard it guards against? The same loop, with
    ``Tensor.record_stream`` made a no-op: wrong sums show that the
    allocator reused a batch's memory while the consumer's stream still
    read it, so the test would catch a missing record_stream here.
dataloader
    ``DataLoader(ds.pytorch(device="cuda"), batch_size=None,
    num_workers=2)``, under fork and spawn: what a user gets who hands the
    device loader to workers (each worker would copy to the GPU itself).

    python python/gpu_tests/probe_cuda.py [--dir /tmp/probe]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import torch

import loch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from conftest import expected, make_dataset  # noqa: E402


def lagging_sums(path: str, device: torch.device) -> tuple[int, int]:
    """The side-stream loop of the test: (wrong batch sums, batches)."""
    sums = []
    ds = loch.open(path)
    for b in ds.pytorch(batch_size=16, shuffle=True, seed=7, columns=["x", "img"], device=device.type):
        torch.cuda._sleep(2_000_000)
        sums.append((b["index"], b["x"].sum(dim=1), b["img"].flatten(1).double().sum(dim=1)))
        del b
    torch.cuda.synchronize(device)
    wrong = 0
    for index, x, img in sums:
        want = expected(index.cpu().numpy())
        ok = torch.equal(x.cpu(), torch.from_numpy(want["x"].sum(axis=1)))
        ok = ok and torch.equal(img.cpu(), torch.from_numpy(want["img"].reshape(len(index), -1).astype(np.float64).sum(1)))
        wrong += not ok
    ds.close()
    return wrong, len(sums)


def probe_record_stream(path: str, device: torch.device) -> None:
    wrong, n = lagging_sums(path, device)
    print(f"record_stream: as shipped, {wrong} of {n} batch sums wrong")
    real = torch.Tensor.record_stream
    torch.Tensor.record_stream = lambda self, stream: None  # type: ignore[method-assign,assignment]
    try:
        wrong, n = lagging_sums(path, device)
    finally:
        torch.Tensor.record_stream = real  # type: ignore[method-assign]
    verdict = ("the test sees the hazard here" if wrong else
               "the allocator did not reuse the memory in time: the test cannot prove record_stream on this machine")
    print(f"record_stream: made a no-op, {wrong} of {n} batch sums wrong ({verdict})")


# The main guard matters under spawn: each worker imports this script.
DATALOADER = """
import sys, torch, torch.utils.data, loch
if __name__ == "__main__":
    ds = loch.open(sys.argv[1])
    dl = torch.utils.data.DataLoader(ds.pytorch(batch_size=64, device="cuda"), batch_size=None, num_workers=2,
                                     multiprocessing_context=sys.argv[2])
    torch.cuda.init()
    devices, n = set(), 0
    for b in dl:
        devices.add(str(b["x"].device)); n += len(b["index"])
    print(f"{n} rows, tensors on {sorted(devices)}")
"""


def probe_dataloader(path: str, tmp: Path) -> None:
    script = tmp / "dataloader.py"
    script.write_text(textwrap.dedent(DATALOADER))
    for method in ("fork", "spawn"):
        try:
            p = subprocess.run([sys.executable, str(script), path, method], capture_output=True, text=True, timeout=25)
            out = p.stdout.strip().splitlines()[-1:] if p.returncode == 0 else p.stderr.strip().splitlines()[-3:]
            print(f"dataloader({method}): exit {p.returncode}: " + " | ".join(out))
        except subprocess.TimeoutExpired:
            print(f"dataloader({method}): still running after 25 s (a hang?)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", type=Path, help="where to make the dataset (default: a temporary directory)")
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit(f"probe_cuda: CUDA is not available (torch {torch.__version__})")
    with tempfile.TemporaryDirectory(prefix="loch-probe-") as tmp:
        d = args.dir or Path(tmp)
        path = d / "ds"
        if not path.exists():
            make_dataset(path, rows=4000)
        probe_record_stream(str(path), torch.device("cuda"))
        probe_dataloader(str(path), Path(tmp))


if __name__ == "__main__":
    main()
