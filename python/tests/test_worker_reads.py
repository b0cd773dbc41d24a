"""PyTorch DataLoader workers divide a rank's reading between them: k
workers fetch about what one does, each row once per epoch (issue 10,
point 3). Each worker's Go loader statistics come back to the main process
through TorchLoader.worker_stats()."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np
import pytest
from conftest import run_script

import loch

pytest.importorskip("torch")

CHUNK_ROWS = 32  # rows of 1 KiB per 32 KiB chunk
CHUNKS = 48
ROWS = CHUNK_ROWS * CHUNKS
BATCH = 24  # batches straddle chunks
WORKERS = (1, 2, 4)
SHUFFLES = ("none", "block")

PASSES = """
    import json, sys
    import torch, loch

    def main():
        ds = loch.open(sys.argv[1])  # the parent loads the Go runtime before the workers start
        out = {}
        for shuffle in sys.argv[2].split(","):
            for k in map(int, sys.argv[3].split(",")):
                loader = ds.pytorch(batch_size=int(sys.argv[4]), shuffle=shuffle, seed=1)
                dl = torch.utils.data.DataLoader(loader, batch_size=None, num_workers=k, multiprocessing_context="fork")
                rows = []
                for b in dl:
                    assert torch.equal(b["x"][:, 0].long(), b["index"]), "each row's own values"
                    rows += b["index"].tolist()
                out[f"{shuffle}/{k}"] = {"rows": rows, "workers": loader.worker_stats()}
        print(json.dumps(out))

    if __name__ == "__main__":
        main()
"""


@pytest.fixture(scope="module")
def passes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One epoch through DataLoader(ds.pytorch(...), num_workers=k) for each
    shuffle mode and k: the rows delivered and each worker's statistics."""
    tmp = tmp_path_factory.mktemp("worker-reads")
    ds = loch.create(str(tmp / "ds"), schema={"x": loch.Tensor("float32", shape=(256,), chunk_bytes=CHUNK_ROWS << 10)})
    ds.extend({"x": np.repeat(np.arange(ROWS, dtype=np.float32)[:, None], 256, axis=1)})
    ds.commit()
    ds.close()
    proc = run_script(tmp, PASSES, str(tmp / "ds"), ",".join(SHUFFLES), ",".join(map(str, WORKERS)), str(BATCH),
                      timeout=240)  # fmt: skip
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def fetched(run: dict[str, Any]) -> int:
    return sum(int(s["bytes_fetched"]) for s in run["workers"])


@pytest.mark.parametrize("shuffle", SHUFFLES)
def test_every_row_once_with_each_worker_count(passes: dict[str, Any], shuffle: str) -> None:
    for k in WORKERS:
        run = passes[f"{shuffle}/{k}"]
        count = Counter(run["rows"])
        assert set(count) == set(range(ROWS)) and set(count.values()) == {1}, f"{k} workers: every row exactly once"
        assert len(run["workers"]) == k, "worker_stats() has each worker's statistics"
        assert sum(s["samples"] for s in run["workers"]) == ROWS
    assert fetched(passes[f"{shuffle}/1"]) >= ROWS << 10, "one worker reads the whole column"


@pytest.mark.parametrize("shuffle", SHUFFLES)
def test_workers_fetch_no_more_than_one(passes: dict[str, Any], shuffle: str) -> None:
    one = fetched(passes[f"{shuffle}/1"])
    for k in WORKERS[1:]:
        total = fetched(passes[f"{shuffle}/{k}"])
        assert total <= 1.1 * one, f"{k} workers fetched {total} bytes together, one worker {one}"
