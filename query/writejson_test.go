package query

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWriteJSONIsCOPY: Write's JSON lines are byte for byte what DuckDB's
// COPY (FORMAT json) writes for the same statement (what Write ran before
// writeJSON), for every kind of value the edge dataset holds (nulls,
// NaN, infinities, float16, class labels, JSON documents) and literal
// types, in the result's order; a statement that is not a SELECT
// (DESCRIBE) still goes through COPY.
func TestWriteJSONIsCOPY(t *testing.T) {
	e, err := New(ctx, edgeDataset(t), Options{})
	require.NoError(t, err)
	defer e.Close()
	for _, q := range []string{
		"SELECT * FROM ds ORDER BY _pos DESC",
		"SELECT i, t FROM ds WHERE i > 0 ORDER BY i", // pushed down
		"SELECT label, count(*) AS n, max(d) AS d FROM ds GROUP BY label ORDER BY label",
		`SELECT 1.0::DOUBLE AS d1, 12345678901234567890::HUGEINT AS h, 1.25::DECIMAL(10,2) AS dec, DATE '2026-01-02' AS dt,
			TIMESTAMPTZ '2026-01-02 03:04:05+00' AS tz, INTERVAL 3 DAY AS iv, '\x00a"b'::BLOB AS bl, {'a': 1, 'b': [true]} AS st,
			MAP {'k': 1} AS m, [1.0, 2.5]::FLOAT[2] AS arr, 'tab	"q" ä€' AS s, 1 AS "a b""c", NULL AS n`,
		"SELECT 2 AS a UNION ALL SELECT 1 ORDER BY a",
		"SELECT i FROM ds WHERE false",
	} {
		var got, want bytes.Buffer
		n, err := e.Write(ctx, q, FormatJSON, 0, &got)
		require.NoError(t, err, q)
		rw, err := e.rewrite(ctx, q, false)
		require.NoError(t, err, q)
		require.True(t, rw.selectStmt, q)
		m, err := e.copyOut(ctx, q, rw.sql, FormatJSON, &want)
		require.NoError(t, err, q)
		require.Equal(t, want.String(), got.String(), q)
		require.Equal(t, m, n, q)
	}
	// A comment that ends the statement does not swallow the wrapping
	// query's parenthesis (COPY's own wrapping fails on it).
	var got, want bytes.Buffer
	_, err = e.Write(ctx, "SELECT t FROM ds ORDER BY _pos -- the end", FormatJSON, 0, &got)
	require.NoError(t, err)
	_, err = e.Write(ctx, "SELECT t FROM ds ORDER BY _pos", FormatJSON, 0, &want)
	require.NoError(t, err)
	require.Equal(t, want.String(), got.String())
	got.Reset()
	n, err := e.Write(ctx, "DESCRIBE ds", FormatJSON, 0, &got)
	require.NoError(t, err)
	require.Equal(t, int64(len(edgeSchema.Columns)+2), n) // _rowid and _pos too
	require.Contains(t, got.String(), `"column_name":"label"`)
}
