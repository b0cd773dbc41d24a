"""The PyTorch adapter: tensors without copies, DataLoader workers under
every start method, DDP under torchrun, resume."""

from __future__ import annotations

import json
import pickle
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from conftest import ROWS, resume_run, run_script, run_torchrun  # noqa: E402

import loch  # noqa: E402
from loch.torch import TorchLoader, _tensor, _Transfer, distributed_world  # noqa: E402


def test_batches_are_tensors(rows_ds: loch.Dataset) -> None:
    loader = rows_ds.pytorch(batch_size=64, shuffle=True, seed=0)
    assert isinstance(loader, torch.utils.data.IterableDataset)
    n = 0
    for b in loader:
        assert b["x"].dtype == torch.float32 and b["x"].shape[1:] == (3,)
        assert b["index"].dtype == torch.int64
        assert torch.equal(b["y"], b["index"])
        assert isinstance(b["s"], list)
        n += len(b["index"])
    assert n == ROWS
    assert len(loader) == 16
    assert loader.stats()["samples"] == ROWS


def test_no_copy(rows_ds: loch.Dataset) -> None:
    a = np.arange(6, dtype=np.float32)
    assert _tensor(a).data_ptr() == a.ctypes.data
    before = loch.buffer_stats()["live"]
    (batch,) = list(rows_ds.pytorch(batch_size=ROWS, columns=["x"]))
    x = batch["x"]
    del batch
    assert loch.buffer_stats()["live"] - before >= ROWS * 3 * 4  # the tensor holds the Go-filled buffer
    x.add_(1)  # writable
    del x
    assert loch.buffer_stats()["live"] == before


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int16", "uint16", "uint32", "uint64", "float16", "bfloat16"])
def test_dtypes(tmp_path: Path, dtype: str) -> None:
    ds = loch.create(str(tmp_path / "ds"), schema={"a": loch.Tensor(dtype, shape=(2,))})
    values = np.ones((4, 2), dtype=loch.dtypes.numpy_dtype(dtype))
    ds.extend({"a": values})
    ds.commit()
    (b,) = list(ds.pytorch(batch_size=4))
    want = torch.bfloat16 if dtype == "bfloat16" else getattr(torch, dtype)
    assert b["a"].dtype == want
    assert b["a"].float().sum().item() == 8


def test_resume_through_state_dict(rows_ds: loch.Dataset) -> None:
    def make() -> TorchLoader:
        return rows_ds.pytorch(batch_size=25, shuffle=True, seed=11)

    whole = [b["index"].tolist() for b in make()]
    loader = make()
    it = iter(loader)
    head = [next(it)["index"].tolist() for _ in range(9)]
    state = json.loads(json.dumps(loader.state_dict()))  # survives a checkpoint
    del it
    resumed = make()
    resumed.load_state_dict(state)
    assert head + [b["index"].tolist() for b in resumed] == whole


def test_epochs(rows_ds: loch.Dataset) -> None:
    def order(epoch: int) -> list[int]:
        return [i for b in rows_ds.numpy(batch_size=100, shuffle="full", seed=1, epoch=epoch) for i in b["index"]]

    loader = rows_ds.pytorch(batch_size=100, shuffle="full", seed=1)
    first = torch.cat([b["index"] for b in loader])
    second = torch.cat([b["index"] for b in loader])
    assert first.tolist() == order(0) and second.tolist() == order(1), "iterating again advances the epoch"
    assert sorted(first.tolist()) == sorted(second.tolist()) == list(range(ROWS))
    for e in (7, 3):
        loader.set_epoch(e)
        assert torch.cat([b["index"] for b in loader]).tolist() == order(e)
    assert loader.epoch == 4


def test_device_and_pin_memory_on_cpu(rows_ds: loch.Dataset) -> None:
    (b,) = list(rows_ds.pytorch(batch_size=ROWS, columns=["x"], device="cpu"))
    assert b["x"].device.type == "cpu"
    if not torch.cuda.is_available():
        with pytest.warns(UserWarning, match="pin_memory"):
            (b,) = list(rows_ds.pytorch(batch_size=ROWS, columns=["x"], pin_memory=True))


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
@pytest.mark.parametrize("device", ["cuda", "cuda:0", torch.device("cuda", 1)])
def test_cuda_without_cuda_is_a_clear_error(rows_ds: loch.Dataset, device: object) -> None:
    with pytest.raises(loch.InvalidArgument, match=r"device=.*cuda.*: CUDA is not available \(") as e:
        rows_ds.pytorch(batch_size=8, device=device)  # type: ignore[arg-type]
    assert "leave device out" in str(e.value)
    mixture = loch.mix([rows_ds], [1.0])
    with pytest.raises(loch.InvalidArgument, match="CUDA is not available"):
        mixture.pytorch(device="cuda")


def test_unknown_device_is_a_clear_error(rows_ds: loch.Dataset) -> None:
    with pytest.raises(loch.InvalidArgument, match="device='tpu0': not a torch device"):
        rows_ds.pytorch(device="tpu0")


@pytest.mark.skipif(torch.backends.mps.is_available(), reason="MPS is available here")
def test_mps_without_mps_is_a_clear_error(rows_ds: loch.Dataset) -> None:
    with pytest.raises(loch.InvalidArgument, match=r"device='mps': MPS is not available \(torch.backends.mps"):
        rows_ds.pytorch(batch_size=8, device="mps")


@pytest.mark.skipif(hasattr(torch, "xpu") and torch.xpu.is_available(), reason="XPU is available here")
def test_a_backend_torch_lacks_is_a_clear_error(rows_ds: loch.Dataset) -> None:
    with pytest.raises(loch.InvalidArgument, match="device='xpu': torch cannot place tensors there"):
        rows_ds.pytorch(batch_size=8, device="xpu")


def test_distributed_as_a_list_is_a_rank(rows_ds: loch.Dataset) -> None:
    def ids(distributed: Any) -> list[int]:
        return torch.cat([b["index"] for b in rows_ds.pytorch(batch_size=100, distributed=distributed)]).tolist()

    half = ids([1, 2])
    assert half == ids((1, 2))
    assert len(half) == (ROWS + 1) // 2  # padded by repeating a row
    assert set(half) | set(ids([0, 2])) == set(range(ROWS))
    assert len(set(half) & set(ids([0, 2]))) == 1


@pytest.mark.parametrize(
    ("distributed", "message"),
    [("yes", "got str"), ([1, 2, 3], "got list"), ((1.0, 2), "got tuple"), ((True, 2), "got tuple"),
     ({"rank": 0}, "got dict"), ((2, 2), "0 <= rank < world_size"), ((0, 0), "world_size >= 1")],
)  # fmt: skip
def test_bad_distributed_values_are_refused(rows_ds: loch.Dataset, distributed: Any, message: str) -> None:
    with pytest.raises(loch.InvalidArgument, match=re.escape(f"distributed={distributed!r}: want")) as e:
        rows_ds.pytorch(batch_size=10, distributed=distributed)
    assert message in str(e.value)
    with pytest.raises(loch.InvalidArgument, match="distributed="):
        distributed_world(distributed)


def test_pickles_without_its_handle(rows_ds: loch.Dataset) -> None:
    loader = rows_ds.pytorch(batch_size=100)
    copy = pickle.loads(pickle.dumps(loader))
    assert copy._dataset is None
    assert sum(len(b["index"]) for b in copy) == ROWS


def test_a_pickled_dataset_is_its_snapshot(rows_ds: loch.Dataset) -> None:
    copy = pickle.loads(pickle.dumps(rows_ds))
    assert copy.read_only and copy.version == rows_ds.version and copy.url == rows_ds.url
    assert len(copy) == ROWS and copy[5]["s"] == "row 5"
    mem = loch.create("mem://pickled", schema={"n": loch.Tensor("int64", shape=())})
    with pytest.raises(TypeError, match="in-memory dataset"):
        pickle.dumps(mem)


def test_distributed_world_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    assert distributed_world(False) == (0, 1)
    assert distributed_world((2, 5)) == (2, 5)
    assert distributed_world([2, 5]) == (2, 5)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert distributed_world(None) == (0, 1)
    with pytest.raises(loch.InvalidArgument):
        distributed_world(True)
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    assert distributed_world(None) == (3, 4)


DATALOADER = """
    import json, sys
    import torch, loch

    def main():
        method, persistent, path = sys.argv[1], sys.argv[2] == "persistent", sys.argv[3]
        ds = loch.open(path)  # the parent loads the Go runtime before the workers start
        loader = ds.pytorch(batch_size=16, shuffle=True, seed=4)
        dl = torch.utils.data.DataLoader(loader, batch_size=None, num_workers=2, multiprocessing_context=method,
                                         persistent_workers=persistent)
        passes = []  # (the epoch the pass should deliver, its batches' row ids)

        def run(epoch, over=dl):
            passes.append((epoch, [b["index"].tolist() for b in over]))

        run(0)
        run(1)                         # iterating again: the next epoch
        loader.set_epoch(5)
        run(5)                         # set_epoch sets the next pass's epoch exactly
        run(6)
        for _ in dl:                   # a pass left early takes its epoch too
            break
        run(8)
        if method == "fork" and not persistent:
            # Passes whose base seeds repeat (a generator seeded alike each time).
            for _ in range(2):
                g = torch.Generator().manual_seed(0)
                run(None, torch.utils.data.DataLoader(loader, batch_size=None, num_workers=2, generator=g,
                                                      multiprocessing_context=method))
        # What the workers of a pass over epoch e deliver: each one's split
        # of the epoch (the numpy loader over the same settings).
        splits = [ds.numpy(batch_size=16, shuffle=True, seed=4, split=(w, 2)) for w in range(2)]
        want = {}
        for e in range(12):
            for s in splits:
                s.set_epoch(e)
            want[e] = sorted(b["index"].tolist() for s in splits for b in s)
        print(json.dumps({"passes": passes, "want": want, "next": loader.epoch, "len": len(dl)}))

    if __name__ == "__main__":
        main()
"""


@pytest.mark.parametrize(("method", "workers"), [("fork", "transient"), ("fork", "persistent"),
                                                ("spawn", "transient"), ("spawn", "persistent"),
                                                ("forkserver", "transient")])  # fmt: skip
def test_dataloader_workers_advance_the_epoch(tmp_path: Path, rows_path: Path, method: str, workers: str) -> None:
    proc = run_script(tmp_path, DATALOADER, method, workers, str(rows_path), timeout=240)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    want = {int(e): batches for e, batches in out["want"].items()}
    assert len({json.dumps(b) for b in want.values()}) == len(want), "the epochs' orders differ"
    last = None
    for epoch, batches in out["passes"]:
        rows = Counter(i for b in batches for i in b)
        assert set(rows) == set(range(ROWS)) and max(rows.values()) == 1, "every row exactly once"
        if epoch is None:  # the next epoch after the last pass
            epoch = last + 1
        assert sorted(batches) == want[epoch], f"a pass delivers epoch {epoch}'s batches"
        last = epoch
    assert out["next"] == last + 1, "the main process sees the epoch the workers advanced"
    assert out["len"] == len(want[0])


DDP = """
    import json, os, sys
    import torch, torch.distributed as dist, loch

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    ds = loch.open(sys.argv[1])
    shards = {}
    for drop_last in (False, True):
        loader = ds.pytorch(batch_size=8, shuffle=True, seed=3, drop_last=drop_last, columns=["x", "y"])
        assert (loader.rank, loader.world_size) == (rank, world)
        ids = [i for b in loader for i in b["index"].tolist()]
        gathered = [None] * world
        dist.all_gather_object(gathered, ids)
        shards[str(drop_last)] = gathered

    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, b in enumerate(ds.pytorch(batch_size=8, shuffle=True, seed=3, columns=["x", "y"])):
        loss = (model(b["x"] / 1000).squeeze(1) - b["y"].float() / 1000).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 2:
            break
    weights = [None] * world
    dist.all_gather_object(weights, model.module.weight.detach().tolist())
    if rank == 0:
        print(json.dumps({"shards": shards, "weights": weights}))
    dist.barrier()  # no rank tears gloo down while another still uses it (an abort at exit under load)
    dist.destroy_process_group()
"""


@pytest.mark.slow
def test_torchrun_ddp(tmp_path: Path, rows_path: Path) -> None:
    out = run_torchrun(tmp_path, DDP, str(rows_path), nproc=3)
    padded, dropped = out["shards"]["False"], out["shards"]["True"]
    assert len({len(s) for s in padded}) == 1 and len(padded[0]) == -(-ROWS // 3)
    rows = Counter(i for s in padded for i in s)
    assert set(rows) == set(range(ROWS)), "the union is every row"
    assert sum(rows.values()) - ROWS == -ROWS % 3, "only the padding repeats rows"
    assert len({len(s) for s in dropped}) == 1
    assert max(Counter(i for s in dropped for i in s).values()) == 1, "with drop_last the shards are disjoint"
    assert out["weights"][0] == out["weights"][1] == out["weights"][2], "DDP kept the replicas in step"


MAP_STYLE = """
    import json, sys
    import torch, loch

    def main():
        method, path = sys.argv[1], sys.argv[2]
        ds = loch.open(path)  # the parent loads the Go runtime before the workers start
        seen = []
        # Batches of rows: the workers read them with Dataset.__getitems__.
        for b in torch.utils.data.DataLoader(ds, batch_size=50, num_workers=2, multiprocessing_context=method):
            seen += [[y, x, s] for y, x, s in zip(b["y"].tolist(), b["x"].tolist(), b["s"])]
        # Single rows: ds[i].
        single = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context=method)
        rows = [[int(r["y"]), r["x"].tolist(), r["s"]] for r in single]
        print(json.dumps({"batched": seen, "single": rows}))

    if __name__ == "__main__":
        main()
"""


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_map_style_dataloader_workers(tmp_path: Path, rows_path: Path, method: str) -> None:
    proc = run_script(tmp_path, MAP_STYLE, method, str(rows_path), timeout=180)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    want = [[i, [i, 2 * i, 3 * i], f"row {i}"] for i in range(ROWS)]
    assert out["batched"] == want, "every row once, in order, with its values"
    assert out["single"] == want


@pytest.mark.parametrize("when", ["while iterating", "after a break", "holding the last batch"])
def test_resume_when_the_transfer_runs_a_batch_ahead(rows_ds: loch.Dataset, monkeypatch: pytest.MonkeyPatch,
                                                     when: str) -> None:  # fmt: skip
    """With device="cuda" the next batch is taken from the loader (and sent
    to the GPU) while the loop has the current one; state_dict is still the
    state after the batches the loop got. Here on the CPU, the transfer
    made to run ahead as it does with a side stream (python/gpu_tests runs
    the real one)."""
    init = _Transfer.__init__

    def ahead(self: _Transfer, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.ahead = True

    monkeypatch.setattr(_Transfer, "__init__", ahead)

    def make() -> TorchLoader:
        return rows_ds.pytorch(batch_size=25, shuffle=True, seed=11, device="cpu")

    whole, taken, loader, resumed = resume_run(make, 9 if when != "holding the last batch" else None, when)
    assert taken == whole
    fresh = make()
    fresh.set_epoch(1)
    assert [b["index"].tolist() for b in resumed] == [b["index"].tolist() for b in fresh], "then epoch 1"
    loader.set_epoch(0)
    assert loader.state_dict()["loader"] == make().state_dict()["loader"], "set_epoch drops the state held back"
