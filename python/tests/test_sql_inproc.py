"""SQL in the Python process (issue 39, target 4; loch._sql, C ABI 21):
results equal to the loch command's (the fallback) for every kind of
value, writes and commits seen by the next statement, errors as loch's
exceptions, and the handle's life."""

from __future__ import annotations

import ctypes
import gc
import json
from pathlib import Path

import numpy as np
import pytest

import loch
from loch import _sql
from loch._library import c_uintptr

pytest.importorskip("pyarrow")

#: Queries whose in-process results must equal the loch command's.
QUERIES = [
    "SELECT id, score, name, meta, emb, label FROM ds ORDER BY id",
    "SELECT * FROM ds ORDER BY _rowid",
    "SELECT label, count(*) AS n, sum(id) AS total, avg(score) AS mean FROM ds GROUP BY label ORDER BY label",
    "SELECT id, meta->>'k' AS k, (meta->'v')::INT AS v FROM ds WHERE name IS NULL OR score > 1 ORDER BY id",
    "SELECT id, TIMESTAMP '2024-01-02 03:04:05' + to_hours(id) AS ts, DATE '2024-05-01' + id::INT AS day FROM ds ORDER BY id",
    "SELECT id, array_cosine_similarity(emb, [1, 0, 0, 0]::FLOAT[4]) AS sim FROM ds ORDER BY sim DESC, id LIMIT 3",
    "SELECT NULL AS nothing, 1.5::DECIMAL(10, 2) AS dec, 'x' AS s, [1, 2] AS l, {'a': 1} AS st",
    "SELECT id FROM ds WHERE false",
]


@pytest.fixture
def typed(tmp_path: Path) -> loch.Dataset:
    ds = loch.create(str(tmp_path / "typed"), schema={
        "id": loch.Tensor("int64", shape=()),
        "score": loch.Tensor("float64", shape=()),
        "name": loch.Text(),
        "meta": loch.JSON(),
        "emb": loch.Tensor("float32", shape=(4,)),
        "label": loch.ClassLabel(["cat", "dog"]),
    })  # fmt: skip
    n = 6
    ds.extend({
        "id": np.arange(n, dtype=np.int64),
        "score": np.arange(n) * 0.5,
        "name": ["a", None, "c", "d", None, "f"],
        "meta": [{"k": f"v{i}", "v": i} if i % 3 else None for i in range(n)],
        "emb": np.eye(4, dtype=np.float32)[np.arange(n) % 4],
        "label": np.arange(n) % 2,
    })  # fmt: skip
    ds.commit("six rows")
    yield ds
    ds.close()


def through_command(ds: loch.Dataset, sql: str, monkeypatch: pytest.MonkeyPatch) -> object:
    """ds.sql(sql) as the loch command runs it (the fallback of a library
    without DuckDB)."""
    with monkeypatch.context() as m:
        m.setattr(_sql, "_available", False)
        fresh = loch.open(ds.url, version=ds.version)
        try:
            assert fresh._sql_session() is None
            return fresh.sql(sql)
        finally:
            fresh.close()


@pytest.mark.parametrize("sql", QUERIES)
def test_results_equal_the_commands(typed: loch.Dataset, sql: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert typed._sql_session() is not None, "this library runs SQL in the process"
    got = typed.sql(sql)
    want = through_command(typed, sql, monkeypatch)
    assert got.column_names == want.column_names
    assert got.num_rows == want.num_rows
    assert got.to_pylist() == want.to_pylist()


def test_selections_equal_the_commands(typed: loch.Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    sql = "SELECT id, name FROM ds WHERE score >= 1 ORDER BY random()"
    sel = typed.query(sql, seed=3)
    with monkeypatch.context() as m:
        m.setattr(_sql, "_available", False)
        fresh = loch.open(typed.url, version=typed.version)
        old = fresh.query(sql, seed=3)
        fresh.close()
    assert sel.row_ids.tolist() == old.row_ids.tolist() and len(sel) == 4
    assert (sel.version, sel.seed, sel.columns) == (old.version, old.seed, old.columns)
    assert sel.to_arrow().to_pylist() == typed.sql(sql, seed=3).to_pylist()
    assert typed.sql(sql, seed=3).to_pylist() == typed.sql(sql, seed=3).to_pylist(), "a seed gives one order"


def test_the_handle_follows_its_commits(typed: loch.Dataset) -> None:
    assert typed.sql("SELECT count(*) AS n FROM ds").to_pylist() == [{"n": 6}]
    # The same statements before and after the commit (the handle keeps
    # what it learnt of their text, not their answers).
    before = len(typed.query("SELECT id WHERE score > 5"))
    typed.extend({"id": np.array([6]), "score": np.array([9.0]), "name": ["g"], "meta": [None],
                  "emb": np.zeros((1, 4), np.float32), "label": np.array([0])})  # fmt: skip
    typed.commit("one more")
    assert typed.sql("SELECT count(*) AS n, max(score) AS top FROM ds").to_pylist() == [{"n": 7, "top": 9.0}]
    sel = typed.query("SELECT id WHERE score > 5")
    assert sel.version == typed.version and len(sel) == before + 1


def test_catalog_writes_and_other_handles(tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    cat = loch.connect(root)
    cat.sql("CREATE TABLE t (id BIGINT, s VARCHAR, m JSON, e FLOAT[2])")
    w = cat.sql("""INSERT INTO t VALUES (1, 'a', '{"k": [1, 2]}', [0.5, 1]), (2, NULL, NULL, NULL)""")
    assert w["statement"] == "INSERT" and w["rows"] == 2 and w["version"]
    q = cat.sql("SELECT id, s, m, e FROM t ORDER BY id")
    assert q["statement"] == "QUERY" and q["rows"] == 2
    assert q["result"] == [{"id": 1, "s": "a", "m": {"k": [1, 2]}, "e": [0.5, 1.0]}, {"id": 2, "s": None, "m": None, "e": None}]
    assert cat.sql("SELECT id FROM t WHERE false")["result"] == []

    # A commit through another handle is seen by the next statement.
    other = loch.connect(root)
    other.sql("INSERT INTO t (id) VALUES (3)")
    assert cat.sql("SELECT count(*) AS n FROM t")["result"] == [{"n": 3}]
    other.close()

    # A selection of the table, and its table read at its version.
    sel = cat.query("SELECT id FROM t WHERE id >= 2 ORDER BY id")
    assert sel.table == "t" and len(sel) == 2
    cat.sql("INSERT INTO t (id) VALUES (4)")
    assert sel.to_arrow().column("id").to_pylist() == [2, 3], "the selection's version, not the head"
    builder = cat.dataloader("SELECT id FROM t ORDER BY id DESC")
    assert builder.selection().row_ids.tolist() == [3, 2, 1, 0]

    # Session settings last between statements; branch= is one statement's.
    cat.sql("SET loch_message = 'from a session'")
    cat.sql("INSERT INTO t (id) VALUES (5)")
    assert cat.open_table("t").log()[0].message == "from a session"
    with pytest.raises(loch.NotFound, match="dev"):
        cat.sql("INSERT INTO t (id) VALUES (6)", branch="dev")
    assert cat.sql("SELECT count(*) AS n FROM t")["result"] == [{"n": 5}], "the failed write wrote nothing"
    cat.close()


def test_errors_are_loch_errors(typed: loch.Dataset, tmp_path: Path) -> None:
    with pytest.raises(loch.InvalidArgument, match="syntax error at or near .SELEC.") as e:
        typed.sql("SELEC 1")
    assert "ctypes" not in str(e.value) and "Traceback" not in str(e.value)
    with pytest.raises(loch.InvalidArgument, match='Referenced column "nope" not found'):
        typed.sql("SELECT nope FROM ds")
    with pytest.raises(loch.InvalidArgument, match="only reads"):
        typed.sql("INSERT INTO ds (id) VALUES (1)")
    with pytest.raises(loch.InvalidArgument, match="GROUP BY|aggregate"):
        typed.query("SELECT label, count(*) FROM ds GROUP BY label")
    cat = loch.connect(str(tmp_path / "lake"))
    with pytest.raises(loch.InvalidArgument, match="does not exist"):
        cat.sql("SELECT * FROM missing")
    with pytest.raises(loch.InvalidArgument, match="TIMESTAMP is not supported"):
        cat.sql("CREATE TABLE bad (t TIMESTAMP)")
    assert "bad" not in cat, "a failed statement writes nothing"
    cat.close()


def test_close_releases_the_connection(typed: loch.Dataset, tmp_path: Path) -> None:
    typed.sql("SELECT 1")
    session = typed._sql
    assert session is not None and not session.closed
    assert typed._sql_session() is session, "one connection for the handle's life"
    typed.close()
    assert session.closed and typed._sql is None
    with pytest.raises(loch.Closed):
        session.run("SELECT 1")
    with pytest.raises(loch.Closed):
        typed.sql("SELECT 1")

    cat = loch.connect(str(tmp_path / "lake2"))
    cat.sql("CREATE TABLE t (id BIGINT)")
    s = cat._sql
    cat.close()
    assert s is not None and s.closed
    # A handle dropped without close is released by the garbage collector.
    ds = loch.open(typed.url)
    ds.sql("SELECT 1")
    assert ds._sql is not None
    lib, value = ds._sql._h.lib, ds._sql._h._value
    del ds
    gc.collect()
    with pytest.raises(loch.Closed):
        lib.call("loch_sql_select", c_uintptr(value), b"SELECT 1", None, ctypes.byref(ctypes.c_void_p()))


def test_a_result_crosses_without_a_copy_per_value(typed: loch.Dataset) -> None:
    """The result is Arrow memory handed over by the library (the C stream
    interface): numbers are read in place, not built value by value."""
    t = typed.sql("SELECT id, score FROM ds ORDER BY id")
    col = t.column("id").combine_chunks()
    assert col.type == "int64" and np.frombuffer(col.buffers()[1], dtype=np.int64)[: len(col)].tolist() == list(range(6))
    assert json.loads(typed.sql("SELECT meta FROM ds WHERE id = 1").column("meta")[0].as_py()) == {"k": "v1", "v": 1}
