"""Hybrid search (vector + BM25, fused by reciprocal rank) on Debian's
package descriptions: loch's ``ds.search(vector, text=...)`` against the
same fusion of the exact rankings (issue 37).

Data: bench/search/debian.py's corpus, vectors and 200 queries (each
query's text and its vector, as the vector bench uses them). The dataset
gets a vector index (ivf-flat, cosine, nlist sqrt(N)) and a BM25 index of
``description``.

Truth: for each query, the exact vector ranking (``exact=True``) and the
exact BM25 ranking (the BM25 index scores every matching row), their
``--window`` (10) best rows each, fused by RRF (1 / (60 + rank), ranks
from 1), as loch's hybrid search fuses them: the union of the two exact
top-10s, ordered. Reported, per nprobe of the vector side (and exact):

- recall@10 against that fusion (a hit: a row whose fused score over the
  exact rankings reaches the 10th best, so that ties count alike);
- the share of the hybrid top 10 found in the union of the exact vector
  and exact BM25 top 10s;
- the median latency of one hybrid query;

and, for scale, the same recall of the vector side alone and of the BM25
side alone. Prints JSON lines and, with --markdown, the table::

    python bench/search/bench_hybrid.py --lists DIR --model lsa --work /tmp/hybrid --markdown
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import debian  # noqa: E402

K = 10
RRF_K = 60


def fused(vec: list[int], txt: list[int]) -> dict[int, float]:
    """RRF scores of the rows of two rankings."""
    out: dict[int, float] = {}
    for ranking in (vec, txt):
        for i, r in enumerate(ranking):
            out[r] = out.get(r, 0.0) + 1 / (RRF_K + i + 1)
    return out


def prepare(args: argparse.Namespace):
    import loch

    c = debian.load(args.lists, args.cache, model=args.model)
    url = str(args.work / "loch")
    if not (args.work / "loch").exists():
        args.work.mkdir(parents=True, exist_ok=True)
        debian.write_dataset(url, c)
        ds = loch.open(url)
        ds.create_index(column="embedding", metric="cosine", kind="ivf-flat")
        ds.create_index(column="description", kind="fts")
    return c, loch.open(url)


def truth(ds, c, window: int) -> list[dict]:
    """Per query: the exact rankings (each side's window best) and their
    fusion."""
    out = []
    for qv, qt in zip(c.query_vectors, c.queries):
        vec = ds.search(qv, k=window, column="embedding", metric="cosine", exact=True).row_ids.tolist()
        txt = ds.search(text=qt, column="description", k=window).row_ids.tolist()
        f = fused(vec, txt)
        best = sorted(f.values(), reverse=True)
        out.append({"vec": vec, "txt": txt, "scores": f, "kth": best[min(K, len(best)) - 1] if best else math.inf})
    return out


def score(got: list[int], t: dict) -> tuple[float, float]:
    """Hits against the fusion (tie-aware) and against the union, of K."""
    union = set(t["vec"][:K]) | set(t["txt"][:K])
    hits = sum(1 for r in set(got) if t["scores"].get(r, 0.0) >= t["kth"] - 1e-12)
    want = min(K, len(t["scores"]))
    return hits / max(want, 1), len(set(got) & union) / max(min(K, len(union)), 1)


def run(ds, c, truths: list[dict], label: str, search) -> dict:
    search(c.query_vectors[0], c.queries[0])  # warm: opens both indexes
    rec, uni, lat = [], [], []
    for qv, qt, t in zip(c.query_vectors, c.queries, truths):
        t0 = time.perf_counter()
        got = search(qv, qt)
        lat.append(time.perf_counter() - t0)
        r, u = score([int(x) for x in got], t)
        rec.append(r)
        uni.append(u)
    return {"search": label, "recall": float(np.mean(rec)), "in_union": float(np.mean(uni)), "median_ms": statistics.median(lat) * 1e3}


def bench(args: argparse.Namespace) -> list[dict]:
    c, ds = prepare(args)
    truths = truth(ds, c, args.window)
    rows = []
    for np_ in [int(s) for s in args.nprobe.split(",")] + [0]:
        label = f"hybrid, nprobe {np_}" if np_ else "hybrid, exact vector side"
        opts = {"nprobe": np_} if np_ else {"exact": True}
        rows.append(run(ds, c, truths, label, lambda qv, qt, o=opts: ds.search(
            qv, text=qt, k=K, column="embedding", text_column="description", metric="cosine", rank_window=args.window, **o).row_ids))  # fmt: skip
        print(json.dumps(rows[-1]), flush=True)
    mid = int(args.nprobe.split(",")[1])
    rows.append(run(ds, c, truths, f"vector side alone, nprobe {mid}",
                    lambda qv, qt: ds.search(qv, k=K, column="embedding", metric="cosine", nprobe=mid).row_ids))  # fmt: skip
    rows.append(run(ds, c, truths, "BM25 side alone", lambda qv, qt: ds.search(text=qt, column="description", k=K).row_ids))
    for r in rows[-2:]:
        print(json.dumps(r), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lists", help="apt lists folder with Translation-en files")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache/loch/bench-debian")
    ap.add_argument("--model", choices=["minilm", "lsa"], default="minilm")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--nprobe", default="2,8,32")
    ap.add_argument("--window", type=int, default=K, help="rank_window: each side's rows fused")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    rows = bench(args)
    if args.markdown:
        print("| search (k = 10) | recall@10 against the exact fusion | in the union of the exact top 10s | median latency |\n|---|---|---|---|")
        for r in rows:
            print(f"| {r['search']} | {r['recall']:.3f} | {r['in_union']:.3f} | {r['median_ms']:.2f} ms |")


if __name__ == "__main__":
    main()
