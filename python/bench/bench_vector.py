"""Vector indexes: faiss-cpu on the vectors loch's BenchmarkIVFReport made
(issue 37's baselines, same vectors, same cores).

``LOCH_VECTOR_DIR=DIR go test -run '^$' -bench IVFReport -benchtime 1x ./vector``
leaves ``data.f32`` (N x D float32), ``queries.f32`` (200 x D) and
``truth.u64`` (the exact top 10 of each query, row ids = positions) in DIR;
this script builds one faiss index of them and prints build time, the
serialized index's bytes, peak RSS (of this process, which also holds the
raw vectors) and recall@10 and the median latency of one query at a time at
each setting::

    python python/bench/bench_vector.py --dir DIR --dim 128 --kind ivfflat --nlist 4000 --settings 8,32,128
    python python/bench/bench_vector.py --dir DIR --dim 128 --kind ivfpq --nlist 4000 --m 16 --settings 8,32,128
    python python/bench/bench_vector.py --dir DIR --dim 128 --kind hnsw --settings 16,64,256

Settings are nprobe for the IVF kinds and efSearch for HNSW (M 32);
``ivfpq-refine`` is IndexIVFPQ re-ranked by IndexRefineFlat (k_factor 40). Run each
kind in its own process so that its peak RSS is its own. faiss-cpu is a
bench-only dependency (python/requirements-bench.txt).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from pathlib import Path

import faiss
import numpy as np


def build(kind: str, xb: np.ndarray, nlist: int, m: int) -> faiss.Index:
    """Trains and fills one index of the vectors (L2)."""
    d = xb.shape[1]
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, 32)
        index.add(xb)
        return index
    quantizer = faiss.IndexFlatL2(d)
    if kind == "ivfflat":
        index = faiss.IndexIVFFlat(quantizer, d, nlist)
    else:
        index = faiss.IndexIVFPQ(quantizer, d, nlist, m, 8)
    if kind == "ivfpq-refine":
        # Re-ranked by the full vectors, as loch's ivf-pq is (k_factor 40:
        # 400 candidates for k = 10, loch's default).
        index = faiss.IndexRefineFlat(index)
        index.k_factor = 40
    index.train(xb)
    index.add(xb)
    return index


def measure(index: faiss.Index, kind: str, setting: int, xq: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """Recall@10 and the median latency (ms) of one query at a time."""
    if kind == "hnsw":
        index.hnsw.efSearch = setting
    elif kind == "ivfpq-refine":
        faiss.extract_index_ivf(index).nprobe = setting
    else:
        index.nprobe = setting
    lat, hits = [], 0
    for i in range(len(xq)):
        t = time.perf_counter()
        _, ids = index.search(xq[i : i + 1], 10)
        lat.append(time.perf_counter() - t)
        hits += len(set(ids[0].tolist()) & set(truth[i].tolist()))
    return hits / truth.size, statistics.median(lat) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True, type=Path)
    ap.add_argument("--dim", required=True, type=int)
    ap.add_argument("--kind", required=True, choices=["ivfflat", "ivfpq", "ivfpq-refine", "hnsw"])
    ap.add_argument("--nlist", type=int, default=1000)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--settings", default="8,32,128")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    faiss.omp_set_num_threads(args.threads)
    xb = np.fromfile(args.dir / "data.f32", dtype="<f4").reshape(-1, args.dim)
    xq = np.fromfile(args.dir / "queries.f32", dtype="<f4").reshape(-1, args.dim)
    truth = np.fromfile(args.dir / "truth.u64", dtype="<u8").reshape(-1, 10)
    t = time.perf_counter()
    index = build(args.kind, xb, args.nlist, args.m)
    took = time.perf_counter() - t
    size = faiss.serialize_index(index).size
    raw = xb.nbytes
    print(f"faiss {faiss.__version__} {args.kind}: {len(xb)} x {args.dim}, nlist {args.nlist}, m {args.m}, {args.threads} threads")
    print(f"build {took:.2f} s ({took / len(xb) * 1e6:.2f} us a row), {size / 2**20:.1f} MiB ({size / raw:.3f} x raw)")
    print("| setting | recall@10 | median latency (1 query) |\n|---|---|---|")
    for s in args.settings.split(","):
        rec, ms = measure(index, args.kind, int(s), xq, truth)
        print(f"| {s} | {rec:.3f} | {ms:.3f} ms |")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} kB (with the {raw / 2**20:.0f} MiB of raw vectors)")


if __name__ == "__main__":
    main()
