"""`loch serve --pg` sends images and large tensors as bytea (their bytes as
stored) and COPY ... TO STDOUT (FORMAT binary) in PostgreSQL's binary COPY
format (issue 38): read here with psycopg 3, in text and binary results."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

import loch

from test_pgwire import PASSWORD, connect, loch_cli, server  # noqa: F401  (fixtures)


def png(w: int, h: int, seed: int) -> bytes:
    """A w x h RGB png whose pixels depend on seed."""
    a = (np.arange(w * h * 3, dtype=np.uint32).reshape(h, w, 3) * 7 + seed) % 256
    out = io.BytesIO()
    Image.fromarray(a.astype(np.uint8)).save(out, format="PNG")
    return out.getvalue()


def test_psycopg_reads_images_and_tensors_as_bytea(server: str) -> None:  # noqa: F811
    with connect(server, "alice") as conn:
        conn.execute("CREATE TABLE pics (id BIGINT, image IMAGE('png'), t TENSOR(float32))")
        for i in range(2):
            conn.execute("INSERT INTO pics VALUES (%s, %s, [[(70 * i + j + %s)::FLOAT FOR j IN range(70)] FOR i IN range(70)])",
                         (i, png(4, 3, i), i))  # fmt: skip
        conn.execute("INSERT INTO pics (id) VALUES (2)")
    url = f"postgresql://bob:{PASSWORD.replace(' ', '%20')}@127.0.0.1:{server}/lake?sslmode=verify-full"
    with loch.connect(url) as cat, connect(server, "bob") as conn:
        pics = cat.open_table("pics")
        for binary in (False, True):
            cur = conn.cursor(binary=binary)
            rows = cur.execute("SELECT id, image, t, (t).shape, (t).dtype FROM pics ORDER BY id").fetchall()
            assert [d.type_code for d in cur.description[1:3]] == [17, 17]  # bytea
            assert len(rows) == 3
            for i, image, t, shape, dtype in rows[:2]:
                assert image == png(4, 3, i)  # the png as inserted, kept byte for byte
                assert np.array_equal(np.asarray(Image.open(io.BytesIO(image))), pics["image"][i])
                assert (shape, dtype) == ([70, 70], "float32")
                tensor = np.frombuffer(t, dtype="<f4").reshape(shape)
                assert np.array_equal(tensor, pics["t"][i])
                assert tensor[1, 2] == 70 + 2 + i
            assert rows[2][1:3] == (None, None)


def test_psycopg_copy_to_binary(server: str) -> None:  # noqa: F811
    with connect(server, "alice") as conn:
        conn.execute("CREATE TABLE kinds (id BIGINT, caption TEXT, score DOUBLE, ok BOOLEAN, meta JSON, blob BLOB, image IMAGE('png'))")
        conn.execute("INSERT INTO kinds VALUES (1, 'tab\there', 0.25, true, '{\"a\": 1}', '\\x00\\xff'::BLOB, %s), (2, NULL, NULL, NULL, NULL, NULL, NULL)",
                     (png(2, 2, 5),))  # fmt: skip
        query = "SELECT id, caption, score, ok, meta, blob, image, DATE '1999-12-31' + id::INTEGER AS day FROM kinds ORDER BY id"
        want = conn.execute(query).fetchall()
        with conn.cursor() as cur:
            with cur.copy(f"COPY ({query}) TO STDOUT (FORMAT BINARY)") as copy:
                copy.set_types(["int8", "text", "float8", "bool", "json", "bytea", "bytea", "date"])
                got = list(copy.rows())
        assert got == want
        assert got[0][1:7] == ("tab\there", 0.25, True, {"a": 1}, b"\x00\xff", png(2, 2, 5))
