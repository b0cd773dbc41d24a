"""Single-query latency of loch's IVF-flat index against faiss-cpu
IndexIVFFlat on the same vectors, cores, nlist and nprobe (issue 37,
point 4), robust to a loaded machine.

``LOCH_VECTOR_BENCH=100000x64 LOCH_VECTOR_NLIST=316 LOCH_VECTOR_NPROBE=39
LOCH_VECTOR_KINDS=ivf-flat LOCH_VECTOR_DIR=DIR go test -run '^$' -bench
IVFReport -benchtime 1x ./vector`` leaves the vectors, queries, exact truth
and loch's dataset with its index in DIR; ``go test -c -o BIN ./vector``
makes the Go benchmark binary. Then::

    python python/bench/bench_ivf_latency.py --dir DIR --dim 64 --nlist 316 --nprobe 39 --go-bin BIN

In each of ``--rounds`` rounds, in a rotating order, each engine searches
every query once, one query a call, and the round's CPU time (the whole
process's, ``time.process_time``: it counts faiss's OpenMP threads and
Go's runtime threads) and wall time are divided by the queries:

- ``faiss``: ``index.search`` of one row, ``faiss.omp_set_num_threads(--threads)``;
- ``loch python``: ``ds.search(q, k=10, column="embedding", metric="l2",
  nprobe=...)`` after a first search opened the index (the held path);
- ``loch C call``: the C ABI call ds.search makes, with its arguments
  made once (what is left when Python's own work is taken out);
- ``loch go``: BenchmarkIVFQuery (``--go-bin``) run once a round, in its
  own process: the open index's Search and the Searcher's SearchOpen
  (the search the C call makes), CPU and wall a query as it reports them;
  ``--go-bin main=BIN1 --go-bin new=BIN2`` compares two builds.

It prints each round and then, per engine, the median over rounds of CPU
and wall time a query and its ratio to faiss's; recall@10 against the
exact truth. faiss-cpu is a bench-only dependency
(python/requirements-bench.txt).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import faiss
import numpy as np

import loch


def faiss_engine(xb: np.ndarray, nlist: int, nprobe: int) -> Callable[[np.ndarray], np.ndarray]:
    """Trains and fills faiss's IndexIVFFlat (L2) and returns its search of one row."""
    d = xb.shape[1]
    index = faiss.IndexIVFFlat(faiss.IndexFlatL2(d), d, nlist)
    index.train(xb)
    index.add(xb)
    index.nprobe = nprobe

    def search(q: np.ndarray) -> np.ndarray:
        return index.search(q[None, :], 10)[1][0]

    return search


def loch_engines(url: str, nprobe: int) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    """ds.search, and the C call it makes with its arguments made once."""
    ds = loch.open(url)
    ds.search(np.zeros(ds.schema["embedding"].shape[0], np.float32), k=10, column="embedding", metric="l2", nprobe=nprobe)

    def python(q: np.ndarray) -> np.ndarray:
        return ds.search(q, k=10, column="embedding", metric="l2", nprobe=nprobe).row_ids

    ids = np.zeros((1, 10), np.uint64)
    dists = np.zeros((1, 10), np.float32)
    counts = np.zeros(1, np.int64)
    opts = json.dumps({"metric": "l2", "nprobe": nprobe, "exact": False, "rerank": 0, "held": True}).encode()

    def c_call(q: np.ndarray) -> np.ndarray:
        meta = ds._read_str("loch_vector_search", b"embedding", opts, q.ctypes.data, 1, q.shape[0], 10, None, -1,
                            ids.ctypes.data, dists.ctypes.data, counts.ctypes.data)  # fmt: skip
        if '"retry"' in meta:
            raise RuntimeError("the held search found no open index")
        return ids[0, : counts[0]]

    return {"loch python": python, "loch C call": c_call}


def timed(search: Callable[[np.ndarray], np.ndarray], xq: np.ndarray, truth: np.ndarray) -> tuple[float, float, float]:
    """CPU and wall microseconds a query over one pass of the queries, and recall@10."""
    hits = 0
    c0, w0 = time.process_time(), time.perf_counter()
    for i in range(len(xq)):
        got = search(xq[i])
        hits += len(set(got.tolist()) & set(truth[i].tolist()))
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    return cpu / len(xq) * 1e6, wall / len(xq) * 1e6, hits / truth.size


_GO_LINE = re.compile(r"BenchmarkIVFQuery/(\w+)-\d+\s+\d+\s+([\d.]+) ns/op\s+([\d.]+) cpu-ns/op\s+([\d.]+) recall@10")


def go_round(go_bin: str, env: dict[str, str], queries: int) -> dict[str, tuple[float, float, float]]:
    """One run of BenchmarkIVFQuery: CPU and wall microseconds a query and
    recall, per path; go_bin is PATH or LABEL=PATH (a build to compare)."""
    label, _, path = go_bin.rpartition("=")
    out = subprocess.run([path, "-test.run", "^$", "-test.bench", "IVFQuery", "-test.benchtime", f"{queries}x"],
                         env=os.environ | env, capture_output=True, text=True, check=True).stdout  # fmt: skip
    got = {}
    for m in _GO_LINE.finditer(out):
        got[f"loch go{' ' + label if label else ''} {m[1]}"] = (float(m[3]) / 1e3, float(m[2]) / 1e3, float(m[4]))
    if not got:
        raise RuntimeError(f"no BenchmarkIVFQuery lines in:\n{out}")
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True, type=Path)
    ap.add_argument("--dim", required=True, type=int)
    ap.add_argument("--nlist", type=int, required=True)
    ap.add_argument("--nprobe", type=int, required=True)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--go-bin", action="append", default=[], help="go test -c -o BIN ./vector; LABEL=BIN, repeated, compares builds")
    args = ap.parse_args()
    faiss.omp_set_num_threads(args.threads)
    xb = np.fromfile(args.dir / "data.f32", dtype="<f4").reshape(-1, args.dim)
    xq = np.fromfile(args.dir / "queries.f32", dtype="<f4").reshape(-1, args.dim)
    truth = np.fromfile(args.dir / "truth.u64", dtype="<u8").reshape(-1, 10)
    engines = {"faiss": faiss_engine(xb, args.nlist, args.nprobe)} | loch_engines(str(args.dir / "ds"), args.nprobe)
    go_env = {"LOCH_VECTOR_DIR": str(args.dir), "LOCH_VECTOR_BENCH": f"{len(xb)}x{args.dim}", "LOCH_VECTOR_NPROBE": str(args.nprobe)}
    del xb
    for search in engines.values():  # warm the caches
        timed(search, xq[:20], truth[:20])
    rows: dict[str, list[tuple[float, float, float]]] = {}
    names = list(engines)
    print(f"{len(xq)} queries a round, faiss {faiss.__version__} with {args.threads} OpenMP threads, load {os.getloadavg()[0]:.1f}")
    for r in range(args.rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            rows.setdefault(name, []).append(timed(engines[name], xq, truth))
        for go_bin in args.go_bin:
            for name, v in go_round(go_bin, go_env, len(xq)).items():
                rows.setdefault(name, []).append(v)
        line = ", ".join(f"{n} {v[-1][0]:.0f}/{v[-1][1]:.0f}" for n, v in rows.items())
        print(f"round {r + 1} (CPU/wall us a query; load {os.getloadavg()[0]:.1f}): {line}", flush=True)
    fc = statistics.median(v[0] for v in rows["faiss"])
    fw = statistics.median(v[1] for v in rows["faiss"])
    print("\n| engine | CPU a query (median of rounds) | wall a query | CPU / faiss | wall / faiss | recall@10 |")
    print("|---|---|---|---|---|---|")
    for name, v in rows.items():
        c, w = statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)
        print(f"| {name} | {c:.0f} us | {w:.0f} us | {c / fc:.2f} | {w / fw:.2f} | {v[0][2]:.3f} |")


if __name__ == "__main__":
    main()
