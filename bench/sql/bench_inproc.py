"""SQL from Python in this process (issue 39, target 4): loch's SQL
handle (ds.sql: DuckDB inside libloch.so, results as Arrow) against
DuckDB over Parquet of the same rows, in the same process, through the
same engine and the same Arrow hand-over (``read_parquet`` in the same
statement text), so that the ratio is loch's scan against Parquet's; and
the ``loch query`` command that Python ran before (a process per query).

Rows (as in the issue): id, label, score, a 30-value category, a unique
name, one of 20 JSON documents. 5 interleaved rounds, median.

Prints one JSON object; ``--markdown`` prints the table for
bench/RESULTS.md. Run:
    .venv/bin/python bench/sql/bench_inproc.py --rows 2000000 --markdown
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import loch
from loch.query import cli

#: "fixed cost" reads no table: loch's SELECT without FROM reads ds.
QUERIES = {
    "fixed cost": "SELECT 1 AS one FROM range(1)",
    "filter+aggregate": "SELECT count(*), sum(id) FROM {T} WHERE score > 0.9 AND (meta->>'src') = 'b'",
    "group-by": "SELECT category, count(*), avg(score), max(meta->>'q') FROM {T} GROUP BY category",
    "top-10": "SELECT id, name, score FROM {T} ORDER BY score DESC LIMIT 10",
    "point lookup": "SELECT * FROM {T} WHERE id = {ID}",
}


def make_rows(n: int, seed: int = 0) -> pa.Table:
    """The issue's rows: id, label, score, category (30 values), a unique
    name, meta (20 JSON documents)."""
    rng = np.random.default_rng(seed)
    docs = [json.dumps({"src": chr(ord("a") + i), "q": i, "tags": ["x"] * (i % 3)}) for i in range(20)]
    cats = [f"category-{i:02d}" for i in range(30)]
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "label": pa.array(rng.integers(0, 1000, n, dtype=np.int64)),
        "score": pa.array(rng.random(n)),
        "category": pa.array(np.array(cats, dtype=object)[rng.integers(0, 30, n)]),
        "name": pa.array([f"name-{i:08d}" for i in range(n)]),
        "meta": pa.array(np.array(docs, dtype=object)[rng.integers(0, 20, n)]),
    })  # fmt: skip


def build(dirpath: Path, rows: int, reuse: bool = False) -> tuple[str, str]:
    """Writes the rows as Parquet and as a loch catalog table (through
    loch SQL's INSERT ... SELECT from the Parquet file); returns the
    Parquet path and the catalog root. With reuse, the files a run before
    left in dirpath are used as they are (interleaved A/B runs of two
    builds of loch then time the same datasets)."""
    parquet = str(dirpath / "rows.parquet")
    if reuse and (dirpath / "lake").is_dir() and os.path.exists(parquet):
        return parquet, str(dirpath / "lake")
    pq.write_table(make_rows(rows), parquet)
    root = str(dirpath / "lake")
    cat = loch.connect(root)
    cat.sql("CREATE TABLE t (id BIGINT, label BIGINT, score DOUBLE, category VARCHAR, name VARCHAR, meta JSON)")
    cat.sql(f"INSERT INTO t SELECT * FROM read_parquet('{parquet}')")
    cat.close()
    return parquet, root


def same(a: pa.Table, b: pa.Table) -> bool:
    """Whether two results agree on their common columns, rows sorted by
    the first, floats to 1e-9 relative (sums in another order)."""
    cols = [c for c in a.column_names if c in b.column_names]
    rows = [sorted(t.select(cols).to_pylist(), key=lambda r: str(r[cols[0]])) for t in (a, b)]
    if len(rows[0]) != len(rows[1]):
        return False
    for x, y in zip(*rows):
        for c in cols:
            u, v = x[c], y[c]
            if isinstance(u, float) and isinstance(v, float):
                if abs(u - v) > 1e-9 * max(1.0, abs(u)):
                    return False
            elif u != v:
                return False
    return True


#: The clock queries are timed by: wall time, or with --clock cpu the
#: process's CPU time (every thread's, DuckDB's included), which a loaded
#: machine inflates less.
CLOCK = time.perf_counter


def timed(fn) -> float:
    t = CLOCK()
    fn()
    return CLOCK() - t


def run(rows: int, rounds: int, workdir: Path, cli_rounds: int, reuse: bool = False) -> dict:
    parquet, root = build(workdir, rows, reuse)
    cat = loch.connect(root)
    ds = cat.open_table("t")
    point = rows * 3 // 5
    loch_q = {k: q.format(T="ds", ID=point) for k, q in QUERIES.items()}
    pq_q = {k: q.format(T=f"read_parquet('{parquet}')", ID=point) for k, q in QUERIES.items()}
    # The answers agree (the Parquet file holds the same rows).
    for k in QUERIES:
        assert same(ds.sql(loch_q[k]), ds.sql(pq_q[k])), k
    times: dict[str, dict[str, list[float]]] = {k: {"loch": [], "parquet": [], "cli": []} for k in QUERIES}
    first: list[float] = []
    catalog: list[float] = []
    for r in range(rounds):
        # The first query of a new handle: DuckDB started, the table opened.
        fresh = cat.open_table("t")
        first.append(timed(lambda: fresh.sql(QUERIES["fixed cost"])))
        fresh.close()
        catalog.append(timed(lambda: cat.sql(QUERIES["fixed cost"])))
        for k in QUERIES:
            times[k]["loch"].append(timed(lambda: ds.sql(loch_q[k])))
            times[k]["parquet"].append(timed(lambda: ds.sql(pq_q[k])))
            if r < cli_rounds:
                url = ds.url
                times[k]["cli"].append(timed(lambda: subprocess.run([cli(), "query", url, loch_q[k], "--format", "csv"],
                                                                    check=True, capture_output=True)))  # fmt: skip
    med = {k: {w: statistics.median(v) * 1e3 for w, v in t.items() if v} for k, t in times.items()}
    return {"rows": rows, "rounds": rounds, "first_fixed_ms": statistics.median(first) * 1e3,
            "catalog_fixed_ms": statistics.median(catalog) * 1e3, "median_ms": med,
            "loch_bytes": sum(f.stat().st_size for f in Path(root).rglob("*") if f.is_file()),
            "parquet_bytes": os.path.getsize(parquet)}  # fmt: skip


def markdown(res: dict) -> str:
    lines = [
        f"| query ({res['rows']:,} rows, median of {res['rounds']}) | loch in-process | DuckDB over Parquet, same process | loch / Parquet | `loch query` (a process) |",
        "|---|---|---|---|---|",
        f"| fixed cost, a new handle's first statement (DuckDB started) | {res['first_fixed_ms']:.1f} ms | | | |",
        f"| fixed cost through `loch.connect(root).sql` (rows as dicts) | {res['catalog_fixed_ms']:.1f} ms | | | |",
    ]
    for k, m in res["median_ms"].items():
        cli_ms = f"{m['cli']:.0f} ms" if "cli" in m else ""
        lines.append(f"| {k} | {m['loch']:.1f} ms | {m['parquet']:.1f} ms | {m['loch'] / m['parquet']:.2f}x | {cli_ms} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cli-rounds", type=int, default=3, help="rounds that also time `loch query` (a process each)")
    ap.add_argument("--dir", help="working directory (default: a temporary one, removed)")
    ap.add_argument("--reuse", action="store_true", help="use the rows and table a run before left in --dir")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall", help="time queries by wall or process CPU time")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    global CLOCK
    CLOCK = time.process_time if a.clock == "cpu" else time.perf_counter
    work = Path(a.dir or tempfile.mkdtemp(prefix="loch-sql-bench-"))
    try:
        res = run(a.rows, a.rounds, work, a.cli_rounds, a.reuse and bool(a.dir))
    finally:
        if not a.dir:
            shutil.rmtree(work, ignore_errors=True)
    print(markdown(res) if a.markdown else json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
