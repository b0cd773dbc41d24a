#!/usr/bin/env python3
"""Compares one epoch through loch with a numpy-memmap baseline of the same
bytes, on the same data and cores, over shuffle mode x codec x storage x
DataLoader workers, and checks the loader targets of issue 10.

    python python/bench/compare.py                        # 50,000 64x64x3 images, 30-60 min on 2 cores
    python python/bench/compare.py --quick                # a smoke run of a few seconds
    make bench-compare BENCH_COMPARE_ARGS="--dir /tmp/cmp --json /tmp/cmp/out.json"

The data is a class-sorted image dataset: ``--rows`` rows of uint8
``[--size, --size, 3]`` images and an int64 label, ``--classes`` classes of
equal size stored one after the other (rows 0.. hold class 0, then class 1,
...), the worst case for a shuffle that keeps the stored order's
neighbourhoods. The images are half smooth (16x16 patches scaled up), half
noise, so that lz4 has something to do (about 1.6x). The same pixels are
written once to an ``.npy`` file and ingested with ``ds.extend`` into one
loch dataset per codec (``none`` and ``lz4`` chunks, ``jpeg`` per image,
decoded in the loader) and storage: a local directory, and a bucket on a
MinIO server that the script starts on 127.0.0.1 from ``--minio`` with a
temporary directory and random credentials (passed to loch through the
standard AWS variables, never printed).

Each cell of the matrix runs in a fresh interpreter, one after the other:

``loch`` (``--workers``, default 0 and 2)
    ``torch.utils.data.DataLoader(ds.pytorch(batch_size=..., shuffle=MODE),
    batch_size=None, num_workers=W)``; the consumer counts rows and keeps
    the labels. samples/s is rows over the wall time from ``iter()`` to the
    end (DataLoader workers' start included). From the loader's statistics
    (``stats()``): ``bytes_fetched`` over the dataset's stored bytes (``loch
    info``: image and label columns) and ``first_batch_ns``; with workers,
    each worker's statistics are written to a file by a thin wrapper around
    the dataset and summed (first batch: the first worker's).
``go``
    ``loch bench URL --no-raw --json``: the Go loader alone, no Python, same
    batch size, shuffle, seed and epochs.
``memmap`` (local data only; the storage does not apply)
    The best-case random-access loader: the same rows in the same batches
    and order (``loch order``, mapped to positions) gathered from a numpy
    memmap of the ``.npy`` file into a contiguous array per batch
    (``mm[rows]``), through the same DataLoader with the same workers.
``memcpy``
    The bound for uncompressed uint8 from Python: ``np.copyto`` of all the
    images' bytes between two arrays in memory (best of three).

Classes per batch (the mean number of distinct labels in a batch) is
compared with its exact expectation under a full random permutation of
the same labels into the same batch sizes. A cell that does not finish
its epochs within ``--max-seconds`` stops there and reports the batches it
delivered (marked ``partial``; bytes fetched are then scaled to a whole
epoch, marked ``~``). The script uses loch's public Python API, the CLI and
the documented statistics keys only.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import math
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench_loaders import Idle, _tree_cpu_seconds, machine, measure

REPO = Path(__file__).resolve().parents[2]
COLUMNS = ["image", "label"]


# The data.


def make_npy(d: Path, rows: int, size: int, classes: int, seed: int) -> None:
    """Writes images.npy (uint8 [rows, size, size, 3]) and labels.npy (int64,
    sorted: class c holds rows [c*rows/classes, (c+1)*rows/classes))."""
    import numpy as np

    rng = np.random.default_rng(seed)
    images = np.lib.format.open_memmap(d / "images.npy.tmp", mode="w+", dtype=np.uint8, shape=(rows, size, size, 3))
    labels = (np.arange(rows, dtype=np.int64) * classes) // rows
    step, half, patch = 2048, size // 2, max(size // 16, 1)
    for s in range(0, rows, step):
        n = min(step, rows - s)
        low = rng.integers(0, 256, size=(n, size // patch, size // patch, 3), dtype=np.uint8)
        img = np.repeat(np.repeat(low, patch, axis=1), patch, axis=2)
        img[:, half:] = rng.integers(0, 256, size=(n, size - half, size, 3), dtype=np.uint8)
        images[s : s + n] = img
    images.flush()
    del images
    np.save(d / "labels.npy", labels)
    os.replace(d / "images.npy.tmp", d / "images.npy")


def ingest(spec: dict[str, Any]) -> dict[str, Any]:
    """Creates the loch dataset at spec["url"] with the .npy data."""
    import numpy as np

    import loch

    images = np.load(Path(spec["data"]) / "images.npy", mmap_mode="r")
    labels = np.load(Path(spec["data"]) / "labels.npy")
    classes = int(labels.max()) + 1
    size = images.shape[1]
    ds = loch.create(spec["url"], schema={
        "image": loch.Image(spec["codec"], shape=(size, size, 3)),
        "label": loch.ClassLabel([f"c{i}" for i in range(classes)]),
    })  # fmt: skip
    t0 = time.perf_counter()
    for s in range(0, len(labels), 2048):
        ds.extend({"image": np.ascontiguousarray(images[s : s + 2048]), "label": labels[s : s + 2048]})
    version = ds.commit(f"{len(labels)} class-sorted images, {spec['codec']}")
    return {"version": version, "seconds": time.perf_counter() - t0}


# MinIO.


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _sign(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def s3_create_bucket(endpoint: str, bucket: str, access: str, secret: str, region: str = "us-east-1") -> None:
    """PUT /bucket, signed with AWS Signature Version 4 (the standard library
    has no S3 client, and loch does not create buckets)."""
    host = endpoint.split("://", 1)[1]
    now = datetime.now(timezone.utc)
    amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    empty = hashlib.sha256(b"").hexdigest()
    signed = "host;x-amz-content-sha256;x-amz-date"
    headers = f"host:{host}\nx-amz-content-sha256:{empty}\nx-amz-date:{amz_date}\n"
    canonical = f"PUT\n/{bucket}\n\n{headers}\n{signed}\n{empty}"
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = f"AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    key = _sign(_sign(_sign(_sign(("AWS4" + secret).encode(), day), region), "s3"), "aws4_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    req = urllib.request.Request(f"{endpoint}/{bucket}", method="PUT", headers={
        "x-amz-date": amz_date, "x-amz-content-sha256": empty,
        "Authorization": f"AWS4-HMAC-SHA256 Credential={access}/{scope}, SignedHeaders={signed}, Signature={signature}",
    })  # fmt: skip
    with urllib.request.urlopen(req, timeout=30):
        pass


@contextmanager
def minio(binary: str, bucket: str) -> Iterator[tuple[str, int]]:
    """Starts MinIO on 127.0.0.1 over a temporary directory with random root
    credentials, creates bucket and puts the credentials into this process's
    environment (the AWS variables, inherited by the cells); yields the
    endpoint and the server's pid. The server and its directory go when the
    block ends."""
    tmp = tempfile.mkdtemp(prefix="loch-compare-minio-")
    port, console = _free_port(), _free_port()
    access, secret = "bench" + secrets.token_hex(6), secrets.token_urlsafe(24)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINIO_", "AWS_"))}
    env.update(MINIO_ROOT_USER=access, MINIO_ROOT_PASSWORD=secret, MINIO_BROWSER="off", MINIO_UPDATE="off",
               MINIO_CI_CD="1")  # fmt: skip
    proc = subprocess.Popen([binary, "server", "--quiet", "--address", f"127.0.0.1:{port}", "--console-address",
                             f"127.0.0.1:{console}", "--certs-dir", os.path.join(tmp, "certs"),
                             os.path.join(tmp, "data")],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(endpoint + "/minio/health/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise RuntimeError(f"MinIO did not start: {err.strip()[-500:]}")
            time.sleep(0.2)
        while True:  # a fresh server answers 503 for a moment after it says it is ready
            try:
                s3_create_bucket(endpoint, bucket, access, secret)
                break
            except urllib.error.HTTPError as e:
                if e.code != 503 or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        # As internal/testserver does: only these credentials, no profile,
        # config file or instance metadata.
        none = os.path.join(tmp, "none")
        env = {"AWS_ACCESS_KEY_ID": access, "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": "us-east-1",
               "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none}
        unset = ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3")
        saved = {k: os.environ.get(k) for k in (*env, *unset)}
        os.environ.update(env)
        for k in unset:
            os.environ.pop(k, None)
        try:
            yield endpoint, proc.pid
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


# Order and classes per batch.


def batch_sizes(n: int, batch: int) -> list[int]:
    """The sizes of an epoch's batches on one rank, the last one short."""
    return [min(batch, n - s) for s in range(0, n, batch)]


def permutation_classes(counts: Sequence[int], batch: int) -> float:
    """The exact expected number of distinct classes in a batch of an epoch
    whose rows are a uniform random permutation, averaged over the epoch's
    batches: a batch of b rows misses class c with probability
    C(N - n_c, b) / C(N, b)."""
    n = sum(counts)

    def expected(b: int) -> float:
        total = 0.0
        for nc in counts:
            if n - nc < b:
                total += 1.0
                continue
            log_miss = (math.lgamma(n - nc + 1) - math.lgamma(n - nc - b + 1)
                        - math.lgamma(n + 1) + math.lgamma(n - b + 1))  # fmt: skip
            total += 1.0 - math.exp(log_miss)
        return total

    sizes = batch_sizes(n, batch)
    return sum(expected(b) for b in sizes) / len(sizes)


def loch_order(loch: str, url: str, mode: str, seed: int, epoch: int, batch: int, path: Path) -> str:
    """Writes the row ids `loch order` prints (the loader's delivery order)
    to the .npy file path; returns its name."""
    import numpy as np

    out = subprocess.run([loch, "order", url, "--shuffle", mode, "--seed", str(seed), "--epoch", str(epoch),
                          "--batch-size", str(batch)], check=True, capture_output=True, text=True)  # fmt: skip
    np.save(path, np.array(out.stdout.split(), dtype=np.uint64))
    return str(path)


# The cells, each run in a child process (--child).


def _stats_file(d: str, worker: int) -> Path:
    return Path(d) / f"worker-{worker}.json"


def _dumping_dataset() -> Any:
    """A torch IterableDataset around a loch TorchLoader that writes the
    loader's statistics to a file per DataLoader worker (at the end of the
    epoch and about once a second), so that the parent can sum them."""
    import torch.utils.data

    class Dumping(torch.utils.data.IterableDataset):  # type: ignore[type-arg]
        def __init__(self, inner: Any, stats_dir: str) -> None:
            self.inner, self.stats_dir = inner, stats_dir

        def __iter__(self) -> Iterator[Any]:
            info = torch.utils.data.get_worker_info()
            path = _stats_file(self.stats_dir, 0 if info is None else info.id)

            def dump() -> None:
                path.with_suffix(".tmp").write_text(json.dumps(self.inner.stats()))
                path.with_suffix(".tmp").replace(path)

            last = time.monotonic()
            for b in self.inner:
                yield b
                if time.monotonic() - last > 1.0:
                    dump()
                    last = time.monotonic()
            dump()

    return Dumping


def _memmap_dataset() -> Any:
    """The baseline's torch IterableDataset: batches of rows gathered from a
    memmap of the .npy images (and the labels) into contiguous arrays, in
    the order of an .npy file of positions; a DataLoader worker takes every
    W-th batch."""
    import numpy as np
    import torch
    import torch.utils.data

    class MemmapBatches(torch.utils.data.IterableDataset):  # type: ignore[type-arg]
        def __init__(self, data: str, order_file: str, batch: int) -> None:
            self.data, self.order_file, self.batch = data, order_file, batch

        def __iter__(self) -> Iterator[dict[str, Any]]:
            info = torch.utils.data.get_worker_info()
            wid, nw = (0, 1) if info is None else (info.id, info.num_workers)
            images = np.load(Path(self.data) / "images.npy", mmap_mode="r")
            labels = np.load(Path(self.data) / "labels.npy")
            order = np.load(self.order_file)
            for i, s in enumerate(range(0, len(order), self.batch)):
                if i % nw != wid:
                    continue
                rows = order[s : s + self.batch]
                yield {"image": torch.from_numpy(images[rows]), "label": torch.from_numpy(labels[rows])}

    return MemmapBatches


def _classes(labels: list[Any]) -> float:
    import numpy as np

    return float(np.mean([len(np.unique(lb)) for lb in labels])) if labels else float("nan")


def _drain(dl: Any, epochs: int, set_epoch: Any, deadline: float) -> dict[str, Any]:
    """Iterates the DataLoader over the epochs (calling set_epoch(e) before
    each), until done or past deadline; returns samples, seconds, the wall
    time to the first batch, the labels of each batch and whether it was
    cut short."""
    samples, labels, first, partial = 0, [], None, False
    with measure() as m:
        t0 = time.perf_counter()
        for e in range(epochs):
            set_epoch(e)
            for b in dl:
                if first is None:
                    first = time.perf_counter() - t0
                samples += len(b["label"])
                labels.append(b["label"].numpy())
                if time.perf_counter() > deadline:
                    partial = True
                    break
            if partial:
                break
    return {"samples": samples, "seconds": m.seconds, "samples_per_s": samples / m.seconds, "wall_first_ms":
            1e3 * (first or 0.0), "labels": labels, "partial": partial, "own_cores": m.own_cores,
            "other_cores": m.other_cores}  # fmt: skip


def run_loch(spec: dict[str, Any]) -> dict[str, Any]:
    import torch.utils.data

    import loch

    ds = loch.open(spec["url"])
    transform = {"image": "decode"} if spec["codec"] == "jpeg" else None
    tl = ds.pytorch(batch_size=spec["batch"], shuffle=spec["shuffle"], seed=spec["seed"], columns=COLUMNS,
                    transform=transform, distributed=False)  # fmt: skip
    nw = spec["workers"]
    stats_dir = tempfile.mkdtemp(prefix="loch-compare-stats-")
    dl = torch.utils.data.DataLoader(_dumping_dataset()(tl, stats_dir), batch_size=None, num_workers=nw)
    per_epoch: list[dict[str, Any]] = []

    def set_epoch(e: int) -> None:
        if e > 0:
            per_epoch.append(collect())
        tl.set_epoch(e)
        for f in Path(stats_dir).glob("worker-*.json"):
            f.unlink()

    def collect() -> dict[str, Any]:
        if nw == 0:
            return tl.stats()
        got = [json.loads(f.read_text()) for f in sorted(Path(stats_dir).glob("worker-*.json"))]
        firsts = [s["first_batch_ns"] for s in got if s.get("first_batch_ns")]
        return {"bytes_fetched": sum(s.get("bytes_fetched", 0) for s in got),
                "samples": sum(s.get("samples", 0) for s in got),
                "first_batch_ns": min(firsts) if firsts else 0, "workers_reported": len(got)}  # fmt: skip

    try:
        res = _drain(dl, spec["epochs"], set_epoch, time.perf_counter() + spec["max_seconds"])
        per_epoch.append(collect())
    finally:
        shutil.rmtree(stats_dir, ignore_errors=True)
    res["classes_per_batch"] = _classes(res.pop("labels"))
    res["bytes_fetched"] = sum(s.get("bytes_fetched", 0) for s in per_epoch)
    res["stats_samples"] = sum(s.get("samples", 0) for s in per_epoch)
    res["first_batch_ms"] = per_epoch[0].get("first_batch_ns", 0) / 1e6
    res["workers_reported"] = [s.get("workers_reported", 1) for s in per_epoch]
    return res


def run_memmap(spec: dict[str, Any]) -> dict[str, Any]:
    import numpy as np
    import torch.utils.data

    import loch

    # The loader's order (row ids) as positions of the .npy file, which
    # holds the rows in ingest order.
    ids = loch.open(spec["url"]).row_ids()
    pos_of = np.empty(int(ids.max()) + 1, dtype=np.int64)
    pos_of[ids.astype(np.int64)] = np.arange(len(ids))
    tmp = tempfile.mkdtemp(prefix="loch-compare-order-")
    try:
        files = []
        for e, ids_file in enumerate(spec["order_files"]):
            files.append(os.path.join(tmp, f"order-{e}.npy"))
            np.save(files[-1], pos_of[np.load(ids_file).astype(np.int64)])
        ds = _memmap_dataset()(spec["data"], files[0], spec["batch"])

        def set_epoch(e: int) -> None:
            ds.order_file = files[e]

        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=spec["workers"])
        res = _drain(dl, spec["epochs"], set_epoch, time.perf_counter() + spec["max_seconds"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    res["classes_per_batch"] = _classes(res.pop("labels"))
    res["first_batch_ms"] = res["wall_first_ms"]
    return res


def run_go(spec: dict[str, Any]) -> dict[str, Any]:
    cmd = [spec["loch"], "bench", spec["url"], "--columns", ",".join(COLUMNS), "--batch-size", str(spec["batch"]),
           "--shuffle", spec["shuffle"], "--seed", str(spec["seed"]), "--epochs", str(spec["epochs"]), "--no-raw",
           "--json", "--max-seconds", str(spec["max_seconds"])]  # fmt: skip
    if spec["codec"] == "jpeg":
        cmd += ["--transform", "image=decode"]
    with measure() as m:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    go = json.loads(out.stdout)
    return {"samples": go["samples"], "seconds": go["seconds"], "samples_per_s": go["samples_per_s"],
            "first_batch_ms": go["first_batch_ms"], "bytes_fetched": go["fetched_mb"] * 1e6,
            "stats_samples": go["samples"], "partial": go.get("partial", False), "own_cores": m.own_cores,
            "other_cores": m.other_cores}  # fmt: skip


def run_memcpy(spec: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    src = np.load(Path(spec["data"]) / "images.npy")
    dst = np.empty_like(src)
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return {"samples": len(src), "seconds": best, "samples_per_s": len(src) / best, "gb_per_s": src.nbytes / best / 1e9}


CHILD_TASKS = {"ingest": ingest, "loch": run_loch, "go": run_go, "memmap": run_memmap, "memcpy": run_memcpy}


IN_PROCESS = False  # --quick: run the tasks in this process (no isolation, no interpreter start-up per cell)


def run_child(spec: dict[str, Any]) -> dict[str, Any]:
    """Runs one task in a fresh interpreter; returns its JSON result."""
    if IN_PROCESS:
        spec = json.loads(json.dumps(spec))
        return dict(json.loads(json.dumps(CHILD_TASKS[spec.pop("task")](spec))))
    out = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], check=True, stdout=subprocess.PIPE,
                         text=True)  # fmt: skip
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


# The run.


def prepare(args: argparse.Namespace) -> dict[str, str]:
    """Makes (or reuses, when made with the same parameters) the .npy data
    under args.dir, and ingests it into a local loch dataset per codec,
    afresh each run (so that a dataset is always in the format of the loch
    being measured)."""
    params = {"rows": args.rows, "size": args.size, "classes": args.classes, "seed": args.data_seed, "generator": 1}
    stamp = args.dir / "params.json"
    if stamp.exists() and json.loads(stamp.read_text()) == params:
        print(f"reusing the images in {args.dir}", file=sys.stderr)
    else:
        args.dir.mkdir(parents=True, exist_ok=True)
        stamp.unlink(missing_ok=True)
        print(f"+ writing {args.rows} images to {args.dir / 'images.npy'}", file=sys.stderr)
        make_npy(args.dir, args.rows, args.size, args.classes, args.data_seed)
        stamp.write_text(json.dumps(params))
    local = {}
    for codec in args.codecs:
        path = args.dir / f"loch-{codec}"
        shutil.rmtree(path, ignore_errors=True)
        print(f"+ ingesting {codec} into {path}", file=sys.stderr)
        run_child({"task": "ingest", "url": str(path), "codec": codec, "data": str(args.dir)})
        local[codec] = str(path)
    return local


def stored_bytes(loch: str, url: str) -> int:
    out = subprocess.run([loch, "info", url, "--json"], check=True, capture_output=True, text=True)
    return sum(c["stored_bytes"] for c in json.loads(out.stdout)["columns"] if c["name"] in COLUMNS)


def cells(args: argparse.Namespace, storage: str, urls: dict[str, str], local: dict[str, str],
          orders: dict[tuple[str, str], list[str]]) -> Iterator[dict[str, Any]]:  # fmt: skip
    """The child specs of one storage."""
    common = {"batch": args.batch_size, "seed": args.seed, "epochs": args.epochs, "max_seconds": args.max_seconds,
              "data": str(args.dir), "loch": args.loch, "storage": storage}  # fmt: skip
    for codec in args.codecs:
        for mode in args.shuffles:
            cell = dict(common, codec=codec, shuffle=mode, url=urls[codec])
            for w in args.workers:
                yield dict(cell, task="loch", workers=w)
            if not args.no_go:
                yield dict(cell, task="go", workers=0)
            if storage == "local":
                for w in args.workers:
                    yield dict(cell, task="memmap", workers=w, url=local[codec],
                               order_files=orders[codec, mode])  # fmt: skip


def _fmt(v: float | None, spec: str = ".0f") -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


class Run:
    """A run's results as --json saves them, read back for the tables."""

    def __init__(self, doc: dict[str, Any]) -> None:
        a = doc["args"]
        self.rows, self.epochs = int(a["rows"]), int(a["epochs"])
        self.storages, self.codecs, self.shuffles = a["storages"], a["codecs"], a["shuffles"]
        self.workers, self.go, self.target_shuffle = a["workers"], not a["no_go"], a["target_shuffle"]
        self.stored = {tuple(k.split("/")): v for k, v in doc["stored_bytes"].items()}
        self.perm, self.memcpy = doc["permutation_classes"], doc["memcpy"]
        self.by = {(r["storage"], r["codec"], r["shuffle"], r["task"], r["workers"]): r for r in doc["results"]}

    def cell(self, storage: str, codec: str, mode: str, task: str, workers: int = 0) -> dict[str, Any] | None:
        # The memmap baseline reads local files whatever the storage.
        return self.by.get(("local" if task == "memmap" else storage, codec, mode, task, workers))

    def fetched(self, r: dict[str, Any] | None) -> float | None:
        """Bytes fetched per epoch over the dataset's stored bytes, scaled to
        a whole epoch when the cell stopped early; None when unknown."""
        if r is None or r.get("bytes_fetched") is None or 0 in r.get("workers_reported", [1]):
            return None
        v = r["bytes_fetched"] / self.stored[r["storage"], r["codec"]] / self.epochs
        if r.get("partial") and r.get("stats_samples"):
            v *= self.rows * self.epochs / r["stats_samples"]
        return float(v)

    def targets(self) -> list[dict[str, Any]]:
        """Issue 10's targets, each with its measured value (None: not
        measured) and whether it is met."""
        t, ws, out = self.target_shuffle, self.workers, []

        def check(name: str, scope: str, value: float | None, want: float, at_most: bool = False,
                  unit: str = "") -> None:  # fmt: skip
            met = None if value is None else (value <= want if at_most else value >= want)
            out.append({"target": name, "scope": scope, "value": value, "want": want, "at_most": at_most, "met": met,
                        "unit": unit})  # fmt: skip

        def ratio(a: dict[str, Any] | None, b: dict[str, Any] | None) -> float | None:
            return a["samples_per_s"] / b["samples_per_s"] if a and b else None

        for codec in self.codecs:
            r = self.cell("local", codec, t, "loch", ws[0])
            check(f"classes/batch ({t}) / full permutation's", codec, r and r["classes_per_batch"] / self.perm, 0.95)
        for storage in self.storages:
            for codec in self.codecs:
                r = self.cell(storage, codec, t, "loch", ws[0])
                check(f"bytes fetched per epoch ({t}) / stored", f"{storage} {codec} nw={ws[0]}", self.fetched(r), 1.1,
                      at_most=True)  # fmt: skip
                check(f"first batch ({t})", f"{storage} {codec} nw={ws[0]}", r and r["first_batch_ms"], 500,
                      at_most=True, unit=" ms")  # fmt: skip
                for w in ws:
                    check(f"throughput {t} / none", f"{storage} {codec} nw={w}",
                          ratio(self.cell(storage, codec, t, "loch", w), self.cell(storage, codec, "none", "loch", w)),
                          0.9)  # fmt: skip
            for w in ws:
                for codec, want in (("none", 0.5), ("lz4", 0.3)):
                    if codec in self.codecs:
                        check(f"throughput full / block, {codec}", f"{storage} nw={w}",
                              ratio(self.cell(storage, codec, "full", "loch", w),
                                    self.cell(storage, codec, "block", "loch", w)), want)  # fmt: skip
                if "none" in self.codecs:
                    check("throughput block, none / memcpy bound", f"{storage} nw={w}",
                          ratio(self.cell(storage, "none", "block", "loch", w), self.memcpy), 0.5)  # fmt: skip
        return out


def _sps(r: dict[str, Any] | None) -> str:
    return "—" if r is None else _fmt(r["samples_per_s"]) + (" (partial)" if r.get("partial") else "")


def print_matrix(run: Run) -> None:
    """The run's cells as a markdown table."""
    ws = run.workers

    def ratio(a: dict[str, Any] | None, b: dict[str, Any] | None) -> float | None:
        return a["samples_per_s"] / b["samples_per_s"] if a and b else None

    def fetched(r: dict[str, Any] | None) -> str:
        if r is not None and 0 in r.get("workers_reported", [1]):
            return "TODO (worker stats missing)"
        v = run.fetched(r)
        return ("~" if r and r.get("partial") else "") + _fmt(v, ".2f")

    print("\n## samples/s (one row per storage, codec, shuffle); memmap is read from local disk for both storages\n")
    head = ["storage", "codec", "shuffle"]
    head += [f"loch nw={w}" for w in ws] + (["loch bench (Go)"] if run.go else [])
    head += [f"memmap nw={w}" for w in ws] + [f"loch/memmap nw={w}" for w in ws]
    head += [f"fetched/stored nw={w}" for w in ws] + [f"first batch ms nw={w}" for w in ws]
    head += ["classes/batch", "other cores"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for storage in run.storages:
        for codec in run.codecs:
            for mode in run.shuffles:
                lo = [run.cell(storage, codec, mode, "loch", w) for w in ws]
                mm = [run.cell(storage, codec, mode, "memmap", w) for w in ws]
                go = run.cell(storage, codec, mode, "go")
                row = [storage, codec, mode] + [_sps(r) for r in lo] + ([_sps(go)] if run.go else [])
                row += [_sps(r) for r in mm] + [_fmt(ratio(a, b), ".2f") for a, b in zip(lo, mm)]
                row += [fetched(r) for r in lo] + [_fmt(r and r["first_batch_ms"], ".0f") for r in lo]
                row += [_fmt(lo[0] and lo[0]["classes_per_batch"], ".2f")]
                others = [r["other_cores"] for r in [*lo, go, *mm] if r and "other_cores" in r]
                row += [_fmt(max(others) if others else None, ".2f")]
                print("| " + " | ".join(row) + " |")
    print(f"\nfull random permutation: {run.perm:.2f} classes per batch (exact expectation); memcpy bound "
          f"(np.copyto, one thread): {run.memcpy['samples_per_s']:.0f} samples/s ({run.memcpy['gb_per_s']:.1f} GB/s)")


def print_targets(runs: Sequence[Run], labels: Sequence[str]) -> None:
    """The targets of one run, or of several side by side (before/after): a
    column per label, empty where its run is missing or lacks the row."""
    tables = [{(x["target"], x["scope"]): x for x in run.targets()} for run in runs]
    print(f"\n## targets (shuffle {runs[0].target_shuffle!r} as the default)\n")
    print("| target | scope | want | " + " | ".join(labels) + " |")
    print("|---|---|---|" + "---|" * len(labels))
    for key, first in tables[0].items():
        want = ("<= " if first["at_most"] else ">= ") + f"{first['want']:g}{first['unit']}"
        cols = []
        for i in range(len(labels)):
            x = tables[i].get(key) if i < len(tables) else None
            if x is None:
                cols.append("")
                continue
            met = {True: "pass", False: "MISS", None: "not measured"}[x["met"]]
            cols.append(("" if x["value"] is None else f"{x['value']:.2f}{x['unit']} ") + met)
        print(f"| {key[0]} | {key[1]} | {want} | " + " | ".join(cols) + " |")


def print_before_after(before: Run, after: Run | None) -> None:
    """The figures of two runs side by side: samples/s, bytes fetched,
    first batch and classes per batch of each cell (after: empty when not
    given), then the targets."""
    runs, labels = [before] + ([after] if after else []), ["before", "after"]
    ws = before.workers

    def pair(f: Any) -> list[str]:
        return [f(before), f(after) if after else ""]

    print("\n## before / after (samples/s; fetched = bytes fetched per epoch / stored; first batch in ms)\n")
    head = ["storage", "codec", "shuffle"]
    for w in ws:
        head += [f"loch nw={w} before", "after"]
    head += ["Go before", "after"] + [f"memmap nw={w} (before)" for w in ws]
    head += ["fetched nw=0 before", "after", f"fetched nw={ws[-1]} before", "after"]
    head += ["first batch nw=0 before", "after", "classes/batch before", "after"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for storage in before.storages:
        for codec in before.codecs:
            for mode in before.shuffles:
                def get(run: Run, task: str, w: int = 0) -> dict[str, Any] | None:
                    return run.cell(storage, codec, mode, task, w)

                row = [storage, codec, mode]
                for w in ws:
                    row += pair(lambda run: _sps(get(run, "loch", w)))
                row += pair(lambda run: _sps(get(run, "go"))) + [_sps(get(before, "memmap", w)) for w in ws]
                for w in (ws[0], ws[-1]):
                    row += pair(lambda run: ("~" if (get(run, "loch", w) or {}).get("partial") else "")
                                + _fmt(run.fetched(get(run, "loch", w)), ".2f"))  # fmt: skip
                row += pair(lambda run: _fmt((get(run, "loch", ws[0]) or {}).get("first_batch_ms"), ".0f"))
                row += pair(lambda run: _fmt((get(run, "loch", ws[0]) or {}).get("classes_per_batch"), ".2f"))
                print("| " + " | ".join(row) + " |")
    print_targets(runs, labels)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", type=Path, help="where to build (or reuse) the data; default: a temporary directory")
    p.add_argument("--rows", type=int, default=50000)
    p.add_argument("--size", type=int, default=64, help="image width and height")
    p.add_argument("--classes", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--epochs", type=int, default=1, help="epochs per cell (0, 1, ...)")
    p.add_argument("--seed", type=int, default=0, help="shuffle seed")
    p.add_argument("--data-seed", type=int, default=1, help="seed of the images")
    p.add_argument("--shuffles", default="none,block,full")
    p.add_argument("--codecs", help="of none, lz4, jpeg (jpeg: decoded in the loader); default all")
    p.add_argument("--storages", help="of local, minio; default both")
    p.add_argument("--workers", default="0,2", help="DataLoader num_workers values")
    p.add_argument("--target-shuffle", default="block", help="the mode the targets for the default shuffle check")
    p.add_argument("--max-seconds", type=float, default=60.0, help="stop a cell after this long (reported as partial)")
    p.add_argument("--no-go", action="store_true", help="skip `loch bench` (the Go loader alone)")
    p.add_argument("--max-other", type=float, default=0.5, help="measure a cell again when the rest of the machine "
                   "used more than this many cores meanwhile")  # fmt: skip
    p.add_argument("--retries", type=int, default=2, help="at most this many times (the quietest run is kept)")
    p.add_argument("--quick", action="store_true", help="a smoke run of a few seconds: 2,000 rows of 32x32, codec "
                   "none, local storage, every cell in this process (unless MinIO is asked for), 5 seconds per "
                   "cell at most")  # fmt: skip
    p.add_argument("--loch", default=str(REPO / "bin" / "loch"), help="the loch command (make build)")
    p.add_argument("--minio", default=os.environ.get("LOCH_MINIO") or str(Path.home() / ".cache/loch/tools/bin/minio"))
    p.add_argument("--json", help="also write the results as JSON to this file (- for standard output)")
    p.add_argument("--idle-load", type=float, default=0.0, help="before each cell, wait until the 1-minute load "
                   "average is below this (0: do not wait)")  # fmt: skip
    p.add_argument("--report", nargs="+", metavar="JSON", help="print the tables of a saved run (--json) beside "
                   "another's, before then after, and exit (bench/RESULTS.md)")  # fmt: skip
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.size, args.max_seconds, args.retries = 2000, 32, 5.0, 0
        args.codecs, args.storages = args.codecs or "none", args.storages or "local"
    args.codecs, args.storages = args.codecs or "none,lz4,jpeg", args.storages or "local,minio"
    for k in ("shuffles", "codecs", "storages"):
        setattr(args, k, [v.strip() for v in getattr(args, k).split(",") if v.strip()])
    args.workers = [int(v) for v in args.workers.split(",")]
    bad = [c for c in args.codecs if c not in ("none", "lz4", "jpeg")] + [s for s in args.storages if s not in
                                                                          ("local", "minio")]  # fmt: skip
    if bad:
        p.error(f"unknown codec or storage {bad}")
    return args


def main() -> None:
    global IN_PROCESS
    args = parse_args()
    if args.report:
        runs = [Run(json.loads(Path(f).read_text())) for f in args.report]
        print_before_after(runs[0], runs[1] if len(runs) > 1 else None)
        return
    # In this process only without MinIO: loch's Go library sees the
    # environment the process started with, not the credentials set here.
    IN_PROCESS = args.quick and "minio" not in args.storages
    if args.child:
        spec = json.loads(args.child)
        print(json.dumps(CHILD_TASKS[spec.pop("task")](spec)))
        return
    if not shutil.which(args.loch):
        sys.exit(f"--loch {args.loch}: not found (run make build)")
    if "minio" in args.storages and not os.access(args.minio, os.X_OK):
        sys.exit(f"--minio {args.minio}: not found (run make tools)")
    tmp = None
    if args.dir is None:
        tmp = tempfile.mkdtemp(prefix="loch-compare-")
        args.dir = Path(tmp)
    with ExitStack() as stack:
        if tmp is not None:
            stack.callback(shutil.rmtree, tmp, ignore_errors=True)
        # MinIO first: its credentials go into the environment that the
        # cells (child processes) inherit.
        endpoint, server = ("", 0)
        if "minio" in args.storages:
            endpoint, server = stack.enter_context(minio(args.minio, "loch-compare"))
        info = machine()
        print(f"machine: {info['nproc']} cores, {info['cpu']}, {info['mem_gib']} GiB; python {info['python']}, "
              f"numpy {info['numpy']}, torch {info['torch']}; load average {os.getloadavg()[0]:.2f}")  # fmt: skip
        local = prepare(args)
        import numpy as np

        counts = np.bincount(np.load(args.dir / "labels.npy")).tolist()
        perm = permutation_classes(counts, args.batch_size)
        print(f"data: {args.rows} rows of uint8 {args.size}x{args.size}x3 + int64 label, {len(counts)} classes sorted; "
              f"batch {args.batch_size}, {args.epochs} epoch(s), seed {args.seed}, "
              f"at most {args.max_seconds:g} s a cell")  # fmt: skip
        (args.dir / "orders").mkdir(exist_ok=True)
        orders = {(c, m): [loch_order(args.loch, local[c], m, args.seed, e, args.batch_size,
                                      args.dir / "orders" / f"{c}-{m}-{e}.npy") for e in range(args.epochs)]
                  for c in args.codecs for m in args.shuffles}  # fmt: skip
        memcpy = run_child({"task": "memcpy", "data": str(args.dir)})
        idle = Idle(args.idle_load, 30.0, 1800.0)
        results: list[dict[str, Any]] = []
        stored: dict[tuple[str, str], int] = {}

        def run_storage(storage: str, urls: dict[str, str]) -> None:
            for codec, url in urls.items():
                stored[storage, codec] = stored_bytes(args.loch, url)
            for spec in cells(args, storage, urls, local, orders):
                what = f"{storage} {spec['codec']} {spec['shuffle']} {spec['task']} nw={spec['workers']}"
                runs = []
                for attempt in range(args.retries + 1):
                    load, ok = idle.wait()
                    print(f"running {what} (load {load:.2f})", file=sys.stderr)
                    cpu0 = _tree_cpu_seconds(server) if storage == "minio" else 0.0
                    r = run_child(spec)
                    if storage == "minio":
                        # The server works for the cell: its CPU is the cell's, not another process's.
                        r["server_cores"] = (_tree_cpu_seconds(server) - cpu0) / r["seconds"]
                        r["other_cores"] = max(0.0, r["other_cores"] - r["server_cores"])
                    r.update({k: spec[k] for k in ("storage", "codec", "shuffle", "task", "workers")}, load1=load,
                             idle=ok, attempts=attempt + 1)  # fmt: skip
                    runs.append(r)
                    if r["other_cores"] <= args.max_other:
                        break
                    print(f"  other processes used {r['other_cores']:.2f} cores meanwhile", file=sys.stderr)
                results.append(min(runs, key=lambda r: r["other_cores"]))

        for storage in args.storages:
            if storage == "local":
                run_storage("local", local)
                continue
            urls = {}
            for codec in args.codecs:
                urls[codec] = f"s3://loch-compare/{codec}?endpoint={endpoint}"
                print(f"+ ingesting {codec} into MinIO", file=sys.stderr)
                run_child({"task": "ingest", "url": urls[codec], "codec": codec, "data": str(args.dir)})
            run_storage("minio", urls)
        doc = {"machine": info, "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()
                                         if k not in ("child", "report")},
               "stored_bytes": {f"{s}/{c}": v for (s, c), v in stored.items()}, "permutation_classes": perm,
               "memcpy": memcpy, "results": results}  # fmt: skip
        run = Run(doc)
        doc["targets"] = run.targets()
        print_matrix(run)
        print_targets([run], ["measured"])
        if args.json:
            text = json.dumps(doc, indent=2)
            if args.json == "-":
                print(text)
            else:
                Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
