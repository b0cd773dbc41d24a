package pgwire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"
)

// pgError is err's PostgreSQL error.
func pgError(t *testing.T, err error) *pgconn.PgError {
	t.Helper()
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe)
	return pe
}

func TestPGXWritesAndReads(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.mustConnect(t, "alice")
	tag, err := c.Exec(ctx, "CREATE TABLE frames (id BIGINT, caption TEXT, emb EMBEDDING(3), meta JSON)")
	require.NoError(t, err)
	require.Equal(t, "CREATE TABLE", tag.String())

	for i, cap := range []string{"a cat", "a dog", "it's a bird"} {
		tag, err = c.Exec(ctx, "INSERT INTO frames VALUES ($1, $2, $3, $4)",
			int64(i), cap, "["+[]string{"1,0,0", "0,1,0", "0,0,1"}[i]+"]", `{"split": "`+[]string{"train", "val", "train"}[i]+`"}`)
		require.NoError(t, err)
		require.Equal(t, "INSERT 0 1", tag.String())
	}

	// A prepared SELECT with ->> and <=> (cosine distance), parameters
	// bound in binary by pgx.
	_, err = c.Prepare(ctx, "near", "SELECT id, caption, meta->>'split' AS split, emb <=> $2 AS d FROM frames WHERE meta->>'split' = $1 ORDER BY d")
	require.NoError(t, err)
	rows, err := c.Query(ctx, "near", "train", "[0,0.1,1]")
	require.NoError(t, err)
	type hit struct {
		id      int64
		caption string
		split   string
		d       float32
	}
	var hits []hit
	for rows.Next() {
		var h hit
		require.NoError(t, rows.Scan(&h.id, &h.caption, &h.split, &h.d))
		hits = append(hits, h)
	}
	require.NoError(t, rows.Err())
	require.Len(t, hits, 2)
	require.Equal(t, int64(2), hits[0].id)
	require.Equal(t, "it's a bird", hits[0].caption)
	require.Equal(t, "train", hits[1].split)
	require.Less(t, hits[0].d, hits[1].d)

	tag, err = c.Exec(ctx, "UPDATE frames SET caption = $1 WHERE id = $2", "a kitten", int64(0))
	require.NoError(t, err)
	require.Equal(t, "UPDATE 1", tag.String())
	tag, err = c.Exec(ctx, "DELETE FROM frames WHERE meta->>'split' = $1", "val")
	require.NoError(t, err)
	require.Equal(t, "DELETE 1", tag.String())

	var n int64
	var first string
	require.NoError(t, c.QueryRow(ctx, "SELECT count(*), min(caption) FROM frames").Scan(&n, &first))
	require.Equal(t, int64(2), n)
	require.Equal(t, "a kitten", first)

	// The simple protocol too, and a vector in pgvector's text form.
	var emb string
	require.NoError(t, c.QueryRow(ctx, "SELECT emb FROM frames WHERE id = 2", pgx.QueryExecModeSimpleProtocol).Scan(&emb))
	require.Equal(t, "[0,0,1]", emb)

	// A statement the mirror cannot plan (loch_table reads a ref) is
	// described by running it with NULL parameters and no rows.
	require.NoError(t, c.QueryRow(ctx, "SELECT count(*) FROM loch_table('frames', ref => 'main') WHERE id >= $1 -- a comment", int64(1)).Scan(&n))
	require.Equal(t, int64(1), n)

	// An error names what failed and carries a SQLSTATE.
	_, err = c.Exec(ctx, "SELECT nope FROM frames")
	require.Equal(t, "42703", pgError(t, err).Code) // undefined_column
	_, err = c.Exec(ctx, "INSERT INTO missing VALUES (1)")
	require.Contains(t, pgError(t, err).Message, "missing")
}

func TestRoleRefusesWrite(t *testing.T) {
	f := newFixture(t, Options{})
	seed(t, f.mustConnect(t, "alice"), 10)
	bob := f.mustConnect(t, "bob")
	var n int64
	require.NoError(t, bob.QueryRow(ctx, "SELECT count(*) FROM frames").Scan(&n))
	require.Equal(t, int64(10), n)

	_, err := bob.Exec(ctx, "DELETE FROM frames WHERE id < $1", int64(5))
	pe := pgError(t, err)
	require.Equal(t, "42501", pe.Code)
	require.Contains(t, pe.Message, "role reader")
	require.Contains(t, pe.Message, "table frames")
	require.Contains(t, pe.Message, "write right")
	_, err = bob.Exec(ctx, "DROP TABLE frames")
	require.Contains(t, pgError(t, err).Message, "ddl right")
	require.NoError(t, bob.QueryRow(ctx, "SELECT count(*) FROM frames").Scan(&n))
	require.Equal(t, int64(10), n, "nothing written")

	// A curator writes to curation/* branches only.
	carol := f.mustConnect(t, "carol")
	_, err = carol.Exec(ctx, "INSERT INTO frames (id) VALUES (99)")
	pe = pgError(t, err)
	require.Equal(t, "42501", pe.Code)
	require.Contains(t, pe.Message, "role curator")
	require.Contains(t, pe.Message, "on branch main")
}

func TestLoginRefused(t *testing.T) {
	f := newFixture(t, Options{})
	_, err := f.connect(t, "alice", "wrong password")
	require.Equal(t, "28P01", pgError(t, err).Code)
	_, err = f.connect(t, "mallory", password)
	require.Equal(t, "28P01", pgError(t, err).Code)

	// Without a users file every login is refused.
	g := newFixture(t, Options{Users: &Users{}})
	_, err = g.connect(t, "alice", password)
	require.Equal(t, "28P01", pgError(t, err).Code)
}

func TestCancelRequest(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.mustConnect(t, "alice")
	seed(t, c, 10)
	errc := make(chan error, 1)
	go func() {
		var n int64
		errc <- c.QueryRow(ctx, "SELECT count(*) FROM frames a, range(100000000000) r WHERE r.range % 7 = a.id").Scan(&n)
	}()
	// Cancel until the query ends: a CancelRequest that comes before the
	// query starts cancels nothing.
	var err error
	for done := false; !done; {
		require.NoError(t, c.PgConn().CancelRequest(ctx))
		select {
		case err = <-errc:
			done = true
		default:
		}
	}
	require.Equal(t, "57014", pgError(t, err).Code)
	var n int64
	require.NoError(t, c.QueryRow(ctx, "SELECT count(*) FROM frames").Scan(&n))
	require.Equal(t, int64(10), n)
}

func TestStatementTimeout(t *testing.T) {
	f := newFixture(t, Options{StatementTimeout: 3 * time.Second})
	c := f.mustConnect(t, "alice")
	var n int64
	err := c.QueryRow(ctx, "SELECT count(*) FROM range(100000000000) r WHERE r.range % 7 = 3").Scan(&n)
	pe := pgError(t, err)
	require.Equal(t, "57014", pe.Code)
	require.Contains(t, pe.Message, "statement timeout")
}

func TestClientKilledMidResult(t *testing.T) {
	f := newFixture(t, Options{})
	seed(t, f.mustConnect(t, "alice"), 10000)
	c, err := f.connect(t, "bob", password)
	require.NoError(t, err)
	rows, err := c.Query(ctx, "SELECT a.id, a.caption FROM frames a, range(10000) r")
	require.NoError(t, err)
	require.True(t, rows.Next())
	// Kill the client: close its socket under pgx.
	require.NoError(t, c.PgConn().Conn().Close())
	rows.Close()
	// The server notices, ends that connection, and serves others.
	require.Eventually(t, func() bool { return f.srv.Connections() == 1 }, time30s, pollEvery)
	d := f.mustConnect(t, "bob")
	var n int64
	require.NoError(t, d.QueryRow(ctx, "SELECT count(*) FROM frames").Scan(&n))
	require.Equal(t, int64(10000), n)
}

func TestMaxConns(t *testing.T) {
	f := newFixture(t, Options{MaxConns: 1})
	f.mustConnect(t, "bob")
	_, err := f.connect(t, "bob", password)
	require.Equal(t, "53300", pgError(t, err).Code)
}

func TestShutdownEndsConnections(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.mustConnect(t, "bob")
	f.stop()
	_, err := c.Exec(ctx, "SELECT 1")
	require.Error(t, err)
	_, err = net.Dial("tcp", f.addr)
	require.Error(t, err, "the listener is closed")
	require.False(t, errors.Is(err, context.Canceled))
}

// TestExecuteRowLimit sends Execute with a row limit by hand: the portal
// suspends after each batch and a later Execute goes on.
func TestExecuteRowLimit(t *testing.T) {
	f := newFixture(t, Options{})
	seed(t, f.mustConnect(t, "alice"), 5)
	pc := f.mustConnect(t, "bob").PgConn()
	fe := pc.Frontend()
	fe.Send(&pgproto3.Parse{Query: "SELECT id FROM frames ORDER BY id"})
	fe.Send(&pgproto3.Bind{})
	fe.Send(&pgproto3.Execute{MaxRows: 2})
	fe.Send(&pgproto3.Execute{MaxRows: 2})
	fe.Send(&pgproto3.Execute{MaxRows: 2})
	fe.Send(&pgproto3.Sync{})
	require.NoError(t, fe.Flush())
	var got []string
	for {
		msg, err := pc.ReceiveMessage(ctx)
		require.NoError(t, err)
		switch m := msg.(type) {
		case *pgproto3.DataRow:
			got = append(got, string(m.Values[0]))
		case *pgproto3.PortalSuspended:
			got = append(got, "suspended")
		case *pgproto3.CommandComplete:
			got = append(got, string(m.CommandTag))
		case *pgproto3.ErrorResponse:
			t.Fatalf("error: %s", m.Message)
		}
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	require.Equal(t, []string{"0", "1", "suspended", "2", "3", "suspended", "4", "SELECT 5"}, got)
}

func TestTableURL(t *testing.T) {
	f := newFixture(t, Options{})
	seed(t, f.mustConnect(t, "alice"), 3)
	bob := f.mustConnect(t, "bob")
	var table, url, ref, version string
	require.NoError(t, bob.QueryRow(ctx, "SELECT * FROM loch_table_url($1)", "FRAMES").Scan(&table, &url, &ref, &version))
	require.Equal(t, "frames", table)
	require.Contains(t, url, f.root)
	require.Equal(t, "main", ref)
	require.Len(t, version, 32)
	n, v := rowsOf(t, f.root, "frames")
	require.Equal(t, int64(3), n)
	require.Equal(t, v, version)

	_, err := bob.Exec(ctx, "SELECT loch_table_url('frames', 'curation/x')")
	require.ErrorContains(t, err, `no ref "curation/x"`)
	_, err = bob.Exec(ctx, "SELECT loch_table_url('nope')")
	require.Equal(t, "42P01", pgError(t, err).Code)

	// A role without the read right on frames gets no URL.
	_, err = f.mustConnect(t, "eve").Exec(ctx, "SELECT * FROM loch_table_url('frames')")
	pe := pgError(t, err)
	require.Equal(t, "42501", pe.Code)
	require.Contains(t, pe.Message, "user eve (role labels-only) lacks the read right on table frames at main")
}

// TestSandbox: no statement reads the server's files or changes DuckDB.
func TestSandbox(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.mustConnect(t, "alice")
	seed(t, c, 3)
	for _, q := range []string{
		"SELECT * FROM read_csv('/etc/passwd')",
		"SELECT * FROM frames, read_text('/etc/hostname')",
		"COPY (SELECT 1) TO '/tmp/loch-pgwire-leak.csv'",
		"SELECT * FROM loch_scan('file:///etc')",
		"INSERT INTO frames (caption) SELECT content FROM read_text('/etc/hostname')",
		"CREATE VIEW v AS SELECT 1",
		"ATTACH '/tmp/x.db'",
	} {
		_, err := c.Exec(ctx, q)
		require.Error(t, err, q)
	}
	var n int64
	require.NoError(t, c.QueryRow(ctx, "SELECT count(*) FROM frames").Scan(&n))
	require.Equal(t, int64(3), n)
}

// TestSilentClientsAreBounded: clients that connect and never start up
// hold at most MaxConns places; once they leave, logins work again.
func TestSilentClientsAreBounded(t *testing.T) {
	f := newFixture(t, Options{MaxConns: 2})
	var silent []net.Conn
	for range 2 {
		nc, err := net.Dial("tcp", f.addr)
		require.NoError(t, err)
		silent = append(silent, nc)
	}
	require.Eventually(t, func() bool {
		f.srv.mu.Lock()
		defer f.srv.mu.Unlock()
		return len(f.srv.raw) == 2
	}, time30s, pollEvery)
	_, err := f.connect(t, "bob", password)
	require.Error(t, err)
	for _, nc := range silent {
		nc.Close()
	}
	require.Eventually(t, func() bool {
		c, err := f.connect(t, "bob", password)
		if err == nil {
			c.Close(ctx)
		}
		return err == nil
	}, time30s, pollEvery)
}

// TestWriteLeavesConnectionIdle: after an INSERT through the extended
// protocol nothing runs for the connection (a shutdown closes it at once,
// a CancelRequest finds nothing).
func TestWriteLeavesConnectionIdle(t *testing.T) {
	f := newFixture(t, Options{})
	seed(t, f.mustConnect(t, "alice"), 3)
	require.Equal(t, 0, f.srv.running())
}

// TestQueryMemoryLimit: a statement that needs more than the per-query
// memory setting fails (SQLSTATE 53200) and the connection goes on.
func TestQueryMemoryLimit(t *testing.T) {
	f := newFixture(t, Options{MemoryLimit: "64MB"})
	c := f.mustConnect(t, "alice")
	seed(t, c, 3)
	for _, q := range []string{
		"SELECT sum(len(l)) FROM (SELECT list(r.range) AS l FROM frames, range(20000000) r GROUP BY frames.id)",
		"SELECT sum(len(l)) FROM (SELECT list(range) AS l FROM range(40000000))",
	} {
		_, err := c.Exec(ctx, q)
		pe := pgError(t, err)
		require.Equal(t, "53200", pe.Code, q)
		require.Contains(t, pe.Message, "Out of Memory", q)
	}
	var n int64
	require.NoError(t, c.QueryRow(ctx, "SELECT count(*) FROM frames").Scan(&n))
	require.Equal(t, int64(3), n)
}

// TestSeedDDL runs seed 002's CREATE TABLE (SERIAL PRIMARY KEY,
// VECTOR(1536), BLOB, JSONB) through pgx, INSERTs with parameters (the
// embedding as pgvector text, the image as bytea) and its curation query.
func TestSeedDDL(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.mustConnect(t, "alice")
	_, err := c.Exec(ctx, `CREATE TABLE IF NOT EXISTS training_samples (
		id SERIAL PRIMARY KEY, text TEXT, embedding VECTOR(1536), image BLOB, label INT, metadata JSONB)`)
	require.NoError(t, err)
	vec := func(hot int) string {
		v := make([]string, 1536)
		for i := range v {
			v[i] = "0"
		}
		v[hot] = "1"
		return "[" + strings.Join(v, ",") + "]"
	}
	for i, split := range []string{"train", "val", "train"} {
		_, err := c.Exec(ctx, "INSERT INTO training_samples (text, embedding, image, label, metadata) VALUES ($1, $2, $3, $4, $5)",
			fmt.Sprintf("sample %d", i), vec(i), []byte{0x89, 'P', 'N', 'G', byte(i)}, int32(i), `{"split": "`+split+`", "quality": 0.9}`)
		require.NoError(t, err)
	}
	rows, err := c.Query(ctx, `SELECT id, text, image FROM training_samples
		WHERE metadata->>'split' = $1 AND label >= $2 ORDER BY embedding <=> $3 LIMIT 5`, "train", int32(0), vec(2))
	require.NoError(t, err)
	var texts []string
	for rows.Next() {
		var id int64
		var text string
		var image []byte
		require.NoError(t, rows.Scan(&id, &text, &image))
		require.Equal(t, byte(id-1), image[4], "the bytes inserted, as bytea")
		texts = append(texts, text)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"sample 2", "sample 0"}, texts)
	// a duplicate key is refused, nothing written
	_, err = c.Exec(ctx, "INSERT INTO training_samples (id, text) VALUES ($1, $2)", int64(1), "dup")
	require.Error(t, err)
}

// TestResultTypes reads one value of each type the server sends, as pgx
// decodes it (binary where pgx asks for it) and as text (the simple
// protocol).
func TestResultTypes(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.mustConnect(t, "bob")
	q := `SELECT true, 2::SMALLINT, 3::INTEGER, 4::BIGINT, 1.5::FLOAT, 2.25::DOUBLE, 'text',
		'\x00\xff'::BLOB, '{"a": 1}'::JSON, DATE '2024-02-03', TIMESTAMP '2024-02-03 04:05:06.5',
		TIMESTAMPTZ '2024-02-03 04:05:06+00', TIME '04:05:06', '6ba7b810-9dad-11d1-80b4-00c04fd430c8'::UUID,
		1.25::DECIMAL(10,2), [1, 2, 3]::FLOAT[3], [[1, 2], [3]], {'k': 'v'}, NULL::BIGINT`
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		vals, err := func() ([]any, error) {
			rows, err := c.Query(ctx, q, mode)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			require.True(t, rows.Next())
			return rows.Values()
		}()
		require.NoError(t, err, mode)
		require.Equal(t, true, vals[0])
		require.Equal(t, int16(2), vals[1])
		require.Equal(t, int32(3), vals[2])
		require.Equal(t, int64(4), vals[3])
		require.Equal(t, float32(1.5), vals[4])
		require.Equal(t, 2.25, vals[5])
		require.Equal(t, "text", vals[6])
		require.Equal(t, []byte{0, 0xff}, vals[7], mode)
		require.Equal(t, map[string]any{"a": float64(1)}, vals[8])
		require.Equal(t, "2024-02-03", vals[9].(time.Time).Format("2006-01-02"))
		require.Equal(t, "2024-02-03 04:05:06.5", vals[10].(time.Time).Format("2006-01-02 15:04:05.9"))
		require.True(t, vals[11].(time.Time).Equal(time.Date(2024, 2, 3, 4, 5, 6, 0, time.UTC)), "%v", vals[11])
		require.Equal(t, [16]byte{0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}, vals[13], mode)
		require.Equal(t, 1.25, vals[14])
		require.Equal(t, "[1,2,3]", vals[15])
		require.Equal(t, []any{[]any{float64(1), float64(2)}, []any{float64(3)}}, vals[16])
		require.Equal(t, map[string]any{"k": "v"}, vals[17])
		require.Nil(t, vals[18])
	}
}

// TestParameterTypes binds parameters of each common type (pgx sends them
// in binary where it knows the type) and reads them back.
func TestParameterTypes(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.mustConnect(t, "bob")
	day := time.Date(2024, 2, 3, 0, 0, 0, 0, time.UTC)
	ts := time.Date(2024, 2, 3, 4, 5, 6, 500000000, time.UTC)
	uuid := [16]byte{0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}
	var (
		b     bool
		i     int64
		x     float64
		s     string
		blob  []byte
		d, tt time.Time
		u     [16]byte
	)
	err := c.QueryRow(ctx, "SELECT $1::BOOLEAN, $2::BIGINT, $3::DOUBLE, $4::VARCHAR, $5::BLOB, $6::DATE, $7::TIMESTAMP, $8::UUID",
		true, int64(-7), 2.5, "it's", []byte{0, 1, 0xff}, day, ts, uuid).Scan(&b, &i, &x, &s, &blob, &d, &tt, &u)
	require.NoError(t, err)
	require.Equal(t, true, b)
	require.Equal(t, int64(-7), i)
	require.Equal(t, 2.5, x)
	require.Equal(t, "it's", s)
	require.Equal(t, []byte{0, 1, 0xff}, blob)
	require.True(t, d.Equal(day), "%v", d)
	require.True(t, tt.Equal(ts), "%v", tt)
	require.Equal(t, uuid, u)
}

// TestPGXCopyFrom loads rows with pgx's CopyFrom (binary COPY) as one
// commit.
func TestPGXCopyFrom(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.mustConnect(t, "alice")
	_, err := c.Exec(ctx, "CREATE TABLE t (id BIGINT, caption TEXT, score DOUBLE, ok BOOLEAN, small SMALLINT, image BLOB, emb VECTOR(2), meta JSON)")
	require.NoError(t, err)
	var rows [][]any
	for i := range 1000 {
		var caption any = fmt.Sprintf("row \"%d\", with, commas", i)
		if i%10 == 0 {
			caption = nil
		}
		rows = append(rows, []any{int64(i), caption, float64(i) / 2, i%2 == 0, int16(-i), []byte{byte(i), 0}, "[1,2]", `{"i": 1}`})
	}
	n, err := c.CopyFrom(ctx, pgx.Identifier{"t"}, []string{"id", "caption", "score", "ok", "small", "image", "emb", "meta"}, pgx.CopyFromRows(rows))
	require.NoError(t, err)
	require.Equal(t, int64(1000), n)
	var count, captions int64
	var sum float64
	var image []byte
	var caption string
	require.NoError(t, c.QueryRow(ctx, "SELECT count(*), count(caption), sum(score) FROM t").Scan(&count, &captions, &sum))
	require.Equal(t, []any{int64(1000), int64(900), 249750.0}, []any{count, captions, sum})
	require.NoError(t, c.QueryRow(ctx, "SELECT caption, image FROM t WHERE id = 7").Scan(&caption, &image))
	require.Equal(t, `row "7", with, commas`, caption)
	require.Equal(t, []byte{7, 0}, image)
	_, v := rowsOf(t, f.root, "t")
	require.Len(t, v, 32)
}

// TestTransactionStatus: BEGIN, COMMIT and ROLLBACK report the status
// clients track; ROLLBACK discards the writes since BEGIN; after an error
// every statement is refused until ROLLBACK, and COMMIT rolls back.
func TestTransactionStatus(t *testing.T) {
	f := newFixture(t, Options{})
	seed(t, f.mustConnect(t, "alice"), 2)
	c := f.mustConnect(t, "alice")
	count := func(c *pgx.Conn) int64 {
		var n int64
		require.NoError(t, c.QueryRow(ctx, "SELECT count(*) FROM frames").Scan(&n))
		return n
	}
	tx, err := c.Begin(ctx)
	require.NoError(t, err)
	require.Equal(t, byte('T'), c.PgConn().TxStatus())
	_, err = tx.Exec(ctx, "INSERT INTO frames (id) VALUES ($1)", int64(9))
	require.NoError(t, err)
	require.EqualValues(t, 3, count(c), "its own write")
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, byte('I'), c.PgConn().TxStatus())
	require.EqualValues(t, 2, count(c), "rolled back")

	tx, err = c.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "INSERT INTO frames (id) VALUES ($1)", int64(9))
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "SELECT nope FROM frames")
	require.Error(t, err)
	require.Equal(t, byte('E'), c.PgConn().TxStatus())
	_, err = tx.Exec(ctx, "SELECT 1")
	require.Equal(t, "25P02", pgError(t, err).Code)
	tag, err := c.Exec(ctx, "COMMIT")
	require.NoError(t, err)
	require.Equal(t, "ROLLBACK", tag.String(), "COMMIT of a failed transaction rolls back")
	require.Equal(t, byte('I'), c.PgConn().TxStatus())
	require.EqualValues(t, 2, count(c))

	_, err = c.Exec(ctx, "SAVEPOINT a")
	require.Equal(t, "0A000", pgError(t, err).Code)
}

// TestTransactionCommit: a transaction's writes are one commit, seen by
// another connection only after COMMIT; a second table is refused.
func TestTransactionCommit(t *testing.T) {
	f := newFixture(t, Options{})
	a := f.mustConnect(t, "alice")
	seed(t, a, 2)
	_, err := a.Exec(ctx, "CREATE TABLE labels (id BIGINT)")
	require.NoError(t, err)
	b := f.mustConnect(t, "alice")
	count := func(c *pgx.Conn) int64 {
		var n int64
		require.NoError(t, c.QueryRow(ctx, "SELECT count(*) FROM frames").Scan(&n))
		return n
	}
	require.EqualValues(t, 2, count(b))
	tx, err := a.Begin(ctx)
	require.NoError(t, err)
	for i := range 3 {
		_, err = tx.Exec(ctx, "INSERT INTO frames (id, caption) VALUES ($1, $2)", int64(10+i), "tx")
		require.NoError(t, err)
	}
	_, err = tx.Exec(ctx, "UPDATE frames SET caption = 'TX' WHERE id = 10")
	require.NoError(t, err)
	require.EqualValues(t, 5, count(a))
	require.EqualValues(t, 2, count(b), "not committed yet")
	_, err = tx.Exec(ctx, "INSERT INTO labels VALUES (1)")
	require.Equal(t, "25000", pgError(t, err).Code)
	require.Contains(t, err.Error(), "one table")
	_, err = a.Exec(ctx, "ROLLBACK")
	require.NoError(t, err)

	tx, err = a.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "INSERT INTO frames (id) VALUES (20), (21)")
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	require.EqualValues(t, 4, count(b), "committed")
	rows, _ := rowsOf(t, f.root, "frames")
	require.EqualValues(t, 4, rows)
}

// TestKeptEngineSeesOtherConnections: each connection keeps its engine,
// and its next statement sees what another connection committed, the
// table dropped and re-created included.
func TestKeptEngineSeesOtherConnections(t *testing.T) {
	f := newFixture(t, Options{})
	a, b := f.mustConnect(t, "alice"), f.mustConnect(t, "alice")
	seed(t, a, 3)
	var n int64
	for i := range 3 {
		require.NoError(t, b.QueryRow(ctx, "SELECT count(*) FROM frames WHERE id >= $1", int64(0)).Scan(&n))
		require.EqualValues(t, 3+i, n)
		_, err := a.Exec(ctx, "INSERT INTO frames (id) VALUES ($1)", int64(100+i))
		require.NoError(t, err)
	}
	_, err := b.Exec(ctx, "DELETE FROM frames WHERE id >= 100")
	require.NoError(t, err)
	require.NoError(t, a.QueryRow(ctx, "SELECT count(*) FROM frames").Scan(&n))
	require.EqualValues(t, 3, n)
	_, err = b.Exec(ctx, "DROP TABLE frames")
	require.NoError(t, err)
	_, err = b.Exec(ctx, "CREATE TABLE frames (id BIGINT)")
	require.NoError(t, err)
	require.NoError(t, a.QueryRow(ctx, "SELECT count(*) FROM frames").Scan(&n))
	require.EqualValues(t, 0, n)
}
