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
  each of ``--scale`` file counts (10x apart), ``loch ingest parquet`` at
  each of ``--scale-parquet`` row counts and ``loch ingest npy`` at each of
  ``--scale-arrays`` array counts: time should grow with the data, peak
  RSS stay flat.

``--loch-base`` adds a second loch binary (say, main's) as a contender in
every table, run alternately with ``--loch`` in the same rounds: an A/B
pair measured under the same load.

    python python/bench/bench_ingest.py --loch bin/loch --work /tmp/ib \
        --files 10000 --rounds 3 --scale 1000,10000,100000 --loch-base /tmp/loch-main
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
from collections.abc import Callable
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
    """Reads root (a file, or every file below a folder) into the page cache."""
    for p in [root] if root.is_file() else root.rglob("*"):
        if p.is_file():
            with p.open("rb") as f:
                while f.read(1 << 24):
                    pass


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


def lochs(a: argparse.Namespace) -> dict[str, str]:
    """The loch binaries to run by contender name suffix: ``--loch`` ("") and ``--loch-base`` (" (base)")."""
    out = {"": a.loch}
    if a.loch_base:
        out[" (base)"] = a.loch_base
    return out


def image_contenders(bins: dict[str, str], root: Path, out: Path, validations: list[str], peers: bool) -> dict[str, list[str]]:
    c = {
        "tar cf": ["tar", "cf", str(out), "-C", str(root), "."],
        "tar cf + fsync": ["sh", "-c", f"tar cf {out} -C {root} . && sync {out}"],
    }
    for v in validations:
        for suffix, loch in bins.items():
            c[f"loch ingest --validate {v}{suffix}"] = [
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
    res = run_rounds(image_contenders(lochs(a), root, a.work / "out", ["sample", "header", "full"], True), a.work / "out", a.rounds)
    table(f"images: {a.files} JPEGs of 224x224, {mib:.0f} MiB", res, "tar cf", mib)


def make_parquet(work: Path, n: int) -> Path:
    """n rows (id, label, score, a 30-value category, a unique name) in one Parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = work / f"rows-{n}.parquet"
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
    return src


def loch_contenders(bins: dict[str, str], fmt: str, src: Path, out: Path) -> dict[str, list[str]]:
    """Each loch's ``loch ingest FMT SRC OUT --quiet``, named by its suffix."""
    return {
        f"loch ingest {fmt}{suffix}": [loch, "ingest", fmt, str(src), str(out), "--quiet"]
        for suffix, loch in bins.items()
    }


def parquet_contenders(bins: dict[str, str], src: Path, out: Path) -> dict[str, list[str]]:
    copy = f"import duckdb; duckdb.sql(\"COPY (SELECT * FROM read_parquet('{src}')) TO '{out}' (FORMAT parquet)\")"
    return {"duckdb COPY TO parquet": [sys.executable, "-c", copy], **loch_contenders(bins, "parquet", src, out)}


def bench_file(
    a: argparse.Namespace,
    src: Path,
    contenders: Callable[[dict[str, str], Path, Path], dict[str, list[str]]],
    title: str,
    base: str,
) -> None:
    """Runs the contenders on the source file src and prints their table, titled by title with src's size in
    MiB as ``{mib}``."""
    out = a.work / "out"
    res = run_rounds(contenders(lochs(a), src, out), out, a.rounds)
    mib = src.stat().st_size / 2**20
    table(title.format(mib=mib), res, base, mib)


def bench_parquet(a: argparse.Namespace) -> None:
    n = a.parquet_rows
    title = f"parquet: {n} rows, {{mib:.0f}} MiB of parquet"
    bench_file(a, make_parquet(a.work, n), parquet_contenders, title, "duckdb COPY TO parquet")


def make_npy(work: Path, n: int) -> Path:
    """n random uint8 64x64x3 arrays in one .npy, page-cached as the other sources."""
    src = work / f"x{n}.npy"
    if not src.exists():
        rng = np.random.default_rng(1)
        x = np.lib.format.open_memmap(src, mode="w+", dtype=np.uint8, shape=(n, 64, 64, 3))
        for i in range(0, n, 10_000):
            x[i : i + 10_000] = rng.integers(0, 256, x[i : i + 10_000].shape, dtype=np.uint8)
        x.flush()
        del x
    warm(src.parent / src.name)
    return src


def array_contenders(bins: dict[str, str], src: Path, out: Path) -> dict[str, list[str]]:
    return {
        "cp": ["cp", str(src), str(out)],
        "dd conv=fsync": ["dd", f"if={src}", f"of={out}", "bs=8M", "conv=fsync", "status=none"],
        **loch_contenders(bins, "npy", src, out),
    }


def bench_arrays(a: argparse.Namespace) -> None:
    n = a.array_rows
    title = f"arrays: {n} uint8 64x64x3 arrays, {{mib:.0f}} MiB"
    bench_file(a, make_npy(a.work, n), array_contenders, title, "dd conv=fsync")


def scale_row(n: int, size_mib: float, res: dict[str, list[tuple[float, float, int]]], base: str) -> None:
    """Prints one row of a scale table: the baseline's time, then each loch's time, CPU, peak RSS and seconds per 1,000 items."""
    t = median(res[base])[0]
    cells = [f"{n}", f"{size_mib:.0f}", f"{t:.2f}"]
    for name, xs in res.items():
        if name.startswith("loch"):
            w, c, m = median(xs)
            cells += [f"{w:.2f}", f"{c:.2f}", f"{m}", f"{1000 * w / n:.3f}"]
    print("| " + " | ".join(cells) + " |", flush=True)


def scale_header(what: str, base: str, bins: dict[str, str]) -> None:
    cols = [what, "MiB", f"{base} s"]
    for suffix in bins:
        cols += [f"loch{suffix} s", f"loch{suffix} CPU s", f"loch{suffix} peak RSS MiB", f"loch{suffix} s per 1,000"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))


def scale_table(a: argparse.Namespace, title: str, what: str, base: tuple[str, str], sizes: list[int],
                make: Callable[[int], tuple[Path, float]],
                contenders: Callable[[dict[str, str], Path, Path], dict[str, list[str]]]) -> None:  # fmt: skip
    """One scale table: for each size n, the contenders on the source make(n) gives (with its MiB), against the
    baseline base (its name in the header, its contender); the source is deleted after each size unless --keep."""
    bins, out = lochs(a), a.work / "out"
    print(f"\nscale: {title}, median of {a.rounds} rounds")
    scale_header(what, base[0], bins)
    for n in sizes:
        src, mib = make(n)
        scale_row(n, mib, run_rounds(contenders(bins, src, out), out, a.rounds), base[1])
        if not a.keep:
            rm(src)


def bench_scale(a: argparse.Namespace, bases: list[bytes]) -> None:
    """Each ingest kind at sizes 10x apart; the generated sources are deleted after each size."""

    def images(n: int) -> tuple[Path, float]:
        root = a.work / f"jpeg-{n}"
        total = make_images(root, n, bases)
        warm(root)
        return root, total / 2**20

    def parquet(n: int) -> tuple[Path, float]:
        src = make_parquet(a.work, n)
        warm(src)
        return src, src.stat().st_size / 2**20

    def arrays(n: int) -> tuple[Path, float]:
        src = make_npy(a.work, n)
        return src, src.stat().st_size / 2**20

    def image_cs(bins: dict[str, str], root: Path, out: Path) -> dict[str, list[str]]:
        c = image_contenders(bins, root, out, ["sample"], False)
        return {k: v for k, v in c.items() if k != "tar cf + fsync"}

    def array_cs(bins: dict[str, str], src: Path, out: Path) -> dict[str, list[str]]:
        return {k: v for k, v in array_contenders(bins, src, out).items() if k != "cp"}

    images_title = "loch ingest imagefolder (default --validate sample) and tar cf"
    scale_table(a, images_title, "files", ("tar cf", "tar cf"), a.scale, images, image_cs)
    parquet_title = "loch ingest parquet and DuckDB's COPY TO parquet"
    parquet_base = ("duckdb COPY", "duckdb COPY TO parquet")
    scale_table(a, parquet_title, "rows", parquet_base, a.scale_parquet, parquet, parquet_contenders)
    arrays_title = "loch ingest npy and dd conv=fsync"
    scale_table(a, arrays_title, "arrays", ("dd conv=fsync", "dd conv=fsync"), a.scale_arrays, arrays, array_cs)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--loch", default="bin/loch")
    p.add_argument("--loch-base", help="a second loch binary (say, main's) run alternately with --loch, for an A/B pair")
    p.add_argument("--work", type=Path, default=Path("/tmp/loch-bench-ingest"))
    p.add_argument("--files", type=int, default=10000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--parquet-rows", type=int, default=2_000_000)
    p.add_argument("--array-rows", type=int, default=20_000)
    ints = lambda s: [int(x) for x in s.split(",") if x]  # noqa: E731
    p.add_argument("--scale", type=ints, default=[1000, 10000, 100000], help="image counts of the scale part")
    p.add_argument("--scale-parquet", type=ints, default=[100_000, 1_000_000, 10_000_000], help="row counts of the scale part")
    p.add_argument("--scale-arrays", type=ints, default=[2000, 20_000, 200_000], help="array counts of the scale part")
    p.add_argument("--keep", action="store_true", help="keep the scale part's generated sources")
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
    if a.loch_base:
        a.loch_base = str(Path(a.loch_base).resolve())
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
