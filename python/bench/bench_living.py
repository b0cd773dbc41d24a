"""Compaction and upsert: loch against Lance (pylance) on the same rows, in
the same run (issue 34's "Compaction and upsert against Lance").

Each round writes a table of ``--rows`` rows (id, score, caption, a
float32[64] vector) in ``--commits`` small appends to a loch dataset and to
a Lance dataset, then times

- compaction: ``ds.compact()`` against Lance's ``optimize.compact_files()``;
- upsert: ``ds.merge_insert(src, on="id")`` against Lance's
  ``merge_insert("id").when_matched_update_all().when_not_matched_insert_all()``
  with a source of ``--upsert`` rows, half of them existing ids (updated),
  half new (inserted);

and checks that both give the same rows. Contenders alternate; the table
prints the median of the rounds. pylance is a bench-only dependency
(python/requirements-bench.txt), never a test dependency.

    python python/bench/bench_living.py --rows 200000 --commits 200 --rounds 3
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import loch


def table(lo: int, hi: int, version: int = 0) -> pa.Table:
    ids = np.arange(lo, hi, dtype=np.int64)
    rng = np.random.default_rng(lo + 7919 * version)
    vec = rng.standard_normal((hi - lo, 64), dtype=np.float32)
    return pa.table(
        {
            "id": ids,
            "score": (ids % 1000).astype(np.float32) / 1000 + version,
            "caption": [f"caption {i} v{version}" for i in range(lo, hi)],
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1)), 64),
        }
    )


def loch_schema() -> dict[str, Any]:
    return {
        "id": loch.Tensor("int64", shape=()),
        "score": loch.Tensor("float32", shape=()),
        "caption": loch.Text(),
        "vec": loch.Tensor("float32", shape=(64,)),
    }


def loch_rows(t: pa.Table) -> dict[str, Any]:
    return {
        "id": t["id"].to_numpy(),
        "score": t["score"].to_numpy(),
        "caption": t["caption"].to_pylist(),
        "vec": t["vec"].combine_chunks().flatten().to_numpy().reshape(-1, 64),
    }


def run_loch(root: Path, rows: int, commits: int, src: pa.Table) -> dict[str, float]:
    ds = loch.create(str(root / "loch"), schema=loch_schema())
    step = rows // commits
    for lo in range(0, rows, step):
        ds.extend(loch_rows(table(lo, min(rows, lo + step))))
        ds.commit()
    t0 = time.perf_counter()
    rep = ds.compact()
    compact = time.perf_counter() - t0
    t0 = time.perf_counter()
    ds.merge_insert(loch_rows(src), on="id")
    upsert = time.perf_counter() - t0
    ids = np.asarray(ds["id"][:])
    return {"compact": compact, "upsert": upsert, "fragments_before": rep.fragments_before,
            "fragments_after": rep.fragments_after, "rows": len(ids), "id_sum": int(ids.sum())}  # fmt: skip


def run_lance(root: Path, rows: int, commits: int, src: pa.Table) -> dict[str, float]:
    import lance

    path = str(root / "lance")
    step = rows // commits
    for i, lo in enumerate(range(0, rows, step)):
        lance.write_dataset(table(lo, min(rows, lo + step)), path, mode="create" if i == 0 else "append")
    ds = lance.dataset(path)
    before = len(ds.get_fragments())
    t0 = time.perf_counter()
    ds.optimize.compact_files()
    compact = time.perf_counter() - t0
    ds = lance.dataset(path)
    after = len(ds.get_fragments())
    t0 = time.perf_counter()
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
    upsert = time.perf_counter() - t0
    ds = lance.dataset(path)
    ids = ds.to_table(columns=["id"])["id"].to_numpy()
    return {"compact": compact, "upsert": upsert, "fragments_before": before, "fragments_after": after,
            "rows": len(ids), "id_sum": int(ids.sum())}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--commits", type=int, default=200)
    ap.add_argument("--upsert", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=None, help="where to write (default: a temporary directory)")
    args = ap.parse_args()
    import lance

    half = args.upsert // 2
    # Half the source updates existing ids (spread over the table), half
    # inserts new ones.
    existing = table(0, args.rows, version=1).take(np.linspace(0, args.rows - 1, half).astype(np.int64))
    src = pa.concat_tables([existing, table(args.rows, args.rows + half, version=1)])
    results: dict[str, list[dict[str, float]]] = {"loch": [], "lance": []}
    base = Path(tempfile.mkdtemp(prefix="loch-living-", dir=args.dir))
    try:
        for r in range(args.rounds):
            order = ["loch", "lance"] if r % 2 == 0 else ["lance", "loch"]
            for name in order:
                root = base / f"{name}-{r}"
                root.mkdir()
                run = run_loch if name == "loch" else run_lance
                results[name].append(run(root, args.rows, args.commits, src))
                shutil.rmtree(root)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    a, b = results["loch"][0], results["lance"][0]
    if (a["rows"], a["id_sum"]) != (b["rows"], b["id_sum"]):
        raise SystemExit(f"loch and Lance disagree after the upsert: {a} vs {b}")

    def med(name: str, key: str) -> float:
        return statistics.median(x[key] for x in results[name])

    print(f"\n{args.rows:,} rows in {args.commits} appends, upsert of {args.upsert:,} rows "
          f"({half:,} updates, {half:,} inserts); pylance {lance.__version__}; median of {args.rounds} rounds\n")  # fmt: skip
    print("| | loch | Lance | loch / Lance |\n|---|---|---|---|")
    for key, label in (("compact", "compaction (s)"), ("upsert", "upsert (s)")):
        x, y = med("loch", key), med("lance", key)
        print(f"| {label} | {x:.3f} | {y:.3f} | {x / y:.2f} |")
    for key in ("fragments_before", "fragments_after"):
        print(f"| {key.replace('_', ' ')} | {int(med('loch', key))} | {int(med('lance', key))} | |")
    print(f"| rows after the upsert | {int(a['rows']):,} | {int(b['rows']):,} | |")


if __name__ == "__main__":
    main()
