"""`loch serve --pg` answers psycopg 3 (issue 38): SCRAM login over TLS, DDL and
DML with parameters (each write one commit), a query with ->>, and a
reader's refused write."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "correct horse battery staple"


@pytest.fixture(scope="session")
def loch_cli(tmp_path_factory: pytest.TempPathFactory) -> str:
    """$LOCH_CLI, else a loch CLI built from this checkout with Go (once)."""
    if os.environ.get("LOCH_CLI"):
        return os.environ["LOCH_CLI"]
    go = shutil.which("go")
    if go is None:
        pytest.fail("no loch CLI: set LOCH_CLI or put Go on PATH")
    out = tmp_path_factory.mktemp("bin") / "loch"
    subprocess.run([go, "build", "-o", str(out), "./cmd/loch"], cwd=REPO, check=True, timeout=900)
    return str(out)


def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made with openssl."""
    cert, key = tmp_path / "server.crt", tmp_path / "server.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=60)  # fmt: skip
    return cert, key


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loch_cli: str) -> Iterator[str]:
    """A loch serve --pg on 127.0.0.1 (a port the system picks) with TLS
    over a new catalog, with users alice (admin) and bob (reader); yields
    its port."""
    cli = loch_cli
    cert, key = self_signed(tmp_path)
    root = tmp_path / "lake"
    users = tmp_path / "users.json"
    subprocess.run([cli, "sql", str(root), "CREATE TABLE boot (x BIGINT)"], check=True, timeout=120)
    for name, role in [("alice", "admin"), ("bob", "reader")]:
        subprocess.run([cli, "user", "add", str(users), name, "--role", role], input=PASSWORD + "\n",
                       text=True, check=True, timeout=60)  # fmt: skip
    proc = subprocess.Popen([cli, "serve", str(root), "--pg", "127.0.0.1:0", "--users", str(users),
                             "--tls-cert", str(cert), "--tls-key", str(key)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"postgresql://[^:]+:(\d+)/", line)
        assert m, f"loch serve --pg printed {line!r}"
        monkeypatch.setenv("PGSSLROOTCERT", str(cert))  # libpq verifies the server with it
        yield m.group(1)
    finally:
        proc.terminate()
        assert proc.wait(timeout=60) == 0


def connect(port: str, user: str) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=port, user=user, password=PASSWORD, dbname="lake",
                           sslmode="verify-full", autocommit=True, connect_timeout=30)  # fmt: skip


def test_psycopg_curates_a_table(server: str) -> None:
    with connect(server, "alice") as conn:
        conn.execute("CREATE TABLE frames (id BIGINT, caption TEXT, score DOUBLE, meta JSON)")
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO frames VALUES (%s, %s, %s, %s)",
                [(i, f"caption {i}", i / 2, '{"split": "%s"}' % ("train" if i % 2 == 0 else "val")) for i in range(6)],
            )
        rows = conn.execute(
            "SELECT id, caption, meta->>'split' FROM frames WHERE meta->>'split' = %s AND score >= %s ORDER BY id",
            ("train", 1.0),
        ).fetchall()
        assert rows == [(2, "caption 2", "train"), (4, "caption 4", "train")]
        cur = conn.execute("UPDATE frames SET caption = %s WHERE id = %s", ("relabelled", 4))
        assert cur.rowcount == 1
        cur = conn.execute("DELETE FROM frames WHERE meta->>'split' = %s", ("val",))
        assert cur.rowcount == 3
        assert conn.execute("SELECT count(*), max(caption) FROM frames").fetchone() == (3, "relabelled")


def test_psycopg_seed_ddl_and_pgvector(server: str) -> None:
    with connect(server, "alice") as conn:
        conn.execute("CREATE TABLE items (id SERIAL PRIMARY KEY, caption TEXT, emb VECTOR(3), image BLOB, meta JSONB)")
        for caption, emb, split in [("a cat", "[1,0,0]", "train"), ("a dog", "[0,1,0]", "val"), ("a bird", "[0,0.9,0.1]", "train")]:
            conn.execute("INSERT INTO items (caption, emb, image, meta) VALUES (%s, %s, %s, %s)",
                         (caption, emb, caption.encode(), '{"split": "%s"}' % split))  # fmt: skip
        rows = conn.execute(
            "SELECT id, caption, image, emb FROM items WHERE meta->>'split' = %s ORDER BY emb <=> %s LIMIT 2",
            ("train", "[0,1,0]"),
        ).fetchall()
        assert [(r[1], bytes(r[2])) for r in rows] == [("a bird", b"a bird"), ("a cat", b"a cat")]
        assert rows[0][0] == 3 and rows[0][3] == "[0,0.9,0.1]"


def test_psycopg_reader_is_refused_a_write(server: str) -> None:
    with connect(server, "alice") as conn:
        conn.execute("CREATE TABLE t (id BIGINT)")
        conn.execute("INSERT INTO t VALUES (%s)", (1,))
    with connect(server, "bob") as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match=r"role reader.*write right on table t"):
            conn.execute("INSERT INTO t VALUES (%s)", (2,))
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match=r"role reader.*merge right on table t on branch main"):
            conn.execute("CALL loch_merge('t', 'main')")
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (1,)
    with connect(server, "alice") as conn:  # the admin may merge (here: nothing to merge)
        assert conn.execute("CALL loch_merge(%s, %s)", ("t", "main")).fetchone()[:3] == ("t", "main", "main")


def test_psycopg_wrong_password_is_refused(server: str) -> None:
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(host="127.0.0.1", port=server, user="alice", password="nope", dbname="lake", sslmode="require")


def test_psycopg_server_side_cursor(server: str) -> None:
    with connect(server, "alice") as conn:
        conn.execute("CREATE TABLE n (i BIGINT)")
        conn.execute("INSERT INTO n SELECT range FROM range(2500)")
    with psycopg.connect(host="127.0.0.1", port=server, user="bob", password=PASSWORD, dbname="lake",
                         sslmode="verify-full") as conn:  # fmt: skip
        with conn.cursor(name="big") as cur:  # DECLARE ... CURSOR, FETCH FORWARD itersize
            cur.itersize = 1000
            cur.execute("SELECT i FROM n ORDER BY i")
            assert cur.fetchone() == (0,)
            assert cur.fetchmany(2) == [(1,), (2,)]
            rest = [r[0] for r in cur]
        assert rest == list(range(3, 2500))


def test_connect_postgresql_url_reads_from_storage(server: str) -> None:
    import loch

    with connect(server, "alice") as conn:
        conn.execute("CREATE TABLE frames (id BIGINT, caption TEXT)")
        conn.execute("INSERT INTO frames SELECT range, 'c' || range FROM range(100)")
    with loch.connect(f"postgresql://bob:{PASSWORD.replace(' ', '%20')}@127.0.0.1:{server}/lake?sslmode=verify-full") as cat:
        assert "frames" in cat.tables()
        assert "correct" not in repr(cat)
        frames = cat.open_table("frames")
        assert len(frames) == 100
        assert frames.read_only
        with pytest.raises(loch.NotFound):
            cat.open_table("frames", ref="curation/x")
        with pytest.raises(loch.NotFound):
            cat.open_table("nope")


def test_psycopg_copy_in_and_out(server: str) -> None:
    with connect(server, "alice") as conn:
        conn.execute("CREATE TABLE c (id BIGINT, caption TEXT, score DOUBLE)")
        with conn.cursor() as cur:
            with cur.copy("COPY c (id, caption, score) FROM STDIN") as copy:
                for i in range(2000):
                    copy.write_row((i, None if i % 100 == 0 else f"line\t{i}\n", i / 4))
            assert cur.rowcount == 2000
        assert conn.execute("SELECT count(*), count(caption), sum(score) FROM c").fetchone() == (2000, 1980, sum(i / 4 for i in range(2000)))
        assert conn.execute("SELECT caption FROM c WHERE id = 7").fetchone() == ("line\t7\n",)
        with conn.cursor() as cur:
            with cur.copy("COPY (SELECT id, caption FROM c WHERE id < 3 ORDER BY id) TO STDOUT") as copy:
                rows = list(copy.rows())
        assert rows == [("0", None), ("1", "line\t1\n"), ("2", "line\t2\n")]


def test_psycopg_transactions(server: str) -> None:
    """psycopg's default mode (not autocommit) opens a transaction at the
    first statement: the writes until commit() are one commit, seen by
    another connection only then; rollback() discards them."""
    with psycopg.connect(host="127.0.0.1", port=server, user="alice", password=PASSWORD, dbname="lake",
                         sslmode="require") as conn, connect(server, "alice") as other:  # fmt: skip
        conn.execute("CREATE TABLE r (id BIGINT, caption TEXT)")  # DDL runs at once, in a transaction too
        conn.commit()
        conn.execute("INSERT INTO r VALUES (%s, %s)", (1, "one"))
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO r VALUES (%s, %s)", [(2, "two"), (3, "three")])
        conn.execute("UPDATE r SET caption = %s WHERE id = %s", ("ONE", 1))
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        assert conn.execute("SELECT count(*) FROM r").fetchone() == (3,)  # its own writes
        assert other.execute("SELECT count(*) FROM r").fetchone() == (0,)  # not yet committed
        conn.commit()
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert other.execute("SELECT id, caption FROM r ORDER BY id").fetchall() == [(1, "ONE"), (2, "two"), (3, "three")]

        conn.execute("DELETE FROM r WHERE id = %s", (2,))
        assert conn.execute("SELECT count(*) FROM r").fetchone() == (2,)
        conn.rollback()
        assert other.execute("SELECT count(*) FROM r").fetchone() == (3,)

        with pytest.raises(psycopg.errors.UndefinedColumn):
            conn.execute("SELECT nope FROM r")
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            conn.execute("SELECT 1")
        conn.rollback()
        with conn.transaction():  # BEGIN ... COMMIT (no transaction is open: not a savepoint)
            conn.execute("INSERT INTO r VALUES (%s, %s)", (4, "four"))
        assert other.execute("SELECT count(*) FROM r").fetchone() == (4,)
