"""Vector indexes: loch's ivf-flat and ivf-pq against faiss-cpu
(IndexIVFFlat, IndexIVFPQ, IndexIVFPQ re-ranked by IndexRefineFlat,
IndexHNSWFlat) and pylance's IVF_PQ, on the same vectors and cores
(issue 37).

Datasets (``--data``):
  mixture:N[xD]  N x D (128) float32 from the Gaussian mixture of loch's
                 vector benchmarks (vector/ivf_bench_test.go: 1,000 centres
                 N(0, 1), points centre + N(0, 1)), drawn by numpy (seed 1):
                 the same law, not the same draws; 200 queries from it.
  raw:DIR        the data.f32 and queries.f32 that vector/ivf_bench_test.go
                 leaves in LOCH_VECTOR_DIR (--dim D).
  digits         scikit-learn's digits images (1,797 x 64, in the wheel):
                 200 held out as queries (seed 0), the rest indexed.
  debian         Debian's package descriptions embedded by all-MiniLM-L6-v2
                 (bench/search/debian.py: --lists, --cache; --model lsa:
                 TF-IDF + SVD instead), its 200 queries embedded alike.

Everything is L2, k = 10, one query at a time. Each engine builds in a
process of its own and searches in another (the index opened from disk,
only the queries in memory), so that each peak RSS (ru_maxrss) is its own.
Recall@10 is against exact search, counting a hit when its distance is
within the 10th exact distance (ties: equal vectors are equal answers).
Peak RSS is VmHWM (see rss_kb).
Settings: nprobe for the IVF kinds (defaults: the powers of two nearest
nlist / 128, nlist / 32, nlist / 8; nlist defaults to sqrt(N)), efSearch
16, 64, 256 for HNSW (M 32). faiss searches one query with one OpenMP
thread (--search-threads): it parallelizes a batch over its queries, so a
second thread adds nothing to one query but a barrier, and on a loaded
machine the wait for a descheduled thread at that barrier made faiss's
single queries 5-10x slower. loch ivf-pq re-ranks its default
max(400, 40 k) rows, faiss's refined IVFPQ k_factor 40 and pylance
refine_factor 40: the same 400 candidates (faiss's is faiss-ivfpq's index
wrapped in IndexRefineFlat: its build time is the IVFPQ's plus the
wrapping). PQ: m = D / 8 bytes a row.

Prints a JSON line per engine and, with --markdown, the table for
bench/RESULTS.md. Run (``make bench-vector`` installs the pinned packages)::

    python bench/vector/bench_vector.py --data mixture:1000000 --work /tmp/vbench --markdown
    python bench/vector/bench_vector.py --data debian --lists DIR --work /tmp/vbench --markdown
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

K = 10
ENGINES = ["loch-ivf-flat", "loch-ivf-pq", "faiss-ivfflat", "faiss-ivfpq", "faiss-ivfpq-refine", "faiss-hnsw", "lance-ivf-pq"]
HNSW_EF = [16, 64, 256]


def rss_kb() -> int:
    """This process's peak RSS (kB): VmHWM, the high-water mark of its
    address space. Not ru_maxrss, which Linux carries over from the parent
    at fork and exec (the parent maps the vectors)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


# Datasets: each writes base.npy, queries.npy and a loch dataset into work.


def mixture(n: int, dim: int, work: Path, comps: int = 1000, sigma: float = 1.0) -> None:
    rng = np.random.default_rng(1)
    centres = rng.standard_normal((comps, dim), dtype=np.float32)
    base = np.lib.format.open_memmap(work / "base.npy", mode="w+", dtype=np.float32, shape=(n, dim))
    for lo in range(0, n, 1 << 18):
        hi = min(lo + (1 << 18), n)
        base[lo:hi] = centres[rng.integers(comps, size=hi - lo)] + sigma * rng.standard_normal((hi - lo, dim), dtype=np.float32)
    base.flush()
    q = centres[rng.integers(comps, size=200)] + sigma * rng.standard_normal((200, dim), dtype=np.float32)
    np.save(work / "queries.npy", q)


def prepare(args: argparse.Namespace, work: Path) -> None:
    """Writes the vectors, the queries, the exact truth and a loch dataset
    of them (once: a second run reuses them)."""
    if (work / "truth.npy").exists():
        return
    work.mkdir(parents=True, exist_ok=True)
    kind, _, arg = args.data.partition(":")
    url = str(work / "loch")
    if kind == "mixture":
        n, _, d = arg.partition("x")
        mixture(int(n), int(d or 128), work)
    elif kind == "raw":
        np.save(work / "base.npy", np.fromfile(Path(arg) / "data.f32", dtype="<f4").reshape(-1, args.dim))
        np.save(work / "queries.npy", np.fromfile(Path(arg) / "queries.f32", dtype="<f4").reshape(-1, args.dim))
    elif kind == "digits":
        from sklearn.datasets import load_digits

        x = load_digits().data.astype(np.float32)
        perm = np.random.default_rng(0).permutation(len(x))
        np.save(work / "base.npy", np.ascontiguousarray(x[perm[200:]]))
        np.save(work / "queries.npy", np.ascontiguousarray(x[perm[:200]]))
    elif kind == "debian":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "search"))
        import debian

        c = debian.load(args.lists, args.cache, model=args.model)
        np.save(work / "base.npy", c.vectors)
        np.save(work / "queries.npy", c.query_vectors)
        debian.write_dataset(url, c)
    else:
        raise SystemExit(f"--data {args.data}: want mixture:N, raw:DIR, digits or debian")
    base = np.load(work / "base.npy", mmap_mode="r")
    if kind != "debian":
        write_loch(url, base)
    np.save(work / "truth.npy", exact(base, np.load(work / "queries.npy")))


def write_loch(url: str, base: np.ndarray) -> None:
    import loch

    ds = loch.create(url, schema={"embedding": loch.Embedding(base.shape[1])})
    for lo in range(0, len(base), 100_000):
        ds.extend({"embedding": np.ascontiguousarray(base[lo : lo + 100_000])})
    ds.commit("vectors")


def exact(base: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The exact 10th smallest squared L2 distance of each query (float64,
    recomputed exactly over the best 64 of a float32 pass)."""
    q64 = q.astype(np.float64)
    best_d = np.full((len(q), 0), np.inf)
    best_i = np.zeros((len(q), 0), dtype=np.int64)
    for lo in range(0, len(base), 1 << 17):
        x = np.asarray(base[lo : lo + (1 << 17)])
        d = (x * x).sum(1)[None, :] - 2 * q @ x.T
        take = min(64, d.shape[1])
        part = np.argpartition(d, take - 1, axis=1)[:, :take]
        best_d = np.concatenate([best_d, np.take_along_axis(d, part, 1)], 1)
        best_i = np.concatenate([best_i, part + lo], 1)
        keep = np.argsort(best_d, axis=1)[:, :64]
        best_d, best_i = np.take_along_axis(best_d, keep, 1), np.take_along_axis(best_i, keep, 1)
    out = np.zeros(len(q))
    for i in range(len(q)):
        d = ((np.asarray(base[np.sort(best_i[i])], dtype=np.float64) - q64[i]) ** 2).sum(1)
        out[i] = np.sort(d)[K - 1]
    return out


def recall(base: np.ndarray, q: np.ndarray, kth: np.ndarray, ids: np.ndarray) -> float:
    hits = 0
    for i in range(len(q)):
        got = sorted({int(x) for x in ids[i] if 0 <= x < len(base)})
        d = ((np.asarray(base[got], dtype=np.float64) - q[i].astype(np.float64)) ** 2).sum(1)
        hits += int((d <= kth[i] * (1 + 1e-6) + 1e-9).sum())
    return hits / (K * len(q))


# Engines: build(work, p) -> index bytes; open_searcher(work, p) -> search(q, setting) -> ids.


def loch_build(kind: str):
    def build(work: Path, p: dict) -> int:
        import loch

        ds = loch.open(str(work / "loch"))
        info = ds.create_index(column="embedding", metric="l2", kind=kind, nlist=p["nlist"], m=p["m"] if kind == "ivf-pq" else None)
        return int(info.bytes)

    return build


def loch_open(work: Path, p: dict):
    import loch

    ds = loch.open(str(work / "loch"))

    def search(q: np.ndarray, s: int) -> np.ndarray:
        return ds.search(q, k=K, column="embedding", metric="l2", nprobe=s).row_ids

    return search


def faiss_index(kind: str, d: int, p: dict):
    import faiss

    faiss.omp_set_num_threads(p["threads"])
    if kind == "hnsw":
        return faiss.IndexHNSWFlat(d, 32)
    quantizer = faiss.IndexFlatL2(d)
    if kind == "ivfflat":
        return faiss.IndexIVFFlat(quantizer, d, p["nlist"])
    return faiss.IndexIVFPQ(quantizer, d, p["nlist"], p["m"], 8)


def faiss_build(kind: str):
    def build(work: Path, p: dict) -> int:
        import faiss

        xb = np.load(work / "base.npy")
        if kind == "ivfpq-refine":  # faiss-ivfpq's index, re-ranked by the full vectors
            index = faiss.IndexRefineFlat(faiss.read_index(str(work / "faiss-ivfpq.index")), faiss.swig_ptr(xb))
        else:
            index = faiss_index(kind, xb.shape[1], p)
            if kind != "hnsw":
                index.train(xb)
            index.add(xb)
        path = work / f"faiss-{kind}.index"
        faiss.write_index(index, str(path))
        return path.stat().st_size

    return build


def faiss_open(kind: str):
    def open_(work: Path, p: dict):
        import faiss

        faiss.omp_set_num_threads(p.get("search_threads", 1))
        index = faiss.read_index(str(work / f"faiss-{kind}.index"))

        def search(q: np.ndarray, s: int) -> np.ndarray:
            if kind == "hnsw":
                params = faiss.SearchParametersHNSW(efSearch=s)
            elif kind == "ivfpq-refine":
                params = faiss.IndexRefineSearchParameters(k_factor=40, base_index_params=faiss.SearchParametersIVF(nprobe=s))
            else:
                params = faiss.SearchParametersIVF(nprobe=s)
            return index.search(q[None, :], K, params=params)[1][0]

        return search

    return open_


def lance_build(work: Path, p: dict) -> int:
    import lance

    path = work / "lance"  # the data, written once by lance_write (not timed)
    ds = lance.dataset(str(path))
    ds = ds.create_index("embedding", index_type="IVF_PQ", num_partitions=p["nlist"], num_sub_vectors=p["m"], metric="L2", replace=True)
    # The index now in use (an index it replaced stays in _indices until cleanup).
    files = [f for i in ds.list_indices() for f in (path / "_indices" / i["uuid"]).rglob("*")]
    return sum(f.stat().st_size for f in files if f.is_file())


def lance_write(work: Path) -> None:
    import lance
    import pyarrow as pa

    path = work / "lance"
    if path.exists():
        return
    xb = np.load(work / "base.npy", mmap_mode="r")
    d = xb.shape[1]

    def batches():
        for lo in range(0, len(xb), 100_000):
            x = np.ascontiguousarray(xb[lo : lo + 100_000])
            emb = pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), d)
            yield pa.record_batch([pa.array(np.arange(lo, lo + len(x), dtype=np.int64)), emb], names=["id", "embedding"])

    schema = pa.schema([("id", pa.int64()), ("embedding", pa.list_(pa.float32(), d))])
    lance.write_dataset(pa.RecordBatchReader.from_batches(schema, batches()), str(path))


def lance_open(work: Path, p: dict):
    import lance

    ds = lance.dataset(str(work / "lance"))

    def search(q: np.ndarray, s: int) -> np.ndarray:
        t = ds.to_table(columns=["id"], nearest={"column": "embedding", "q": q, "k": K, "nprobes": s, "refine_factor": 40})
        return t.column("id").to_numpy()

    return search


def engine(name: str):
    """(build, open) of an engine."""
    if name.startswith("loch-"):
        return loch_build(name[5:]), loch_open
    if name.startswith("faiss-"):
        return faiss_build(name[6:]), faiss_open(name[6:])
    if name == "lance-ivf-pq":
        return lance_build, lance_open
    raise SystemExit(f"engine {name!r}: want one of {', '.join(ENGINES)}")


def worker(phase: str, name: str, work: Path, p: dict) -> dict:
    """One phase of one engine, in its own process: build (time, bytes) or
    search (median latency of one query at a time per setting; the ids
    are left in work for the parent's recall)."""
    build, open_ = engine(name)
    __import__({"loch": "loch", "fais": "faiss", "lanc": "lance"}[name[:4]])
    base_rss = rss_kb()  # the interpreter, numpy and the engine's library
    if phase == "build":
        t = time.perf_counter()
        size = build(work, p)
        took = time.perf_counter() - t
        wraps = {"wraps": "faiss-ivfpq"} if name == "faiss-ivfpq-refine" else {}
        return wraps | {"build_s": took, "index_bytes": size, "build_rss_kb": rss_kb(), "import_rss_kb": base_rss}
    q = np.load(work / "queries.npy")
    t = time.perf_counter()
    search = open_(work, p)
    search(q[0], p["settings"][0])  # warm: the first search opens what is lazily opened
    opened = time.perf_counter() - t
    return {"open_s": opened, "median_ms": timed(search, q, p["settings"], work, name), "search_rss_kb": rss_kb(), "import_rss_kb": base_rss}


def timed(search, q: np.ndarray, settings: list[int], work: Path, name: str) -> list[float]:
    """The median latency (ms) of one query at a time per setting; the
    ids found are left in work as ids-NAME-SETTING.npy."""
    lat = []
    for s in settings:
        ids, times = np.full((len(q), K), -1, dtype=np.int64), []
        for i in range(len(q)):
            t = time.perf_counter()
            got = search(q[i], s)
            times.append(time.perf_counter() - t)
            ids[i, : len(got)] = np.asarray(got, dtype=np.int64)[:K]
        np.save(work / f"ids-{name}-{s}.npy", ids)
        lat.append(statistics.median(times) * 1e3)
    return lat


def run_worker(phase: str, name: str, work: Path, p: dict) -> dict:
    cmd = [sys.executable, __file__, "--worker", phase, name, "--work", str(work), "--params", json.dumps(p)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def params(args: argparse.Namespace, n: int, d: int, name: str) -> dict:
    nlist = args.nlist or round(math.sqrt(n))
    if name == "faiss-hnsw":
        settings = HNSW_EF
    elif args.nprobe:
        settings = [int(s) for s in args.nprobe.split(",")]
    else:
        settings = []
        for f in (128, 32, 8):
            s = max(1, 2 ** round(math.log2(max(nlist / f, 1))))
            settings.append(s if not settings or s > settings[-1] else settings[-1] * 2)
    if name == "faiss-ivfpq-refine" and "faiss-ivfpq" not in args.engines.split(","):
        raise SystemExit("faiss-ivfpq-refine re-ranks faiss-ivfpq's index: list faiss-ivfpq before it")
    return {"nlist": nlist, "m": args.m or d // 8, "threads": args.threads, "search_threads": args.search_threads, "settings": settings}


def bench(args: argparse.Namespace, work: Path) -> list[dict]:
    base = np.load(work / "base.npy", mmap_mode="r")
    q, kth = np.load(work / "queries.npy"), np.load(work / "truth.npy")
    rows = []
    for name in args.engines.split(","):
        p = params(args, len(base), base.shape[1], name)
        if name == "lance-ivf-pq":
            lance_write(work)
        saved = work / f"row-{name}.json"
        if args.search_only:  # the index built by an earlier run (loch: only the last kind built)
            built = {k: v for k, v in json.loads(saved.read_text()).items() if k in ("build_s", "index_bytes", "build_rss_kb", "wraps")}
        else:
            built = run_worker("build", name, work, p)
        row = {"engine": name, "n": len(base), "dim": base.shape[1], **p} | built
        row |= run_worker("search", name, work, p)
        row["recall"] = [recall(base, q, kth, np.load(work / f"ids-{name}-{s}.npy")) for s in p["settings"]]
        saved.write_text(json.dumps(row))
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def markdown(rows: list[dict]) -> str:
    raw = rows[0]["n"] * rows[0]["dim"] * 4
    out = [f"| {rows[0]['n']:,} x {rows[0]['dim']}, nlist {rows[0]['nlist']} | build | index bytes / raw | peak RSS building / searching | "
           "setting: recall@10, median latency (3 settings) |", "|---|---|---|---|---|"]  # fmt: skip
    built = {r["engine"]: r["build_s"] for r in rows}
    for r in rows:
        if "wraps" in r:  # faiss-ivfpq-refine: its build is faiss-ivfpq's and the wrapping
            r = r | {"build_s": built.get(r["wraps"], math.nan) + r["build_s"]}
        cells = ", ".join(f"{s}: {rc:.3f} {ms:.2f} ms" for s, rc, ms in zip(r["settings"], r["recall"], r["median_ms"]))
        kind = "efSearch" if r["engine"] == "faiss-hnsw" else "nprobe"
        out.append(f"| {r['engine']} | {r['build_s']:.1f} s | {r['index_bytes'] / raw:.3f} | "
                   f"{r['build_rss_kb'] / 1024:.0f} / {r['search_rss_kb'] / 1024:.0f} MiB | {kind} {cells} |")  # fmt: skip
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="mixture:100000")
    ap.add_argument("--work", type=Path, required=True, help="folder for the vectors, datasets and indexes")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--nlist", type=int, default=0)
    ap.add_argument("--nprobe", default="", help="comma-separated nprobe settings (IVF kinds)")
    ap.add_argument("--m", type=int, default=0, help="PQ bytes a row (default D / 8)")
    ap.add_argument("--dim", type=int, default=128, help="raw:DIR's dimensions")
    ap.add_argument("--threads", type=int, default=2, help="faiss's OpenMP threads building")
    ap.add_argument("--search-threads", type=int, default=1, help="faiss's OpenMP threads searching (see above)")
    ap.add_argument("--lists", help="debian: apt lists folder with Translation-en files")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache/loch/bench-debian", help="debian: embedding cache")
    ap.add_argument("--model", choices=["minilm", "lsa"], default="minilm", help="debian: the embedding (lsa: no model)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--search-only", action="store_true", help="search the indexes an earlier run built")
    ap.add_argument("--report", action="store_true", help="print the table of an earlier run's rows")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--params", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], args.work, json.loads(args.params))))
        return
    if args.report:  # the table of the rows an earlier run left
        found = [args.work / f"row-{e}.json" for e in args.engines.split(",")]
        rows = [json.loads(f.read_text()) for f in found if f.exists()]
        print(markdown(rows))
        return
    t = time.perf_counter()
    prepare(args, args.work)
    print(f"# {args.data}: prepared in {time.perf_counter() - t:.0f} s, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}", file=sys.stderr)
    rows = bench(args, args.work)
    if args.markdown:
        print(markdown(rows))
    if os.environ.get("LOCH_VECTOR_BENCH_CLEAN"):
        shutil.rmtree(args.work)


if __name__ == "__main__":
    main()
