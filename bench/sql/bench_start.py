"""Fixed costs of SQL (issue 39, target 4): the ``loch`` command's start
(``loch version``, ``loch query DS "SELECT 1"``) and a statement's cost
from Python after the first (``ds.sql``, ``ds.query``,
``loch.connect(root).sql``), each against a baseline in the same run.

The commands: ``--cli`` (default: the SDK's ``loch``) against
``--baseline-cli`` (e.g. main's, built with ``go build -o
/tmp/main-loch ./cmd/loch``), runs interleaved A, B, A, B; the median
wall time and the median CPU time (user + system of the child, from
``wait4``: the measure a loaded machine inflates least).

Python: this interpreter's ``loch`` against ``--baseline-python`` (an
interpreter with another build of the SDK, e.g. main's), each in a child
process of its own, alternating; per statement the median of ``--n``
(200) after a first, in wall time and in the process's CPU time
(``time.process_time``, all threads).

Prints one JSON object; ``--markdown`` prints the tables for
bench/RESULTS.md. Run:
    .venv/bin/python bench/sql/bench_start.py --baseline-cli /tmp/main-loch \\
        --baseline-python /tmp/main-venv/bin/python --markdown
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The statements whose fixed cost Python measures, by the call that runs
#: them; {k} is the call's number: a statement new to the handle each time
#: (the handle keeps what it learnt of a statement's text, not its answer).
STATEMENTS = {
    "ds.sql": "SELECT 1 AS one FROM range(1)",
    "ds.query": "SELECT id FROM ds WHERE id = 3",
    "ds.query, a new statement each call": "SELECT id FROM ds WHERE id = 3 OR id = {k}",
    "loch.connect(root).sql": "SELECT 1 AS one FROM range(1)",
}

#: The call that runs each statement.
CALLS = {"ds.sql": "sql", "ds.query": "query", "ds.query, a new statement each call": "query", "loch.connect(root).sql": "cat"}


def make_catalog(root: str) -> str:
    """A catalog at root with table t of 10 rows; returns t's URL."""
    import loch

    cat = loch.connect(root)
    cat.sql("CREATE TABLE t (id BIGINT, name VARCHAR)")
    cat.sql("INSERT INTO t SELECT i, 'n' || i FROM range(10) r(i)")
    url = cat.open_table("t").url
    cat.close()
    return str(url)


def run_cli(argv: list[str]) -> tuple[float, float]:
    """Runs a command to its end; returns its wall and CPU seconds."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{argv}: exit {p.returncode}: {p.stderr.read().decode() if p.stderr else ''}")
    return wall, ru.ru_utime + ru.ru_stime


def cli_starts(clis: dict[str, str], table: str, rounds: int) -> dict[str, dict[str, dict[str, float]]]:
    """Median wall and CPU ms of each command line, per CLI, interleaved."""
    cmds = {"loch version": ["version"], 'loch query DS "SELECT 1"': ["query", table, "SELECT 1"]}
    got: dict[str, dict[str, list[tuple[float, float]]]] = {c: {k: [] for k in clis} for c in cmds}
    for name, args in cmds.items():
        for path in clis.values():  # warm the page cache
            run_cli([path, *args])
        for _ in range(rounds):
            for k, path in clis.items():
                got[name][k].append(run_cli([path, *args]))
    return {
        c: {k: {"wall_ms": statistics.median(w for w, _ in v) * 1e3, "cpu_ms": statistics.median(u for _, u in v) * 1e3} for k, v in per.items()}
        for c, per in got.items()
    }  # fmt: skip


def python_fixed(root: str, n: int) -> dict[str, dict[str, float]]:
    """Median wall and CPU ms of each statement after the first, in this
    process."""
    import loch

    cat = loch.connect(root)
    ds = cat.open_table("t")
    calls = {"sql": ds.sql, "query": ds.query, "cat": cat.sql}
    out = {}
    for name, q in STATEMENTS.items():
        fn = calls[CALLS[name]]
        fn(q.format(k=1000))
        walls, cpus = [], []
        for k in range(n):
            text = q.format(k=1001 + k)
            w, c = time.perf_counter(), time.process_time()
            fn(text)
            cpus.append(time.process_time() - c)
            walls.append(time.perf_counter() - w)
        out[name] = {"wall_ms": statistics.median(walls) * 1e3, "cpu_ms": statistics.median(cpus) * 1e3}
    ds.close()
    cat.close()
    return out


def python_child(python: str, root: str, n: int) -> dict[str, dict[str, float]]:
    """python_fixed run by another interpreter (another build of loch)."""
    out = subprocess.run([python, __file__, "--child", root, "--n", str(n)], check=True, capture_output=True, text=True)
    return dict(json.loads(out.stdout))


def python_ab(pythons: dict[str, str], root: str, n: int, rounds: int) -> dict[str, dict[str, dict[str, float]]]:
    """Each interpreter's python_fixed, alternating for rounds; the median
    of the rounds' medians."""
    got: dict[str, list[dict[str, dict[str, float]]]] = {k: [] for k in pythons}
    for _ in range(rounds):
        for k, py in pythons.items():
            got[k].append(python_child(py, root, n))
    return {
        k: {s: {m: statistics.median(r[s][m] for r in runs) for m in ("wall_ms", "cpu_ms")} for s in STATEMENTS}
        for k, runs in got.items()
    }  # fmt: skip


def markdown(res: dict) -> str:
    """The result as the tables of bench/RESULTS.md."""
    lines = [f"load average {res['load'][0]:.1f} / {res['load'][1]:.1f} (start / end)", ""]
    for title, table in (("command", res["cli"]), ("Python, after the first", res["python"])):
        keys = list(next(iter(table.values())).keys()) if title == "command" else list(table.keys())
        rows = table if title == "command" else {s: {k: table[k][s] for k in keys} for s in STATEMENTS}
        lines += [
            f"| {title} | " + " | ".join(f"{k} wall / CPU ms" for k in keys) + " | B / A (CPU) |",
            "|---|" + "---|" * (len(keys) + 1),
        ]
        for name, per in rows.items():
            cells = [f"{per[k]['wall_ms']:.1f} / {per[k]['cpu_ms']:.1f}" for k in keys]
            ratio = per[keys[-1]]["cpu_ms"] / per[keys[0]]["cpu_ms"] if len(keys) > 1 else 1.0
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {ratio:.2f} |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", help="the loch command measured (default: the SDK's)")
    ap.add_argument("--baseline-cli", help="the loch command to compare with (A)")
    ap.add_argument("--baseline-python", help="a Python whose loch is the baseline (A)")
    ap.add_argument("--rounds", type=int, default=20, help="runs of each command, per CLI")
    ap.add_argument("--py-rounds", type=int, default=3, help="child processes per Python")
    ap.add_argument("--n", type=int, default=200, help="statements timed per call and process")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(python_fixed(a.child, a.n)))
        return
    from loch.query import cli

    work = Path(tempfile.mkdtemp(prefix="loch-start-bench-"))
    try:
        load = [os.getloadavg()[0]]
        root = str(work / "lake")
        table = make_catalog(root)
        clis = {"A (baseline)": a.baseline_cli} if a.baseline_cli else {}
        clis["B"] = a.cli or cli()
        pythons = {"A (baseline)": a.baseline_python} if a.baseline_python else {}
        pythons["B"] = sys.executable
        res = {"cli": cli_starts(clis, table, a.rounds), "python": python_ab(pythons, root, a.n, a.py_rounds)}
        res["load"] = [*load, os.getloadavg()[0]]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(markdown(res) if a.markdown else json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
