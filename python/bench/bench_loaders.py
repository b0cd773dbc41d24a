#!/usr/bin/env python3
"""Benchmarks loch's PyTorch loader against the Go loader and against
``torch.utils.data.DataLoader`` over the same images, printing every
baseline measured in the same run.

    python python/bench/bench_loaders.py                 # 20,000 64x64 images in a temporary directory
    python python/bench/bench_loaders.py --dir /tmp/lb --json /tmp/lb/result.json --idle-load 0.8
    make bench-python BENCH_PYTHON_ARGS="--dir /tmp/lb"

One set of synthetic JPEG images (``examples/makeimages``, quality 90) is
stored four ways under ``--dir``: the JPEG folder itself, a loch dataset
with the images decoded once at ingest and stored with the lz4 chunk codec
(``loch ingest imagefolder --image-compression lz4``), a loch dataset with
the JPEG files kept byte for byte (``--image-compression jpeg``), and one
``.npy`` file per image holding the decoded pixels. Where there is no Go
toolchain (a GPU machine with the wheel), ``--generate sdk`` makes the two
loch datasets alone with the Python SDK from images drawn in numpy the way
makeimages draws them (the jpeg one encoded by loch at ``extend``, not
kept from files), which is enough for ``--only go``; ``--loch loch`` then
takes the wheel's command from PATH. Two comparisons:

``go``
    ``ds.pytorch()`` iterated in the main process against ``loch bench``
    (the Go loader, no Python) on the same dataset, batch size and shuffle,
    over ``--go-epochs`` epochs: the lz4 dataset as is, and the jpeg one
    with the Go ``decode`` transform. Target: Python ≥ 0.95 of Go. Two
    more contenders read the same loader's stream without making arrays:
    from Python through the C ABI (the part of the gap that is not
    Python's), and from a program in C (``stream_floor.c``, compiled here
    when there is a C compiler), the floor under any consumer that runs in
    a thread of its own, as a training loop does, while ``loch bench``'s
    consumer is a goroutine sharing the loader's processors. They run back
    to back in each of ``--go-rounds`` rounds (every other round in reverse
    order); the medians are compared, and so are the rounds' own ratios
    (their median), which a load that changes between rounds disturbs
    less. ``GOMAXPROCS=N`` in the environment gives every contender's Go
    loader N processors: with one fewer than the machine's cores, the
    consumer has a core of its own, as beside a loader that does not use
    every core.
``dataloader``
    ``DataLoader(num_workers=--workers, shuffle=True)`` over torchvision's
    ``ImageFolder`` (PIL decode, ``PILToTensor``) and over a minimal
    ``Dataset`` doing ``np.load`` per sample, against ``ds.pytorch()`` on
    the lz4 dataset (target ≥ 5x the JPEG folder) and on the jpeg dataset
    with ``transform={"image": "decode"}`` (libjpeg-turbo in the Go
    loader; target ≥ 1.5x the JPEG folder).

Every contender runs in a process of its own and does one warm-up epoch
first, which also leaves its files in the page cache; the DataLoader keeps
its workers between epochs (``persistent_workers``), so their start is not
measured. The consumer does nothing with a batch but count its rows. Each
result carries the 1-minute load average before it started and the CPU the
rest of the machine used while it ran ("other cores"): with ``--idle-load``
the script waits before each contender (each round of the Go comparison)
until the load is below that, and a measurement during which other
processes used more than ``--max-other`` cores is taken again.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
COLUMNS = ["image", "label"]

# Targets of the issue: contender -> (baseline, minimum ratio).
DATALOADER_TARGETS = {"loch-lz4": ("jpeg-folder", 5.0), "loch-jpeg": ("jpeg-folder", 1.5)}
GO_TARGET = 0.95


# Measuring.


def _clock_ticks() -> int:
    return os.sysconf("SC_CLK_TCK")


def _machine_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy since boot (all cores)."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / _clock_ticks()


def _proc_stats() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, CPU seconds of the process and its reaped
    children), for every process."""
    out: dict[int, tuple[int, float]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        utime, stime, cutime, cstime = (int(v) for v in rest[11:15])
        out[int(entry.name)] = (int(rest[1]), (utime + stime + cutime + cstime) / _clock_ticks())
    return out


def _tree_cpu_seconds(root: int) -> float:
    """CPU seconds of a process and its descendants, live or reaped."""
    stats = _proc_stats()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += stats[pid][1]
        todo.extend(children.get(pid, []))
    return total


@dataclass
class Meter:
    """Wall time of a measurement, the CPU this process tree used, and the
    CPU the rest of the machine used meanwhile (both in cores)."""

    seconds: float = 0.0
    own_cores: float = 0.0
    other_cores: float = 0.0


@contextmanager
def measure() -> Iterator[Meter]:
    m = Meter()
    busy0, own0, t0 = _machine_busy_seconds(), _tree_cpu_seconds(os.getpid()), time.perf_counter()
    yield m
    m.seconds = time.perf_counter() - t0
    own = _tree_cpu_seconds(os.getpid()) - own0
    busy = _machine_busy_seconds() - busy0
    m.own_cores = own / m.seconds
    m.other_cores = max(0.0, busy - own) / m.seconds


# Contenders, each run in a child process (``--child``).


@dataclass
class Result:
    """One contender's measured epochs."""

    comparison: str
    name: str
    what: str
    samples: int = 0
    seconds: float = 0.0
    samples_per_s: float = 0.0
    own_cores: float = 0.0
    other_cores: float = 0.0
    load1: float = 0.0
    idle: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


def _finish(res: Result, samples: int, m: Meter) -> Result:
    res.samples, res.seconds = samples, m.seconds
    res.samples_per_s = samples / m.seconds if m.seconds > 0 else 0.0
    res.own_cores, res.other_cores = m.own_cores, m.other_cores
    return res


def run_go(res: Result, spec: dict[str, Any]) -> Result:
    """`loch bench --json`: the Go loader alone, after a warm-up epoch in
    the same process (``--warmup 1``, as the Python contenders warm up
    before they measure: a process's first epoch pays for growing its heap
    and pools, and counting it for one side only flatters the other);
    samples/s is the one loch bench reports (from the first measured
    loader's start to the end of the last epoch)."""
    cmd = [spec["loch"], "bench", spec["dataset"], "--columns", ",".join(COLUMNS), "--batch-size",
           str(spec["batch_size"]), "--shuffle", "block", "--no-raw", "--json"]  # fmt: skip
    if spec.get("transform"):
        cmd += ["--transform", f"image={spec['transform']}"]
    with measure() as m:
        out = subprocess.run([*cmd, "--warmup", "1", "--epochs", str(spec["epochs"])], check=True, capture_output=True,
                             text=True)  # fmt: skip
    go = json.loads(out.stdout)
    _finish(res, go["samples"], m)
    res.seconds, res.samples_per_s = go["seconds"], go["samples_per_s"]
    res.extra = {"wait_share": go["wait_share"], "peak_rss_mb": go["peak_rss_mb"], "command": " ".join(cmd)}
    return res


def run_pytorch(res: Result, spec: dict[str, Any]) -> Result:
    """``ds.pytorch()`` iterated in this process (the Go loader's threads do
    the work): a warm-up epoch, then the measured epochs 0, 1, ... (the
    shuffles loch bench uses)."""
    import loch

    ds = loch.open(spec["dataset"])
    transform = {"image": spec["transform"]} if spec.get("transform") else None
    loader = ds.pytorch(batch_size=spec["batch_size"], shuffle=True, seed=0, columns=COLUMNS, transform=transform)
    for _ in loader:
        pass
    samples = batches = 0
    with measure() as m:
        cpu = time.thread_time()
        for epoch in range(spec["epochs"]):
            loader.set_epoch(epoch)
            for batch in loader:
                samples += len(batch["index"])
                batches += 1
        cpu = time.thread_time() - cpu
    res.extra = {"wait_share": loader.stats().get("wait_share"), "consumer_us": 1e6 * cpu / max(batches, 1)}
    return _finish(res, samples, m)


def run_floor(res: Result, spec: dict[str, Any]) -> Result:
    """The floor under any consumer in a thread of its own: stream_floor.c
    reads the same loader's stream in C, doing nothing with a batch but
    count its rows (build_floor); a warm-up epoch first, as the others."""
    cmd = [spec["floor"], spec["dataset"], str(spec["batch_size"]), str(spec["epochs"])]
    if spec.get("transform"):
        cmd.append(spec["transform"])
    with measure() as m:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    got = json.loads(out.stdout)
    _finish(res, got["samples"], m)
    res.seconds, res.samples_per_s = got["seconds"], got["samples_per_s"]
    res.extra = {"consumer_us": got["consumer_us"]}
    return res


def build_floor(d: Path) -> str | None:
    """Compiles stream_floor.c against the library the SDK loads, into
    ``d``; None (with a line saying why) where there is no C compiler or
    the compilation fails: the C consumer is a diagnostic, and the
    comparison goes on without it."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        print("no C compiler (cc, gcc or $CC): the C consumer of the stream is not measured", file=sys.stderr)
        return None
    from loch._library import library_path

    lib = library_path()
    out = d / "stream_floor"
    src = Path(__file__).with_name("stream_floor.c")
    cmd = [cc, "-O2", "-o", str(out), str(src), "-I", str(REPO / "capi"), "-L", str(lib.parent), "-l:" + lib.name,
           "-Wl,-rpath," + str(lib.parent)]  # fmt: skip
    got = subprocess.run(cmd, capture_output=True, text=True)
    if got.returncode != 0:
        print(f"compiling {src.name} failed: the C consumer of the stream is not measured\n{got.stderr}",
              file=sys.stderr)  # fmt: skip
        return None
    return str(out)


def run_abi(res: Result, spec: dict[str, Any]) -> Result:
    """The floor under ``ds.pytorch()``: the same Go loader read from
    Python over its stream (C ABI 13, as ``ds.pytorch()`` reads it), taking
    each batch and freeing its buffers without making numpy arrays or
    tensors (loch internals, for diagnosis:
    what ``ds.pytorch()`` loses to Python, and what to the C ABI)."""
    import loch
    from loch._buffers import MEMORY
    from loch.loader import BATCH, Loader

    ds = loch.open(spec["dataset"])
    transform = {"image": spec["transform"]} if spec.get("transform") else None

    batches = 0
    loader = Loader(ds, batch_size=spec["batch_size"], shuffle=True, seed=0, columns=COLUMNS, transform=transform)

    def epoch(e: int) -> int:
        nonlocal batches
        go = loader._start(None, e)  # one loader object, as ds.pytorch()'s
        n = 0
        try:
            while (addr := go.next()) is not None:
                n += BATCH.unpack_from(MEMORY, addr)[2]  # its rows
                batches += 1
                go._free_buffers(addr)  # given back to Go with the next report
        finally:
            go.close()
        return n

    epoch(0)
    samples, batches = 0, 0
    with measure() as m:
        cpu = time.thread_time()
        for e in range(spec["epochs"]):
            samples += epoch(e)
        cpu = time.thread_time() - cpu
    res.extra = {"consumer_us": 1e6 * cpu / max(batches, 1)}
    return _finish(res, samples, m)


class NpyFolder:
    """A minimal map-style Dataset: ``root/<class>/<name>.npy`` files of
    uint8 HWC pixels, labelled by the index of their sorted class folder."""

    def __init__(self, root: str) -> None:
        classes = sorted(p.name for p in Path(root).iterdir() if p.is_dir())
        self.files = [(str(f), i) for i, c in enumerate(classes) for f in sorted((Path(root) / c).glob("*.npy"))]

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int) -> tuple[Any, int]:
        import numpy as np
        import torch

        path, label = self.files[i]
        return torch.from_numpy(np.load(path)), label


def run_dataloader(res: Result, spec: dict[str, Any]) -> Result:
    """torch.utils.data.DataLoader over an ImageFolder of JPEGs (PIL
    decode) or over .npy files: shuffled, ``workers`` persistent workers,
    a warm-up epoch, then the measured epochs."""
    import torch
    import torch.utils.data

    data: Any
    if spec["kind"] == "imagefolder":
        from torchvision import datasets, transforms

        data = datasets.ImageFolder(spec["root"], transform=transforms.PILToTensor())
    else:
        data = NpyFolder(spec["root"])
    workers = spec["workers"]
    dl = torch.utils.data.DataLoader(
        data, batch_size=spec["batch_size"], shuffle=True, num_workers=workers, persistent_workers=workers > 0,
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    for _ in dl:
        pass
    samples = 0
    with measure() as m:
        for _ in range(spec["epochs"]):
            for _x, y in dl:
                samples += len(y)
    return _finish(res, samples, m)


def write_npy(spec: dict[str, Any]) -> None:
    """Writes each image of the lz4 dataset (its decoded pixels) to
    ``root/<class>/<row>.npy``."""
    import numpy as np

    import loch

    ds = loch.open(spec["dataset"])
    names = ds.schema["label"].class_names
    assert names, "the label column has no class names"
    root = Path(spec["root"])
    tmp = root.with_name(root.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for name in names:
        (tmp / name).mkdir(parents=True)
    n, step = len(ds), 1024
    for start in range(0, n, step):
        images = ds["image"][start : start + step]
        labels = ds["label"][start : start + step]
        for k in range(len(labels)):
            np.save(tmp / names[int(labels[k])] / f"{start + k:06d}.npy", images[k])
    tmp.rename(root)


CHILD_TASKS = {"go": run_go, "floor": run_floor, "abi": run_abi, "pytorch": run_pytorch, "dataloader": run_dataloader}


def child_main(arg: str) -> None:
    spec = json.loads(arg)
    if spec["task"] == "write-npy":
        write_npy(spec)
        return
    res = Result(**spec["result"])
    print(json.dumps(asdict(CHILD_TASKS[spec["task"]](res, spec))))


def run_child(spec: dict[str, Any]) -> dict[str, Any] | None:
    """Runs one task in a fresh interpreter; returns its JSON result."""
    out = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], check=True, stdout=subprocess.PIPE,
                         text=True)  # fmt: skip
    lines = out.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else None


# Preparing the data.


def _du_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def prepare(d: Path, args: argparse.Namespace) -> dict[str, str]:
    """Makes (or reuses, when made with the same parameters) the JPEG
    folder, the two loch datasets and the .npy folder under ``d``."""
    paths = {k: str(d / k) for k in ("jpeg", "loch-lz4", "loch-jpeg", "npy")}
    params = {"images": args.images, "size": args.size, "classes": args.classes, "generator": "makeimages -jpeg"}
    stamp = d / "params.json"
    if stamp.exists() and json.loads(stamp.read_text()) == params and all(Path(p).exists() for p in paths.values()):
        print(f"reusing the data in {d}", file=sys.stderr)
        return paths
    for p in paths.values():
        shutil.rmtree(p, ignore_errors=True)
    stamp.unlink(missing_ok=True)
    d.mkdir(parents=True, exist_ok=True)

    def run(cmd: Sequence[str]) -> None:
        print("+ " + " ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True, cwd=REPO)

    run([args.go, "run", "./examples/makeimages", "-n", str(args.images), "-classes", str(args.classes), "-size",
         str(args.size), "-jpeg", paths["jpeg"]])  # fmt: skip
    for name, codec in (("loch-lz4", "lz4"), ("loch-jpeg", "jpeg")):
        run([args.loch, "ingest", "imagefolder", paths["jpeg"], paths[name], "--image-compression", codec])
    print(f"+ writing {args.images} .npy files to {paths['npy']}", file=sys.stderr)
    run_child({"task": "write-npy", "dataset": paths["loch-lz4"], "root": paths["npy"]})
    stamp.write_text(json.dumps(params))
    return paths


def synthetic_images(start: int, n: int, classes: int, size: int, seed: int = 1) -> tuple[Any, Any]:
    """Images start..start+n-1 drawn as examples/makeimages draws them
    (stripes at a class's angle and colour, noise; not its exact pixels)
    and their labels (row i is class i % classes), as uint8 NHWC and int64."""
    import numpy as np

    i = np.arange(start, start + n)
    c = i % classes
    rng = np.random.default_rng([seed, start])
    angle = np.pi * c / classes
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64)
    k = 0.6 + 0.4 * np.sin((xx[None] * np.cos(angle)[:, None, None] + yy[None] * np.sin(angle)[:, None, None]) / 3)
    base = np.stack([50 + 200 * c // classes, 255 - 200 * c // classes, 100 + rng.integers(0, 50, n)], axis=1)
    noise = rng.integers(0, 30, (n, size, size))
    img = np.empty((n, size, size, 3), dtype=np.uint8)
    for ch in range(3):
        v = base[:, ch, None, None] * k + (noise if ch < 2 else 0)
        img[..., ch] = np.clip(v, 0, 255).astype(np.uint8)
    return img, c.astype(np.int64)


def prepare_sdk(d: Path, args: argparse.Namespace) -> dict[str, str]:
    """Makes (or reuses) the lz4 and jpeg loch datasets under ``d`` with
    the Python SDK (``--generate sdk``: no Go toolchain, no JPEG folder and
    no .npy files, so only the ``go`` comparison)."""
    import loch

    paths = {k: str(d / k) for k in ("loch-lz4", "loch-jpeg")}
    params = {"images": args.images, "size": args.size, "classes": args.classes, "generator": "sdk"}
    stamp = d / "params.json"
    if stamp.exists() and json.loads(stamp.read_text()) == params and all(Path(p).exists() for p in paths.values()):
        print(f"reusing the data in {d}", file=sys.stderr)
        return paths
    stamp.unlink(missing_ok=True)
    d.mkdir(parents=True, exist_ok=True)
    names = [f"class{c:02d}" for c in range(args.classes)]
    for name, codec in (("loch-lz4", "lz4"), ("loch-jpeg", "jpeg")):
        print(f"+ writing {args.images} images to {paths[name]} ({codec}, the Python SDK)", file=sys.stderr)
        shutil.rmtree(paths[name], ignore_errors=True)
        ds = loch.create(paths[name], schema={"image": loch.Image(codec, shape=(args.size, args.size, 3)),
                                              "label": loch.ClassLabel(names)})  # fmt: skip
        for start in range(0, args.images, 2048):
            img, label = synthetic_images(start, min(2048, args.images - start), args.classes, args.size)
            ds.extend({"image": img, "label": label})
        ds.commit(f"{args.images} synthetic images")
        ds.close()
    stamp.write_text(json.dumps(params))
    return paths


# Waiting for an idle machine.


class Idle:
    """Waits, before each contender, until the 1-minute load average is
    below ``threshold`` (0: never waits), within a total budget."""

    def __init__(self, threshold: float, poll: float, budget: float) -> None:
        self.threshold, self.poll, self.left = threshold, poll, budget

    def wait(self) -> tuple[float, bool]:
        """Returns (the load average now, whether it is below the
        threshold)."""
        while True:
            load = os.getloadavg()[0]
            if self.threshold <= 0 or load < self.threshold:
                return load, True
            if self.left <= 0:
                print(f"load {load:.2f} >= {self.threshold}: waited long enough, measuring anyway", file=sys.stderr)
                return load, False
            print(f"load {load:.2f} >= {self.threshold}: waiting {self.poll:.0f}s", file=sys.stderr)
            time.sleep(self.poll)
            self.left -= self.poll


# Running and reporting.


def contenders(paths: dict[str, str], args: argparse.Namespace, floor: str | None = None) -> list[dict[str, Any]]:
    """The child specs of the comparisons asked for (``floor``: the
    stream_floor program, see build_floor)."""
    common = {"batch_size": args.batch_size, "loch": args.loch}
    specs: list[dict[str, Any]] = []
    if "go" in args.only:
        # Rounds of the contenders back to back, so that a slow drift
        # of the machine's speed affects them alike (every other round in
        # the reverse order, so that a drift within a round favours none);
        # the load is checked before each round, not between its
        # contenders.
        for ds, transform, label in (("loch-lz4", None, "lz4"), ("loch-jpeg", "decode", "jpeg + decode")):
            for rnd in range(args.go_rounds):
                tasks = [
                    ("go", f"loch bench, {label}"),
                    ("floor", f"C consumer of the stream, {label}"),
                    ("abi", f"C ABI stream, no arrays, {label}"),
                    ("pytorch", f"ds.pytorch(), {label}"),
                ]
                if not floor:
                    tasks = [t for t in tasks if t[0] != "floor"]
                for i, (task, what) in enumerate(tasks if rnd % 2 == 0 else tasks[::-1]):
                    specs.append(dict(common, task=task, dataset=paths[ds], transform=transform, wait=i == 0,
                                      floor=floor, epochs=args.go_epochs,
                                      result={"comparison": "go", "name": f"{task}-{ds}", "what": what}))  # fmt: skip
    if "dataloader" in args.only:
        w = args.workers
        for kind, root, name, what in (
            ("imagefolder", "jpeg", "jpeg-folder", f"DataLoader(workers={w}), ImageFolder, PIL decode"),
            ("npy", "npy", "npy-files", f"DataLoader(workers={w}), np.load per sample"),
        ):
            specs.append(dict(common, task="dataloader", kind=kind, root=paths[root], workers=w, epochs=args.epochs,
                              wait=True, result={"comparison": "dataloader", "name": name, "what": what}))  # fmt: skip
        for ds, transform, what in (
            ("loch-lz4", None, "ds.pytorch(), decoded, lz4 chunks"),
            ("loch-jpeg", "decode", "ds.pytorch(), jpeg kept, Go decode (libjpeg-turbo)"),
        ):
            specs.append(dict(common, task="pytorch", dataset=paths[ds], transform=transform, epochs=args.epochs,
                              wait=True, result={"comparison": "dataloader", "name": ds, "what": what}))  # fmt: skip
    return specs


def machine() -> dict[str, Any]:
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    info: dict[str, Any] = {"nproc": os.cpu_count(), "cpu": cpu, "python": platform.python_version()}
    with open("/proc/meminfo") as f:
        info["mem_gib"] = round(int(f.readline().split()[1]) / 2**20, 1)
    for mod in ("numpy", "torch", "torchvision", "PIL"):
        try:
            info[mod] = __import__(mod).__version__
        except ImportError:
            info[mod] = None
    return info


def combine(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per contender, in order of first appearance: the median
    samples/s of its rounds, all of them under "rounds", the highest load
    and other-cores figures."""
    rows: dict[str, dict[str, Any]] = {}
    for r in results:
        row = rows.setdefault(r["name"], dict(r, rounds=[]))
        row["rounds"].append(r["samples_per_s"])
        row["load1"], row["other_cores"] = max(row["load1"], r["load1"]), max(row["other_cores"], r["other_cores"])
        row["idle"] = row["idle"] and r["idle"]
        if "consumer_us" in r.get("extra", {}):
            row.setdefault("consumer_us_rounds", []).append(r["extra"]["consumer_us"])
    for row in rows.values():
        row["samples_per_s"] = statistics.median(row["rounds"])
        if row.get("consumer_us_rounds"):
            row["consumer_us"] = statistics.median(row["consumer_us_rounds"])
    return list(rows.values())


def report(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Prints the tables; returns the ratios and whether each target is met."""
    rows = combine(results)
    by = {r["name"]: r for r in rows}
    summary: dict[str, Any] = {}

    def note(r: dict[str, Any]) -> str:
        flag = "" if r["idle"] else ", NOT IDLE"
        # The consumer thread's CPU per batch (median of the rounds): less
        # hurt by other load than samples/s.
        cpu = f", consumer {r['consumer_us']:.0f} us/batch" if "consumer_us" in r else ""
        return f"load <= {r['load1']:.2f}, other cores <= {r['other_cores']:.2f}{cpu}{flag}"

    go_rows = [r for r in rows if r["comparison"] == "go"]
    if go_rows:
        print("\nds.pytorch() against loch bench (the Go loader), same dataset, batch size and shuffle;")
        print("median of the rounds (each round runs the contenders back to back); x Go: the ratio")
        print("of the medians; per round: the median of each round's own ratio, less hurt by a load that")
        print("changes between rounds")
        print(f"{'contender':38} {'samples/s':>10}  {'x Go':>6}  {'per round':>9}  {'rounds':24}  conditions")
        for r in go_rows:
            ratio = per_round = ""
            task, _, ds = r["name"].partition("-")
            go = by.get("go-" + ds)
            if task != "go" and go:
                q = r["samples_per_s"] / go["samples_per_s"]
                qs = [a / b for a, b in zip(r["rounds"], go["rounds"]) if b > 0]
                pq = statistics.median(qs) if qs else float("nan")
                ratio, per_round = f"{q:.3f}", f"{pq:.3f}"
                if task == "pytorch":
                    summary[r["name"] + "/go"] = {"ratio": q, "round_ratios": qs, "median_round_ratio": pq,
                                                  "consumer_us_per_batch": r.get("consumer_us"),
                                                  "target": GO_TARGET, "met": q >= GO_TARGET}  # fmt: skip
            rounds = " ".join(f"{v:.0f}" for v in r["rounds"])
            print(f"{r['what']:38} {r['samples_per_s']:10.0f}  {ratio:>6}  {per_round:>9}  {rounds:24}  {note(r)}")
    dl_rows = [r for r in rows if r["comparison"] == "dataloader"]
    if dl_rows:
        base = by.get("jpeg-folder")
        print("\nagainst torch.utils.data.DataLoader, same images, shuffled, batch size as given")
        print(f"{'contender':52} {'samples/s':>10}  {'x JPEG folder':>13}  {'target':>9}  conditions")
        for r in dl_rows:
            x = r["samples_per_s"] / base["samples_per_s"] if base else float("nan")
            target = ""
            if r["name"] in DATALOADER_TARGETS and base:
                want = DATALOADER_TARGETS[r["name"]][1]
                summary[r["name"] + "/jpeg-folder"] = {"ratio": x, "target": want, "met": x >= want}
                target = f">= {want:g}" + (" ok" if x >= want else " NO")
            print(f"{r['what']:52} {r['samples_per_s']:10.0f}  {x:13.2f}  {target:>9}  {note(r)}")
    return summary


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", type=Path, help="where to build (or reuse) the data; default: a temporary directory")
    p.add_argument("--images", type=int, default=20000, help="number of images")
    p.add_argument("--size", type=int, default=64, help="image width and height")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers of the baselines")
    p.add_argument("--epochs", type=int, default=1, help="measured epochs of the DataLoader comparison")
    p.add_argument("--go-epochs", type=int, default=10, help="measured epochs of the Go comparison")
    p.add_argument("--go-rounds", type=int, default=3, help="rounds of the Go comparison (the median is reported)")
    p.add_argument("--only", nargs="+", choices=["go", "dataloader"], default=["go", "dataloader"])
    p.add_argument("--loch", default=str(REPO / "bin" / "loch"), help="the loch command (make build)")
    p.add_argument("--go", default="go", help="the go command (to generate the images)")
    p.add_argument("--generate", choices=["makeimages", "sdk"], default="makeimages",
                   help="how to make the data: JPEG files from examples/makeimages ingested with loch (needs Go), "
                   "or the two loch datasets written with the Python SDK (only for --only go)")  # fmt: skip
    p.add_argument("--json", help="also write the results as JSON to this file (- for standard output)")
    p.add_argument("--idle-load", type=float, default=0.0, help="before each contender, wait until the 1-minute "
                   "load average is below this (0: do not wait)")  # fmt: skip
    p.add_argument("--idle-poll", type=float, default=30.0, help="seconds between looks at the load average")
    p.add_argument("--idle-timeout", type=float, default=2700.0, help="total seconds to wait for idleness")
    p.add_argument("--max-other", type=float, default=0.1, help="measure a contender (a round of the Go comparison) "
                   "again when the rest of the machine used more than this many cores meanwhile")  # fmt: skip
    p.add_argument("--retries", type=int, default=2, help="at most this many times")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child_main(args.child)
        return
    if not shutil.which(args.loch):
        p.error(f"--loch {args.loch}: not found (run make build)")
    if args.generate == "sdk" and "dataloader" in args.only:
        p.error("--generate sdk makes no JPEG folder: use it with --only go")

    tmp = None
    if args.dir is None:
        tmp = tempfile.mkdtemp(prefix="loch-bench-")
        args.dir = Path(tmp)
    try:
        paths = prepare_sdk(args.dir, args) if args.generate == "sdk" else prepare(args.dir, args)
        sizes = {k: round(_du_mb(Path(v)), 1) for k, v in paths.items()}
        info = machine()
        print(f"machine: {info['nproc']} cores, {info['cpu']}, {info['mem_gib']} GiB; python {info['python']}, "
              f"torch {info['torch']}, torchvision {info['torchvision']}, Pillow {info['PIL']}")  # fmt: skip
        print(f"data: {args.images} RGB images of {args.size}x{args.size}, {args.classes} classes; MB on disk: "
              + ", ".join(f"{k} {v}" for k, v in sizes.items()))  # fmt: skip
        print(f"batch size {args.batch_size}; page cache warm (each contender runs a warm-up epoch first)")
        idle = Idle(args.idle_load, args.idle_poll, args.idle_timeout)
        results: list[dict[str, Any]] = []
        discarded: list[dict[str, Any]] = []
        groups: list[list[dict[str, Any]]] = []
        floor = build_floor(args.dir) if "go" in args.only else None
        for spec in contenders(paths, args, floor):
            if spec.pop("wait") or not groups:
                groups.append([])
            groups[-1].append(spec)
        for group in groups:
            for attempt in range(args.retries + 1):
                load, ok = idle.wait()
                got = []
                for spec in group:
                    spec["result"].update(load1=load, idle=ok)
                    print(f"running {spec['result']['what']} (load {load:.2f})", file=sys.stderr)
                    r = run_child(spec)
                    assert r is not None
                    got.append(r)
                other = max(r["other_cores"] for r in got)
                if other <= args.max_other or attempt == args.retries:
                    results.extend(got)
                    break
                print(f"other processes used up to {other:.2f} cores meanwhile: measuring again", file=sys.stderr)
                discarded.extend(got)
        summary = report(results)
        if args.json:
            doc = {"machine": info, "args": {k: str(v) for k, v in vars(args).items() if k != "child"},
                   "data_mb": sizes, "results": results, "discarded": discarded, "targets": summary}  # fmt: skip
            text = json.dumps(doc, indent=2)
            if args.json == "-":
                print(text)
            else:
                Path(args.json).write_text(text + "\n")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
