"""Peers of loch's ivf-pq at 10M x 128 (issue 37): faiss-cpu IndexIVFFlat,
IndexIVFPQ (plain and re-ranked by IndexRefineFlat), IndexHNSWFlat and
pylance's IVF_PQ, on the vectors loch's own bench wrote.

The vectors, queries and exact truth are the ones BenchmarkIVFReport
leaves in LOCH_VECTOR_DIR (vector/ivf_bench_test.go: data.f32, queries.f32,
truth.u64; its Gaussian mixture, the same draws loch indexes), so every
engine searches the same 10M rows. Unlike bench_vector.py, which loads the
vectors whole, this reads data.f32 by range (never a memory map, so that
a process's peak RSS is its own memory and not the page cache) and keeps
every process under a few GB besides what the engine itself holds.

Fair setup (the issue's brief): every IVF trains on the number of rows
loch trains on, 64 x nlist drawn at random positions (BuildOptions.Sample;
lance: sample_rate 64), the same nlist and PQ m; builds use the same two
threads (faiss's OpenMP, lance's own pool on a 2-CPU machine, loch's
GOMAXPROCS 2); queries run one at a time, faiss with one OpenMP thread
(see bench_vector.py's docstring). Re-ranking PQ kinds re-rank 1,000
candidates, loch's default at 10M (faiss IndexRefine over an IndexFlatL2
of the vectors, k_factor 100; lance refine_factor 100). faiss's k-means
runs loch's 10 iterations (--niter; faiss's default is 25), faiss's PQ
trains on its own sample (256 x 256 rows at most); lance keeps its own
k-means settings (pylance's create_index does not expose them).

HNSW is added in slices of --slice rows and stops once --hnsw-budget
seconds have gone: then it is measured on the rows it holds (a prefix of
the vectors) against the exact truth of that prefix, and the JSON says
so (rows). Each step writes its figures to WORK/<engine>-<phase>.json
as soon as it ends, so an interrupted run keeps what it measured.

Run::

    python bench/vector/bench_10m.py --raw DIR --work /tmp/v10m-w \\
        --engines faiss-ivfflat,faiss-ivfpq,faiss-ivfpq-refine,lance-ivf-pq,faiss-hnsw
    python bench/vector/bench_10m.py --raw DIR --work /tmp/v10m-w --report

Searches at the same load (a shared, noisy machine): build first
(--build-only; several such runs at once), then --rounds N runs every
engine's search phase back to back, N times, the order rotated, loch's
too with --loch-cmd (its Go bench with LOCH_VECTOR_SEARCH_ONLY=1). Each
search reports, besides the median wall time, the process CPU time per
query (user + sys over the query loop / queries), which a loaded machine
changes far less::

    python bench/vector/bench_10m.py --raw DIR --work W --build-only \
        --engines faiss-ivfflat,faiss-ivfpq,lance-ivf-pq
    python bench/vector/bench_10m.py --raw DIR --work W --rounds 3 \
        --engines faiss-ivfflat,faiss-ivfpq,faiss-ivfpq-refine,lance-ivf-pq \
        --loch-cmd "LOCH_VECTOR_SEARCH_ONLY=1 LOCH_VECTOR_DIR=DIR ... ./vector.test -test.bench IVFReport ..."
    python bench/vector/bench_10m.py ... --rounds 3 --loch-cmd x --report
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from bench_vector import K, rss_kb  # bench/vector, the script's folder


class Raw:
    """data.f32 (n x dim little-endian float32) read by range."""

    def __init__(self, raw: Path, dim: int):
        self.path, self.dim = raw / "data.f32", dim
        self.n = self.path.stat().st_size // (4 * dim)

    def rows(self, lo: int, hi: int) -> np.ndarray:
        out = np.empty((hi - lo, self.dim), dtype=np.float32)
        with open(self.path, "rb") as f:
            f.seek(lo * self.dim * 4)
            f.readinto(memoryview(out).cast("B"))
        return out

    def pick(self, ids: np.ndarray) -> np.ndarray:
        out = np.empty((len(ids), self.dim), dtype=np.float32)
        size = self.dim * 4
        fd = os.open(self.path, os.O_RDONLY)
        try:
            for j, i in enumerate(ids):
                out[j] = np.frombuffer(os.pread(fd, size, int(i) * size), dtype=np.float32)
        finally:
            os.close(fd)
        return out

    def slices(self, n: int, step: int = 250_000):
        for lo in range(0, n, step):
            yield lo, self.rows(lo, min(lo + step, n))


def sample(raw: Raw, size: int) -> np.ndarray:
    """size rows at random positions (seed 1), as loch's build draws them."""
    ids = np.sort(np.random.default_rng(1).choice(raw.n, size=min(size, raw.n), replace=False))
    return raw.pick(ids)


def kth_of(raw: Raw, q: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """The exact 10th squared L2 distance of each query, in float64, from
    the truth's ids."""
    out = np.zeros(len(q))
    for i in range(len(q)):
        d = ((raw.pick(np.sort(truth[i])).astype(np.float64) - q[i].astype(np.float64)) ** 2).sum(1)
        out[i] = np.sort(d)[K - 1]
    return out


def exact_prefix(raw: Raw, q: np.ndarray, n: int) -> np.ndarray:
    """The exact top 10 ids of each query over the first n rows."""
    best_d = np.full((len(q), 0), np.inf, dtype=np.float32)
    best_i = np.zeros((len(q), 0), dtype=np.int64)
    for lo, x in raw.slices(n):
        d = (x * x).sum(1)[None, :] - 2 * q @ x.T
        part = np.argpartition(d, 63, axis=1)[:, :64]
        best_d = np.concatenate([best_d, np.take_along_axis(d, part, 1)], 1)
        best_i = np.concatenate([best_i, part + lo], 1)
        keep = np.argsort(best_d, axis=1)[:, :64]
        best_d, best_i = np.take_along_axis(best_d, keep, 1), np.take_along_axis(best_i, keep, 1)
    out = np.zeros((len(q), K), dtype=np.int64)
    for i in range(len(q)):  # exact order in float64 among the best 64
        d = ((raw.pick(best_i[i]).astype(np.float64) - q[i].astype(np.float64)) ** 2).sum(1)
        out[i] = best_i[i][np.argsort(d)[:K]]
    return out


def recall(raw: Raw, q: np.ndarray, kth: np.ndarray, ids: np.ndarray) -> float:
    """Hits within the 10th exact distance (ties are equal answers)."""
    hits = 0
    for i in range(len(q)):
        got = np.array(sorted({int(x) for x in ids[i] if 0 <= x < raw.n}), dtype=np.int64)
        d = ((raw.pick(got).astype(np.float64) - q[i].astype(np.float64)) ** 2).sum(1)
        hits += int((d <= kth[i] * (1 + 1e-6) + 1e-9).sum())
    return hits / (K * len(q))


# Builds: each returns the figures of its index (bytes, rows, ...).


def faiss_build(kind: str, raw: Raw, work: Path, p: dict) -> dict:
    import faiss

    faiss.omp_set_num_threads(p["threads"])
    d = raw.dim
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, p["hnsw_m"])
        index.hnsw.efConstruction = p["ef_construction"]
        t, done, log = time.perf_counter(), 0, []
        for lo, x in raw.slices(raw.n, p["slice"]):
            index.add(x)
            done = lo + len(x)
            log.append([done, round(time.perf_counter() - t, 1), round(time.process_time(), 1)])
            (work / "faiss-hnsw-progress.json").write_text(json.dumps(log))
            if time.perf_counter() - t > p["hnsw_budget"]:
                break
        extra = {"rows": done, "progress": log}
        if not p.get("hnsw_write"):  # searched here: its 7.8 GB are not written to disk
            return extra | {"index_bytes": index_bytes(index)} | hnsw_search(index, raw, work, p)
    elif kind == "ivfpq" and p.get("ivfpq_from_ivfflat"):
        index, extra = ivfpq_from_ivfflat(raw, work, p)
    else:
        quantizer = faiss.IndexFlatL2(d)
        if kind == "ivfflat":
            index = faiss.IndexIVFFlat(quantizer, d, p["nlist"])
        else:
            index = faiss.IndexIVFPQ(quantizer, d, p["nlist"], p["m"], 8)
        index.cp.niter = p["niter"]
        t = time.perf_counter()
        index.train(sample(raw, 64 * p["nlist"]))
        trained = time.perf_counter() - t
        for _, x in raw.slices(raw.n):
            index.add(x)
        extra = {"rows": raw.n, "train_s": trained}
    path = work / f"faiss-{kind}.index"
    faiss.write_index(index, str(path))
    return extra | {"index_bytes": path.stat().st_size}


def ivfpq_from_ivfflat(raw: Raw, work: Path, p: dict):
    """An IndexIVFPQ on IVFFlat's coarse quantizer and list assignment (its
    lists hold the vectors and their ids): only the PQ is trained (on its
    residuals, faiss's own sample) and the vectors encoded, no row is
    assigned again. A from-scratch build trains the same k-means on the
    same sample; this saves the 10M x nlist assignment when CPU is short,
    so its build time is not the from-scratch one."""
    import faiss

    flat = faiss.read_index(str(work / "faiss-ivfflat.index"))
    d, il = flat.d, flat.invlists
    index = faiss.IndexIVFPQ(flat.quantizer, d, flat.nlist, p["m"], 8)
    index.referenced_objects = [flat]  # the quantizer is flat's
    lists = [(lst, il.list_size(lst)) for lst in range(flat.nlist)]

    def rows(lst: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        x = faiss.rev_swig_ptr(il.get_codes(lst), n * d * 4).view(np.float32).reshape(n, d).copy()
        return x, faiss.rev_swig_ptr(il.get_ids(lst), n).copy()

    t = time.perf_counter()
    index.train(sample(raw, 64 * p["nlist"]))  # the quantizer is trained: the PQ alone, on residuals of 256 x 256 of these
    trained = time.perf_counter() - t
    for lst, n in lists:
        if n:
            x, ids = rows(lst, n)
            idx = np.full(n, lst, dtype=np.int64)
            index.add_core(n, faiss.swig_ptr(x), faiss.swig_ptr(ids), faiss.swig_ptr(idx))
    return index, {"rows": int(index.ntotal), "train_s": trained, "from": "faiss-ivfflat's quantizer and lists"}


def index_bytes(index) -> int:
    """The bytes faiss.write_index would write, counted, not written."""
    import faiss

    n = [0]

    def count(buf):
        n[0] += len(buf)
        return len(buf)

    faiss.write_index(index, faiss.PyCallbackIOWriter(count))
    return n[0]


def hnsw_search(index, raw: Raw, work: Path, p: dict) -> dict:
    """The search phase of the HNSW build's process, on the index it holds."""
    import faiss

    faiss.omp_set_num_threads(1)
    q = np.fromfile(raw.path.parent / "queries.f32", dtype="<f4").reshape(-1, raw.dim)

    def search(x: np.ndarray, s: int) -> np.ndarray:
        return index.search(x[None, :], K, params=faiss.SearchParametersHNSW(efSearch=s))[1][0]

    ms, cpu = timed_cpu(search, q, p["settings"], work, "faiss-hnsw")
    return {"search": {"open_s": 0.0, "median_ms": ms, "cpu_ms": cpu, "search_rss_kb": rss_kb(), "load": os.getloadavg()[0]}}


def timed_cpu(search, q: np.ndarray, settings: list[int], work: Path, name: str) -> tuple[list[float], list[float]]:
    """bench_vector.timed's median latency (ms) of one query at a time per
    setting, and the process's CPU time (user + sys, all its threads) per
    query over the same loop: CPU does not grow with the machine's load
    the way wall time does. The ids are left in work as ids-NAME-SETTING.npy."""
    lat, cpu = [], []
    for s in settings:
        ids, times = np.full((len(q), K), -1, dtype=np.int64), []
        c = time.process_time()
        for i in range(len(q)):
            t = time.perf_counter()
            got = search(q[i], s)
            times.append(time.perf_counter() - t)
            ids[i, : len(got)] = np.asarray(got, dtype=np.int64)[:K]
        cpu.append((time.process_time() - c) / len(q) * 1e3)
        np.save(work / f"ids-{name}-{s}.npy", ids)
        lat.append(float(np.median(times)) * 1e3)
    return lat, cpu


def lance_write(raw: Raw, work: Path) -> None:
    import lance
    import pyarrow as pa

    path = work / "lance"
    if (path / "_versions").exists():
        return

    def batches():
        for lo, x in raw.slices(raw.n, 100_000):
            emb = pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), raw.dim)
            yield pa.record_batch([pa.array(np.arange(lo, lo + len(x), dtype=np.int64)), emb], names=["id", "embedding"])

    schema = pa.schema([("id", pa.int64()), ("embedding", pa.list_(pa.float32(), raw.dim))])
    lance.write_dataset(pa.RecordBatchReader.from_batches(schema, batches()), str(path))


def lance_build(raw: Raw, work: Path, p: dict) -> dict:
    import lance

    path = work / "lance"
    ds = lance.dataset(str(path))
    ds = ds.create_index(
        "embedding", index_type="IVF_PQ", num_partitions=p["nlist"], num_sub_vectors=p["m"], metric="L2", replace=True, sample_rate=64
    )
    files = [f for i in ds.list_indices() for f in (path / "_indices" / i["uuid"]).rglob("*")]
    return {"rows": raw.n, "index_bytes": sum(f.stat().st_size for f in files if f.is_file())}


# Searchers: open(raw, work, p) -> search(q, setting) -> ids.


def faiss_open(kind: str, raw: Raw, work: Path, p: dict):
    import faiss

    faiss.omp_set_num_threads(1)
    if kind == "ivfpq-refine":  # the IVFPQ index, re-ranked by the full vectors (held in memory)
        flat = faiss.IndexFlatL2(raw.dim)
        for _, x in raw.slices(raw.n):
            flat.add(x)
        base = faiss.read_index(str(work / "faiss-ivfpq.index"))
        index = faiss.IndexRefine(base, flat)
        index.referenced_objects = [base, flat]  # python owns both
    else:
        index = faiss.read_index(str(work / f"faiss-{kind}.index"))

    def search(q: np.ndarray, s: int) -> np.ndarray:
        if kind == "hnsw":
            params = faiss.SearchParametersHNSW(efSearch=s)
        elif kind == "ivfpq-refine":
            params = faiss.IndexRefineSearchParameters(k_factor=p["rerank"] / K, base_index_params=faiss.SearchParametersIVF(nprobe=s))
        else:
            params = faiss.SearchParametersIVF(nprobe=s)
        return index.search(q[None, :], K, params=params)[1][0]

    return search


def lance_open(raw: Raw, work: Path, p: dict):
    import lance

    ds = lance.dataset(str(work / "lance"))

    def search(q: np.ndarray, s: int) -> np.ndarray:
        t = ds.to_table(columns=["id"], nearest={"column": "embedding", "q": q, "k": K, "nprobes": s, "refine_factor": p["rerank"] // K})
        return t.column("id").to_numpy()

    return search


def worker(phase: str, name: str, raw: Raw, work: Path, p: dict) -> dict:
    """One phase of one engine in its own process."""
    kind = name.split("-", 1)[1]
    lib = __import__("faiss" if name.startswith("faiss") else "lance")
    base_rss = rss_kb()
    if phase == "write":  # lance's copy of the vectors (not part of its index build)
        t, c = time.perf_counter(), time.process_time()
        lance_write(raw, work)
        return {"write_s": time.perf_counter() - t, "write_cpu_s": time.process_time() - c, "write_rss_kb": rss_kb()}
    if phase == "build":
        t, c = time.perf_counter(), time.process_time()
        got = lance_build(raw, work, p) if lib.__name__ == "lance" else faiss_build(kind, raw, work, p)
        return got | {"build_s": time.perf_counter() - t, "build_cpu_s": time.process_time() - c, "build_rss_kb": rss_kb(), "import_rss_kb": base_rss}
    q = np.fromfile(raw.path.parent / "queries.f32", dtype="<f4").reshape(-1, raw.dim)
    t = time.perf_counter()
    search = lance_open(raw, work, p) if lib.__name__ == "lance" else faiss_open(kind, raw, work, p)
    search(q[0], p["settings"][0])  # warm: what opens lazily opens here
    opened = time.perf_counter() - t
    ms, cpu = timed_cpu(search, q, p["settings"], work, name)
    return {"open_s": opened, "median_ms": ms, "cpu_ms": cpu, "search_rss_kb": rss_kb(), "import_rss_kb": base_rss}


def run_worker(args: argparse.Namespace, phase: str, name: str, p: dict) -> dict:
    cmd = ["nice", "-n", "19", sys.executable, __file__, "--worker", phase, name, "--raw", str(args.raw), "--work", str(args.work)]
    cmd += ["--params", json.dumps(p)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{name} {phase}: exit {out.returncode}\n{out.stderr[-3000:]}")
    got = json.loads(out.stdout.strip().splitlines()[-1])
    got["load"] = os.getloadavg()[0]
    (args.work / f"{name}-{phase}.json").write_text(json.dumps(got))
    print(name, phase, json.dumps(got), flush=True)
    return got


def params(args: argparse.Namespace, name: str) -> dict:
    settings = args.ef if name == "faiss-hnsw" else args.nprobe
    return {
        "nlist": args.nlist, "m": args.m, "threads": args.threads, "rerank": args.rerank, "settings": [int(s) for s in settings.split(",")],
        "niter": args.niter, "ivfpq_from_ivfflat": args.ivfpq_from_ivfflat, "hnsw_m": 32, "ef_construction": args.ef_construction, "hnsw_budget": args.hnsw_budget, "slice": args.slice,
    }  # fmt: skip


def build_only(args: argparse.Namespace) -> None:
    """The builds alone (no truth needed): several can run at once, each
    in its own process, and the searches later in --rounds."""
    for name in args.engines.split(","):
        p = params(args, name)
        if name == "lance-ivf-pq":
            run_worker(args, "write", name, p)
        if name != "faiss-ivfpq-refine":
            run_worker(args, "build", name, p)


def bench(args: argparse.Namespace, raw: Raw) -> None:
    q = np.fromfile(args.raw / "queries.f32", dtype="<f4").reshape(-1, raw.dim)
    kth_path = args.work / "kth.npy"
    if not kth_path.exists():
        truth = np.fromfile(args.raw / "truth.u64", dtype="<u8").reshape(-1, K).astype(np.int64)
        np.save(kth_path, kth_of(raw, q, truth))
    for name in args.engines.split(","):
        p = params(args, name)
        if name == "lance-ivf-pq":
            run_worker(args, "write", name, p)
        if name != "faiss-ivfpq-refine":  # it wraps faiss-ivfpq's index
            built = run_worker(args, "build", name, p)
        else:
            built = json.loads((args.work / "faiss-ivfpq-build.json").read_text())
        # HNSW is searched in its build's process (its index is not written)
        row = built.get("search") or run_worker(args, "search", name, p)
        kth, n = np.load(kth_path), built["rows"]
        if n < raw.n:  # HNSW stopped early: truth over the rows it holds
            kth = kth_of(raw, q, exact_prefix(raw, q, n))
        row["recall"] = [recall(raw, q, kth, np.load(args.work / f"ids-{name}-{s}.npy")) for s in p["settings"]]
        row["rows"] = n
        (args.work / f"{name}-search.json").write_text(json.dumps(row))
        print(name, "recall", row["recall"], flush=True)
        if name in args.drop.split(","):
            for f in [args.work / f"faiss-{name[6:]}.index", args.work / "lance"]:
                shutil.rmtree(f, ignore_errors=True) if f.is_dir() else f.unlink(missing_ok=True)


GO_DURATION = {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}


def go_ms(text: str) -> float:
    """A Go time.Duration as printed ("297µs", "11.1ms", "1.2s") in ms."""
    for unit in ("ns", "µs", "us", "ms", "s"):
        if text.endswith(unit) and text[: -len(unit)].replace(".", "", 1).isdigit():
            return float(text[: -len(unit)]) * GO_DURATION[unit]
    raise ValueError(f"not a Go duration: {text!r}")


def loch_search(args: argparse.Namespace) -> dict:
    """One search-only run of loch's Go bench (--loch-cmd: BenchmarkIVFReport
    with LOCH_VECTOR_SEARCH_ONLY=1), its table parsed."""
    out = subprocess.run(["nice", "-n", "19", "bash", "-c", args.loch_cmd], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"loch search: exit {out.returncode}\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    got: dict = {"settings": [], "recall": [], "median_ms": [], "cpu_ms": []}
    for line in out.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0].isdigit():
            got["settings"].append(int(cells[0]))
            got["recall"].append(float(cells[2]))
            got["median_ms"].append(go_ms(cells[3]))
            got["cpu_ms"].append(go_ms(cells[4]))
        elif "peak RSS of the process" in line:
            got["search_rss_kb"] = int(line.rsplit(" ", 2)[-2])
        elif " open: " in line:
            got["open_s"] = go_ms(line.split(" open: ")[1].split(",")[0]) / 1e3
    return got


def rounds(args: argparse.Namespace, raw: Raw) -> None:
    """The search phases of every engine back to back, --rounds times, the
    order rotated each round, so that all of them search at the same load;
    each in its own process (nice 19). Figures per round in
    WORK/TAG-R-ENGINE.json (--round-tag); recall from the first round's ids."""
    names = args.engines.split(",") + (["loch-ivf-pq"] if args.loch_cmd else [])
    q = np.fromfile(args.raw / "queries.f32", dtype="<f4").reshape(-1, raw.dim)
    kth_path = args.work / "kth.npy"
    if not kth_path.exists():
        truth = np.fromfile(args.raw / "truth.u64", dtype="<u8").reshape(-1, K).astype(np.int64)
        np.save(kth_path, kth_of(raw, q, truth))
    kth = np.load(kth_path)
    for r in range(args.rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            if name == "loch-ivf-pq":
                got = loch_search(args)
            else:
                got = run_worker(args, "search", name, params(args, name))
                got["recall"] = [recall(raw, q, kth, np.load(args.work / f"ids-{name}-{s}.npy")) for s in params(args, name)["settings"]]
            got |= {"load": os.getloadavg()[0], "utc": time.strftime("%H:%M:%S", time.gmtime())}
            (args.work / f"{args.round_tag}-{r}-{name}.json").write_text(json.dumps(got))
            print("round", r, name, json.dumps(got), flush=True)


def rounds_report(args: argparse.Namespace) -> str:
    """Per engine and setting: recall, and the median over rounds of the
    wall median and of the CPU per query."""
    names = args.engines.split(",") + (["loch-ivf-pq"] if args.loch_cmd else [])
    out = ["| engine | setting | recall@10 | median latency, ms (rounds) | CPU a query, ms (rounds) | peak RSS searching |", "|---|---|---|---|---|---|"]
    for name in names:
        got = [json.loads(f.read_text()) for f in sorted(args.work.glob(f"{args.round_tag}-*-{name}.json"))]
        if not got:
            continue
        kind = "efSearch" if name == "faiss-hnsw" else "nprobe"
        settings = got[0].get("settings") or params(args, name)["settings"]
        for j, s in enumerate(settings):
            ms = [g["median_ms"][j] for g in got]
            cpu = [g["cpu_ms"][j] for g in got]
            out.append(
                f"| {name} | {kind} {s} | {got[0]['recall'][j]:.3f} | {np.median(ms):.2f} ({', '.join(f'{x:.2f}' for x in ms)}) | "
                f"{np.median(cpu):.2f} ({', '.join(f'{x:.2f}' for x in cpu)}) | {max(g['search_rss_kb'] for g in got) / 1024:.0f} MiB |"
            )
    return "\n".join(out)


def report(args: argparse.Namespace, raw: Raw) -> str:
    out = ["| engine | rows | build wall / CPU | index bytes / raw | peak RSS building / searching | setting: recall@10, median |", "|---|---|---|---|---|---|"]
    size = raw.n * raw.dim * 4
    for name in args.engines.split(","):
        src = "faiss-ivfpq" if name == "faiss-ivfpq-refine" else name
        try:
            b = json.loads((args.work / f"{src}-build.json").read_text())
            s = json.loads((args.work / f"{name}-search.json").read_text())
        except FileNotFoundError:
            continue
        kind = "efSearch" if name == "faiss-hnsw" else "nprobe"
        p = params(args, name)
        cells = ", ".join(f"{x}: {r:.3f} {ms:.2f} ms" for x, r, ms in zip(p["settings"], s.get("recall", []), s["median_ms"]))
        out.append(
            f"| {name} | {s.get('rows', raw.n):,} | {b['build_s']:.0f} / {b['build_cpu_s']:.0f} s | {b['index_bytes'] / size:.3f} | "
            f"{b['build_rss_kb'] / 1024:.0f} / {s['search_rss_kb'] / 1024:.0f} MiB | {kind} {cells} |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--raw", type=Path, required=True, help="LOCH_VECTOR_DIR of BenchmarkIVFReport (data.f32, queries.f32, truth.u64)")
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--work", type=Path, required=True, help="folder for the peers' indexes and figures")
    ap.add_argument("--engines", default="faiss-ivfflat,faiss-ivfpq,faiss-ivfpq-refine,lance-ivf-pq,faiss-hnsw")
    ap.add_argument("--nlist", type=int, default=4096)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--nprobe", default="8,16,32")
    ap.add_argument("--ef", default="16,64,256", help="HNSW efSearch settings")
    ap.add_argument("--ef-construction", type=int, default=40, help="HNSW efConstruction (faiss's default 40)")
    ap.add_argument("--hnsw-budget", type=float, default=1800, help="seconds of HNSW adding before it stops")
    ap.add_argument("--slice", type=int, default=500_000, help="HNSW rows added at a time")
    ap.add_argument("--rerank", type=int, default=1000, help="candidates the re-ranking PQ kinds re-rank")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--niter", type=int, default=10, help="faiss's k-means iterations (loch's: 10)")
    ap.add_argument("--drop", default="", help="engines whose index is deleted once measured (disk)")
    ap.add_argument("--build-only", action="store_true", help="build the engines' indexes, search nothing")
    ap.add_argument("--ivfpq-from-ivfflat", action="store_true", help="faiss-ivfpq on faiss-ivfflat's quantizer and lists (see ivfpq_from_ivfflat)")
    ap.add_argument("--rounds", type=int, default=0, help="search every engine back to back this many times (indexes built)")
    ap.add_argument("--round-tag", default="round", help="with --rounds: the figures' file prefix, WORK/TAG-R-ENGINE.json")
    ap.add_argument("--loch-cmd", default="", help="with --rounds: the shell command of loch's search-only Go bench")
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--params", help=argparse.SUPPRESS)
    args = ap.parse_args()
    raw = Raw(args.raw, args.dim)
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], raw, args.work, json.loads(args.params))))
        return
    if args.report:
        print(rounds_report(args) if args.rounds else report(args, raw))
        return
    args.work.mkdir(parents=True, exist_ok=True)
    if args.build_only:
        build_only(args)
        return
    if args.rounds:
        rounds(args, raw)
        return
    bench(args, raw)


if __name__ == "__main__":
    main()
