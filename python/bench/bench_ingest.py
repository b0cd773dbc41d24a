"""Ingest against copying the same bytes (issue 39, targets 1 and 5).

Every contender is a command timed by /usr/bin/time (wall, user + system
CPU, peak RSS), the source page-cached first; contenders alternate within
each round and the table prints the median of the rounds, with each
contender's wall time as a ratio of its baseline measured in the same run.

- images: ``--files`` 224x224 JPEGs (deterministic: 256 encoded photos-like
  images, each file made unique by a COM segment) in 10 class folders.
  Baselines ``tar cf`` of the folder, and ``tar cf`` then fsync of the tar
  (loch syncs what it writes; tar does not). Contenders ``loch ingest
  imagefolder --image-compression jpeg`` with ``--validate sample``
  (default), ``header`` and ``full``; Lance (pylance) and Deep Lake writing
  the same files as a binary/jpeg column and a label, when installed.
- parquet: ``--parquet-rows`` rows (id, label, score, a 30-value category,
  a unique name); DuckDB's ``COPY (SELECT * FROM read_parquet(...)) TO
  ... (FORMAT parquet)`` against ``loch ingest parquet``.
- arrays: ``--array-rows`` 64x64x3 uint8 arrays in one .npy; ``cp`` and
  ``dd conv=fsync`` of the file against ``loch ingest npy``.
- scale: ``loch ingest imagefolder`` (default validation) and ``tar cf`` at
  each of ``--scale`` file counts (10x apart): time should grow with the
  data, peak RSS stay flat.

    python python/bench/bench_ingest.py --loch bin/loch --work /tmp/ib \
        --files 10000 --rounds 3 --scale 1000,10000,100000
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()


def base_jpegs(count: int = 256, size: int = 224) -> list[bytes]:
    """Photo-like 224x224 RGB JPEGs (quality 90), deterministic."""
    from PIL import Image

    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:size, 0:size]
    out = []
    for _ in range(count):
        a = rng.integers(1, 256, 6)
        img = np.stack(
            [(xx * a[0] // size + yy * a[1] // size + a[2]) % 256, (xx * a[3] // size + a[4]) % 256, (yy * a[5] // size) % 256],
            -1,
        )
        img = np.clip(img + rng.normal(0, 10, img.shape), 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="JPEG", quality=90)
        out.append(buf.getvalue())
    return out


def make_images(root: Path, n: int, bases: list[bytes]) -> int:
    """Writes n unique JPEGs under root/classNN/ and returns their bytes."""
    if (root / ".done").exists():
        return int((root / ".done").read_text())
    total = 0
    for i in range(n):
        d = root / f"class{i % 10:02d}"
        d.mkdir(parents=True, exist_ok=True)
        com = f"loch bench image {i}".encode()
        b = bases[i % len(bases)]
        data = b[:2] + b"\xff\xfe" + (len(com) + 2).to_bytes(2, "big") + com + b[2:]
        (d / f"{i:07d}.jpg").write_bytes(data)
        total += len(data)
    (root / ".done").write_text(str(total))
    return total


def warm(root: Path) -> None:
    for p in root.rglob("*"):
        if p.is_file():
            p.read_bytes()


def timed(cmd: list[str]) -> tuple[float, float, int]:
    """Runs cmd; returns wall s, user+sys CPU s, peak RSS MiB."""
    r = subprocess.run(["/usr/bin/time", "-f", "TIME %e %U %S %M", *cmd], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{cmd} failed: {r.stderr[-2000:]}")
    line = [x for x in r.stderr.splitlines() if x.startswith("TIME ")][-1].split()
    return float(line[1]), float(line[2]) + float(line[3]), int(line[4]) // 1024


def rm(p: Path) -> None:
    if p.is_dir():
        shutil.rmtree(p)
    elif p.exists():
        p.unlink()


def run_rounds(contenders: dict[str, list[str]], out: Path, rounds: int) -> dict[str, list[tuple[float, float, int]]]:
    """Runs each contender rounds times, alternating; out is removed after each."""
    res: dict[str, list[tuple[float, float, int]]] = {k: [] for k in contenders}
    for _ in range(rounds):
        for name, cmd in contenders.items():
            rm(out)
            res[name].append(timed(cmd))
            rm(out)
    return res


def median(xs: list[tuple[float, float, int]]) -> tuple[float, float, int]:
    return statistics.median(x[0] for x in xs), statistics.median(x[1] for x in xs), max(x[2] for x in xs)


def table(title: str, res: dict[str, list[tuple[float, float, int]]], base: str, mib: float) -> None:
    print(f"\n{title} (median of {len(next(iter(res.values())))} rounds; ratio = {base} wall / wall)")
    print("| contender | wall s | CPU s | peak RSS MiB | MiB/s | ratio |")
    print("|---|---|---|---|---|---|")
    b = median(res[base])[0]
    for name, xs in res.items():
        w, c, m = median(xs)
        print(f"| {name} | {w:.2f} | {c:.2f} | {m} | {mib / w:.0f} | {b / w:.2f} |")


def have(mod: str) -> bool:
    try:
        __import__(mod)
        return True
    except ImportError:
        return False


def image_contenders(loch: str, root: Path, out: Path, validations: list[str], peers: bool) -> dict[str, list[str]]:
    c = {
        "tar cf": ["tar", "cf", str(out), "-C", str(root), "."],
        "tar cf + fsync": ["sh", "-c", f"tar cf {out} -C {root} . && sync {out}"],
    }
    for v in validations:
        c[f"loch ingest --validate {v}"] = [
            loch, "ingest", "imagefolder", str(root), str(out), "--image-compression", "jpeg", "--validate", v, "--quiet",
        ]
    if peers:
        for peer in ("lance", "deeplake"):
            if have(peer):
                c[f"{peer} ({'binary' if peer == 'lance' else 'jpeg'} column)"] = [sys.executable, str(HERE), f"--{peer}-ingest", str(root), str(out)]
    return c


def files_of(root: Path) -> list[tuple[Path, int]]:
    classes = sorted(p.name for p in root.iterdir() if p.is_dir())
    return [(f, i) for i, c in enumerate(classes) for f in sorted((root / c).iterdir())]


def lance_ingest(root: Path, out: Path) -> None:
    """Lance: the files as a binary column and a label, streamed in batches."""
    import lance
    import pyarrow as pa

    schema = pa.schema([("image", pa.binary()), ("label", pa.int64())])
    files = files_of(root)

    def batches():
        for i in range(0, len(files), 1024):
            part = files[i : i + 1024]
            yield pa.record_batch([pa.array([f.read_bytes() for f, _ in part], pa.binary()), pa.array([lab for _, lab in part], pa.int64())], schema=schema)

    lance.write_dataset(pa.RecordBatchReader.from_batches(schema, batches()), str(out))


def deeplake_ingest(root: Path, out: Path) -> None:
    """Deep Lake 4: the files as a jpeg image column (kept as they are) and a label."""
    import deeplake

    ds = deeplake.create(f"file://{out}")
    ds.add_column("image", deeplake.types.Image(sample_compression="jpeg"))
    ds.add_column("label", deeplake.types.Int64())
    files = files_of(root)
    for i in range(0, len(files), 1024):
        part = files[i : i + 1024]
        ds.append({"image": [f.read_bytes() for f, _ in part], "label": [lab for _, lab in part]})
    ds.commit()


def bench_images(a: argparse.Namespace, bases: list[bytes]) -> None:
    root = a.work / f"jpeg-{a.files}"
    total = make_images(root, a.files, bases)
    warm(root)
    mib = total / 2**20
    res = run_rounds(image_contenders(a.loch, root, a.work / "out", ["sample", "header", "full"], True), a.work / "out", a.rounds)
    table(f"images: {a.files} JPEGs of 224x224, {mib:.0f} MiB", res, "tar cf", mib)


def bench_parquet(a: argparse.Namespace) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = a.parquet_rows
    src = a.work / f"rows-{n}.parquet"
    if not src.exists():
        ids = np.arange(n, dtype=np.int64)
        t = pa.table({
            "id": ids,
            "label": ids % 1000,
            "score": (ids % 9973).astype(np.float64) / 9973,
            "category": pa.array([f"cat{i % 30}" for i in range(n)]),
            "name": pa.array([f"name-{i:09d}" for i in range(n)]),
        })
        pq.write_table(t, src)
    out = a.work / "out"
    copy = f"import duckdb; duckdb.sql(\"COPY (SELECT * FROM read_parquet('{src}')) TO '{out}' (FORMAT parquet)\")"
    contenders = {
        "duckdb COPY TO parquet": [sys.executable, "-c", copy],
        "loch ingest parquet": [a.loch, "ingest", "parquet", str(src), str(out), "--quiet"],
    }
    res = run_rounds(contenders, out, a.rounds)
    table(f"parquet: {n} rows, {src.stat().st_size / 2**20:.0f} MiB of parquet", res, "duckdb COPY TO parquet", src.stat().st_size / 2**20)


def bench_arrays(a: argparse.Namespace) -> None:
    n = a.array_rows
    src = a.work / f"x{n}.npy"
    if not src.exists():
        rng = np.random.default_rng(1)
        np.save(src, rng.integers(0, 256, (n, 64, 64, 3), dtype=np.uint8))
    src.read_bytes()  # page-cached, as the other sources
    out = a.work / "out"
    contenders = {
        "cp": ["cp", str(src), str(out)],
        "dd conv=fsync": ["dd", f"if={src}", f"of={out}", "bs=8M", "conv=fsync", "status=none"],
        "loch ingest npy": [a.loch, "ingest", "npy", str(src), str(out), "--quiet"],
    }
    res = run_rounds(contenders, out, a.rounds)
    mib = src.stat().st_size / 2**20
    table(f"arrays: {n} uint8 64x64x3 arrays, {mib:.0f} MiB", res, "dd conv=fsync", mib)


def bench_scale(a: argparse.Namespace, bases: list[bytes]) -> None:
    print(f"\nscale: loch ingest imagefolder (default --validate sample) and tar cf, median of {a.rounds} rounds")
    print("| files | MiB | tar cf s | loch s | loch CPU s | loch peak RSS MiB | loch s per 1,000 files | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for n in a.scale:
        root = a.work / f"jpeg-{n}"
        total = make_images(root, n, bases)
        warm(root)
        res = run_rounds(image_contenders(a.loch, root, a.work / "out", ["sample"], False), a.work / "out", a.rounds)
        t, (w, c, m) = median(res["tar cf"])[0], median(res["loch ingest --validate sample"])
        print(f"| {n} | {total / 2**20:.0f} | {t:.2f} | {w:.2f} | {c:.2f} | {m} | {1000 * w / n:.3f} | {t / w:.2f} |", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--loch", default="bin/loch")
    p.add_argument("--work", type=Path, default=Path("/tmp/loch-bench-ingest"))
    p.add_argument("--files", type=int, default=10000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--parquet-rows", type=int, default=2_000_000)
    p.add_argument("--array-rows", type=int, default=20_000)
    p.add_argument("--scale", type=lambda s: [int(x) for x in s.split(",")], default=[1000, 10000, 100000])
    p.add_argument("--only", default="images,parquet,arrays,scale", help="comma-separated parts to run")
    p.add_argument("--lance-ingest", nargs=2, type=Path, help=argparse.SUPPRESS)
    p.add_argument("--deeplake-ingest", nargs=2, type=Path, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.lance_ingest:
        return lance_ingest(*a.lance_ingest)
    if a.deeplake_ingest:
        return deeplake_ingest(*a.deeplake_ingest)
    a.work.mkdir(parents=True, exist_ok=True)
    a.loch = str(Path(a.loch).resolve())
    parts = a.only.split(",")
    start = time.time()
    bases = base_jpegs() if {"images", "scale"} & set(parts) else []
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start")
    if "images" in parts:
        bench_images(a, bases)
    if "parquet" in parts:
        bench_parquet(a)
    if "arrays" in parts:
        bench_arrays(a)
    if "scale" in parts:
        bench_scale(a, bases)
    print(f"\n{time.time() - start:.0f} s in all; load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
