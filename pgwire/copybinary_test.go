package pgwire

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCopyToBinary reads COPY (query) TO STDOUT (FORMAT binary) with
// pgx's raw CopyTo: PostgreSQL's binary COPY format field by field, and
// the same bytes copied into another table give the query's rows.
func TestCopyToBinary(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.mustConnect(t, "alice")
	_, err := c.Exec(ctx, "CREATE TABLE kinds (id BIGINT, caption TEXT, score DOUBLE, ok BOOLEAN, emb EMBEDDING(3), meta JSON, blob BLOB)")
	require.NoError(t, err)
	_, err = c.Exec(ctx, `INSERT INTO kinds VALUES (1, 'tab	"quoted"', 0.25, true, [1, -2.5, 3]::FLOAT[3], '{"a": [1, 2]}', '\x00\xff'::BLOB),
		(2, NULL, NULL, NULL, NULL, NULL, NULL)`)
	require.NoError(t, err)
	query := `SELECT id, caption, score, ok, CASE WHEN id = 1 THEN DATE '1999-12-31' END AS day,
		CASE WHEN id = 1 THEN TIMESTAMP '2000-01-01 00:00:01.5' END AS at, emb, meta, blob FROM kinds ORDER BY id`

	var out bytes.Buffer
	tag, err := c.PgConn().CopyTo(ctx, &out, "COPY ("+query+") TO STDOUT (FORMAT binary)")
	require.NoError(t, err)
	require.Equal(t, "COPY 2", tag.String())
	b := out.Bytes()
	require.Equal(t, copySignature+"\x00\x00\x00\x00\x00\x00\x00\x00", string(b[:19]))
	fields := func() [][]byte {
		n := int(int16(binary.BigEndian.Uint16(b)))
		b = b[2:]
		if n < 0 {
			return nil
		}
		out := make([][]byte, n)
		for i := range out {
			size := int32(binary.BigEndian.Uint32(b))
			b = b[4:]
			if size >= 0 {
				out[i], b = b[:size], b[size:]
			}
		}
		return out
	}
	b = b[19:]
	row := fields()
	require.Len(t, row, 9)
	require.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 1}, row[0])
	require.Equal(t, "tab\t\"quoted\"", string(row[1]))
	require.Equal(t, 0.25, math.Float64frombits(binary.BigEndian.Uint64(row[2])))
	require.Equal(t, []byte{1}, row[3])
	require.Equal(t, int32(-1), int32(binary.BigEndian.Uint32(row[4])), "days since 2000-01-01")
	require.Equal(t, int64(1_500_000), int64(binary.BigEndian.Uint64(row[5])), "microseconds since 2000-01-01")
	require.Equal(t, []byte{0, 3, 0, 0, 0x3f, 0x80, 0, 0, 0xc0, 0x20, 0, 0, 0x40, 0x40, 0, 0}, row[6], "pgvector's binary form")
	require.JSONEq(t, `{"a": [1, 2]}`, string(row[7]))
	require.Equal(t, []byte{0, 0xff}, row[8])
	row = fields()
	require.Len(t, row, 9)
	for i := 1; i < 9; i++ {
		require.Nil(t, row[i], "column %d is NULL", i)
	}
	require.Nil(t, fields(), "the trailer")
	require.Empty(t, b)

	// A table's rows copied out and into a copy of the table are the
	// same rows.
	_, err = c.Exec(ctx, "CREATE TABLE kinds2 (id BIGINT, caption TEXT, score DOUBLE, ok BOOLEAN, emb EMBEDDING(3), meta JSON, blob BLOB)")
	require.NoError(t, err)
	out.Reset()
	_, err = c.PgConn().CopyTo(ctx, &out, "COPY kinds TO STDOUT (FORMAT binary)")
	require.NoError(t, err)
	tag, err = c.PgConn().CopyFrom(ctx, bytes.NewReader(out.Bytes()), "COPY kinds2 FROM STDIN (FORMAT binary)")
	require.NoError(t, err)
	require.Equal(t, "COPY 2", tag.String())
	rowsOf := func(table string) [][]any {
		rows, err := c.Query(ctx, "SELECT * EXCLUDE (_rowid, _pos) FROM "+table+" ORDER BY id")
		require.NoError(t, err)
		var all [][]any
		for rows.Next() {
			v, err := rows.Values()
			require.NoError(t, err)
			all = append(all, v)
		}
		require.NoError(t, rows.Err())
		return all
	}
	require.Equal(t, rowsOf("kinds"), rowsOf("kinds2"))

	// No rows: the header and the trailer.
	out.Reset()
	tag, err = c.PgConn().CopyTo(ctx, &out, "COPY (SELECT id FROM kinds WHERE id > 5) TO STDOUT WITH (FORMAT binary)")
	require.NoError(t, err)
	require.Equal(t, "COPY 0", tag.String())
	require.Equal(t, copySignature+"\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff", out.String())
}
