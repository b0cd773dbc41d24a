#!/usr/bin/env python3
"""Issue 39, target 2: the Python loader against a numpy memmap of the same
decoded pixels read in the same shuffled blocks, and against ``loch
bench`` (the Go loader alone), with builds of loch alternated cell by cell
in one run (A/B), at one or more dataset sizes (target 5).

    python python/bench/bench_memmap.py --dir /tmp/mm --rows 50000 \\
        --build before=/tmp/libs/before --build after=/tmp/libs/after

A build is a directory holding ``libloch.so`` (used through
``LOCH_LIBRARY``) and the ``loch`` command. The data and the cells are
those of ``compare.py`` (its ``make_npy``, ``ingest``, ``loch order``, its
``loch``, ``memmap`` and ``go`` cells: a torch DataLoader with
``num_workers=0`` over ``ds.pytorch()``, over the memmap, and ``loch bench
--no-raw``), plus two without torch: ``numpy`` iterates ``ds.numpy()``,
``memmap_np`` gathers ``images[rows]`` from the memmap in the loader's
order. Every cell runs ``--epochs`` epochs in a fresh interpreter, page
cache warm (each dataset is read once before the rounds); its peak RSS
is the child's ``ru_maxrss``. Prints a markdown table of the medians and
the ratios, and the load average of each round.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import compare

HERE = Path(__file__).resolve()


def _cpu() -> float:
    """This process's CPU seconds (all its threads)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def run_numpy(spec: dict[str, Any]) -> dict[str, Any]:
    """ds.numpy() over the epochs; the consumer keeps nothing."""
    import loch

    ds = loch.open(spec["url"])
    ld = ds.numpy(batch_size=spec["batch"], shuffle=spec["shuffle"], seed=spec["seed"], columns=compare.COLUMNS)
    samples = 0
    t0, c0 = time.perf_counter(), _cpu()
    for e in range(spec["epochs"]):
        ld.set_epoch(e)
        for b in ld:
            samples += len(b["label"])
    s = time.perf_counter() - t0
    return {"samples": samples, "seconds": s, "samples_per_s": samples / s, "cpu_s": _cpu() - c0}


def run_memmap_np(spec: dict[str, Any]) -> dict[str, Any]:
    """images[rows] and labels[rows] from the memmap, batch by batch, in
    the loader's order (positions of the .npy file), without torch."""
    import numpy as np

    import loch

    ids = loch.open(spec["url"]).row_ids()
    pos_of = np.empty(int(ids.max()) + 1, dtype=np.int64)
    pos_of[ids.astype(np.int64)] = np.arange(len(ids))
    orders = [pos_of[np.load(f).astype(np.int64)] for f in spec["order_files"]]
    samples, b = 0, spec["batch"]
    t0, c0 = time.perf_counter(), _cpu()
    for e in range(spec["epochs"]):
        images = np.load(Path(spec["data"]) / "images.npy", mmap_mode="r")
        labels = np.load(Path(spec["data"]) / "labels.npy")
        order = orders[e]
        for s in range(0, len(order), b):
            rows = order[s : s + b]
            batch = {"image": images[rows], "label": labels[rows]}
            samples += len(batch["label"])
        del images
    s = time.perf_counter() - t0
    return {"samples": samples, "seconds": s, "samples_per_s": samples / s, "cpu_s": _cpu() - c0}


TASKS = {**compare.CHILD_TASKS, "numpy": run_numpy, "memmap_np": run_memmap_np}


def child(spec: dict[str, Any], build: Path | None) -> dict[str, Any]:
    """Runs one task in a fresh interpreter with build's library; adds the
    child's peak RSS (MiB)."""
    env = dict(os.environ)
    if build is not None:
        env["LOCH_LIBRARY"] = str(build / "libloch.so")
    p = subprocess.Popen([sys.executable, str(HERE), "--child", json.dumps(spec)], stdout=subprocess.PIPE, env=env,
                         text=True)  # fmt: skip
    assert p.stdout is not None
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError(f"cell {spec['task']} failed ({p.returncode})")
    r = dict(json.loads(out.strip().splitlines()[-1]))
    r["rss_mib"] = ru.ru_maxrss / 1024  # of the child and the loch command it ran, whichever is larger
    if "cpu_s" not in r and "own_cores" in r:
        r["cpu_s"] = r["own_cores"] * r["seconds"]
    return r


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", type=Path)
    p.add_argument("--rows", default="50000", help="comma-separated dataset sizes")
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--classes", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--shuffle", default="block")
    p.add_argument("--codecs", default="none,lz4")
    p.add_argument("--tasks", default="numpy,loch,memmap_np,memmap,go")
    p.add_argument("--build", action="append", default=[], help="NAME=DIR (libloch.so and loch)")
    p.add_argument("--json", help="write the cells here")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        spec = json.loads(args.child)
        print(json.dumps(TASKS[spec.pop("task")](spec)))
        return
    builds = {k: Path(v) for k, v in (b.split("=", 1) for b in args.build)}
    codecs, tasks = args.codecs.split(","), args.tasks.split(",")
    cells: list[dict[str, Any]] = []
    for rows in (int(r) for r in args.rows.split(",")):
        d = args.dir / f"rows-{rows}"
        ns = argparse.Namespace(dir=d, rows=rows, size=args.size, classes=args.classes, data_seed=1, codecs=codecs)
        compare.run_child = lambda spec: child(spec, next(iter(builds.values())))  # ingest with the first build
        if (d / "params.json").exists() and all((d / f"loch-{c}").is_dir() for c in codecs):
            local = {c: str(d / f"loch-{c}") for c in codecs}  # made by an earlier run: reused
        else:
            local = compare.prepare(ns)
        loch_cmd = str(next(iter(builds.values())) / "loch")
        orders = {c: [compare.loch_order(loch_cmd, local[c], args.shuffle, 0, e, args.batch_size,
                                         d / f"order-{c}-{e}.npy") for e in range(args.epochs)] for c in codecs}
        for c in codecs:  # warm the page cache
            subprocess.run(["cat", *map(str, Path(local[c]).rglob("*"))], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)  # fmt: skip
        subprocess.run(["cat", str(d / "images.npy")], stdout=subprocess.DEVNULL, check=True)
        for rnd in range(args.rounds):
            load = os.getloadavg()[0]
            for c in codecs:
                for task in tasks:
                    for name, build in builds.items():
                        if task.startswith("memmap") and name != next(iter(builds)):
                            continue  # the baseline does not depend on the build
                        spec = {"task": task, "url": local[c], "codec": c, "shuffle": args.shuffle, "seed": 0,
                                "batch": args.batch_size, "epochs": args.epochs, "max_seconds": 600,
                                "data": str(d), "loch": str(build / "loch"), "workers": 0, "order_files": orders[c]}
                        r = child(spec, build)
                        r.update(rows=rows, codec=c, task=task, build=name, round=rnd, load1=load, epochs=args.epochs)
                        r.pop("labels", None)
                        cells.append(r)
                        print(f"rows {rows} {c} {task} {name} round {rnd}: {r['samples_per_s']:,.0f} samples/s, "
                              f"RSS {r['rss_mib']:.0f} MiB (load {load:.1f})", file=sys.stderr, flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(cells, indent=1) + "\n")
    report(cells, builds, tasks)


def report(cells: list[dict[str, Any]], builds: dict[str, Path], tasks: list[str]) -> None:
    """Medians per (rows, codec, task, build) of samples/s, CPU time per
    sample (all the cell's threads: less sensitive than wall time to other
    processes on a loaded machine), seconds per epoch and peak RSS; and
    each loch cell over the memmap of the same kind (torch or not) and
    over loch bench of the same build: the median of the rounds' own
    ratios, of samples/s and (in brackets) of CPU per sample."""
    key = lambda r: (r["rows"], r["codec"], r["task"], r["build"])  # noqa: E731
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in cells:
        groups.setdefault(key(r), []).append(r)
    first = next(iter(builds))
    us = lambda r: 1e6 * r["cpu_s"] / r["samples"] if r.get("cpu_s") else None  # noqa: E731

    def ratio(rows: int, codec: str, a: tuple[str, str], b: tuple[str, str]) -> str:
        wall, cpu = [], []
        for rnd in sorted({r["round"] for r in cells}):
            x = [r for r in groups.get((rows, codec, *a), []) if r["round"] == rnd]
            y = [r for r in groups.get((rows, codec, *b), []) if r["round"] == rnd]
            if x and y:
                wall.append(x[0]["samples_per_s"] / y[0]["samples_per_s"])
                if us(x[0]) and us(y[0]):
                    cpu.append(us(y[0]) / us(x[0]))
        if not wall:
            return ""
        return f"{statistics.median(wall):.2f}" + (f" ({statistics.median(cpu):.2f})" if cpu else "")

    print("| rows | codec | cell | build | samples/s | CPU µs/sample | s/epoch | peak RSS MiB | / memmap | / loch bench |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (rows, codec, task, name), rs in sorted(groups.items()):
        sps = statistics.median(r["samples_per_s"] for r in rs)
        cpus = [us(r) for r in rs if us(r)]
        cpu = f"{statistics.median(cpus):.1f}" if cpus else ""
        sec = statistics.median(r["seconds"] / r["epochs"] for r in rs)
        rss = statistics.median(r["rss_mib"] for r in rs)
        base = {"numpy": "memmap_np", "loch": "memmap"}.get(task)
        mm = ratio(rows, codec, (task, name), (base, first)) if base else ""
        go = ratio(rows, codec, (task, name), ("go", name)) if task in ("numpy", "loch") else ""
        print(f"| {rows:,} | {codec} | {task} | {name} | {sps:,.0f} | {cpu} | {sec:.3f} | {rss:.0f} | {mm} | {go} |")


if __name__ == "__main__":
    main()
