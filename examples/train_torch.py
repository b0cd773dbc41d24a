"""Trains a small image classifier on a loch dataset streamed with
ds.pytorch(), printing samples/s and the share of time the training loop
waited for data after each epoch.

    python examples/train_torch.py .demo/pets --epochs 1
    python examples/train_torch.py .demo/lake --table frames \
        --sql "SELECT f._rowid, f.image, l.label FROM frames f JOIN labels l USING (class)"   # a catalog's join
    python examples/train_torch.py s3://bucket/pets --device cuda --model resnet18
    torchrun --nproc_per_node=2 examples/train_torch.py .demo/pets   # DDP

The dataset needs an image column (HWC uint8) and a class_label column; they
are found by kind unless --image/--label name them. With --sql, the first
argument is a catalog root and the rows are the query's (a selection of
--table); the label may be a column of another table of a join (a joined
column, docs/sql.md), named --label or "label".
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import loch


def small_cnn(classes: int) -> nn.Module:
    """Three strided convolutions and a linear head: quick on a CPU."""

    def block(cin: int, cout: int) -> nn.Module:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=2, padding=1), nn.BatchNorm2d(cout), nn.ReLU())

    return nn.Sequential(block(3, 32), block(32, 64), block(64, 128), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(128, classes))  # fmt: skip


def make_model(name: str, classes: int) -> nn.Module:
    if name == "small":
        return small_cnn(classes)
    import torchvision  # an optional dependency

    return getattr(torchvision.models, name)(num_classes=classes)


def column_of(ds: loch.Dataset, kind: str, given: str | None) -> str:
    if given:
        return given
    for name, col in ds.schema.items():
        if col.kind == kind:
            return name
    raise SystemExit(f"{ds.url} has no {kind} column; name one with --{'image' if kind == 'image' else 'label'}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dataset", help="dataset URL or path")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--model", default="small", help="small, or a torchvision model name (resnet18, ...)")
    p.add_argument("--max-steps", type=int, default=0, help="stop each epoch after this many steps (0: no limit)")
    p.add_argument("--workers", type=int, default=0, help="DataLoader workers (0: iterate the loader itself)")
    p.add_argument("--image")
    p.add_argument("--label")
    p.add_argument("--selection", help="train on this saved selection (loch query --save) instead of every row")
    p.add_argument("--sql", help="the dataset argument is a catalog root: train on the rows of this SELECT")
    p.add_argument("--table", help="with --sql: the table whose rows a join selects")
    args = p.parse_args()

    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        torch.distributed.init_process_group("nccl" if args.device == "cuda" else "gloo")
    rank = torch.distributed.get_rank() if distributed else 0
    device = torch.device(args.device)
    if device.type == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)

    joined: dict = {}
    if args.sql:  # a catalog's query: a selection of one table, maybe with joined columns
        source = loch.connect(args.dataset, create=False).query(args.sql, table=args.table, seed=0)
        ds = source.dataset
        joined = {j["name"]: j for j in source.joined}
    else:
        ds = loch.open(args.dataset)
        source = ds.selection(args.selection) if args.selection else ds  # a curated subset, at the version it ran on
    image = column_of(ds, "image", args.image)
    if (args.label or "label") in joined:  # the label of another table of the join
        label = args.label or "label"
        names = joined[label].get("class_names")
        classes = len(names) if names else int(source.joined_values()[label].max()) + 1
    else:
        label = column_of(ds, "class_label", args.label)
        names = ds.schema[label].class_names
        classes = len(names) if names else int(max(ds[label][:])) + 1
    loader = source.pytorch(batch_size=args.batch_size, shuffle=True, seed=0, columns=[image, label], drop_last=True,
                            device=device if args.workers == 0 else None)  # fmt: skip
    batches: object = loader
    if args.workers > 0:
        batches = torch.utils.data.DataLoader(loader, batch_size=None, num_workers=args.workers,
                                              pin_memory=device.type == "cuda")

    model = make_model(args.model, classes).to(device).to(memory_format=torch.channels_last)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    if rank == 0:
        what = f"{ds.url} selection {args.selection}" if args.selection else f"{args.dataset}: {args.sql}" if args.sql else ds.url
        print(f"{what}: {len(source)} rows, {classes} classes, {len(loader)} batches of {args.batch_size} per epoch"
              f"{f' on each of {loader.world_size} ranks' if distributed else ''}, device {device}")  # fmt: skip

    for epoch in range(args.epochs):
        loader.set_epoch(epoch)
        model.train()
        seen = steps = 0
        loss_sum = torch.zeros((), device=device)  # summed on the device: no sync per step
        correct = torch.zeros((), device=device, dtype=torch.int64)
        t0 = time.perf_counter()
        for batch in batches:  # type: ignore[attr-defined]
            x = batch[image].to(device, non_blocking=True).permute(0, 3, 1, 2).float().div_(255)
            y = batch[label].to(device, non_blocking=True).long()
            out = model(x.contiguous(memory_format=torch.channels_last))
            loss = F.cross_entropy(out, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            steps += 1
            seen += len(y)
            loss_sum += loss.detach() * len(y)
            correct += (out.argmax(1) == y).sum()
            if args.max_steps and steps >= args.max_steps:
                break
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        elapsed = time.perf_counter() - t0
        stats = loader.stats() if args.workers == 0 else {}
        if rank == 0:
            wait = f"{stats['wait_share']:.1%}" if "wait_share" in stats else "n/a (DataLoader workers)"
            gpu = ""
            if device.type == "cuda":
                with contextlib.suppress(Exception):  # needs pynvml
                    gpu = f", GPU utilisation {torch.cuda.utilization(device)}%"
            print(f"epoch {epoch}: {steps} steps, {seen / elapsed:.0f} samples/s, waited for data {wait}{gpu}, "
                  f"loss {loss_sum.item() / max(seen, 1):.3f}, accuracy {correct.item() / max(seen, 1):.1%}")
    if distributed:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
