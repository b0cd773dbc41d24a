package query

import (
	"io"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// TestRewriteKeepsFloatConstants: a selection's rewritten SQL compares a
// FLOAT column with 2.5e0 as a DOUBLE, as the query as written does (the
// rendered 2.5 would read back as a DECIMAL, compared as a FLOAT: the
// float32 0.1 would then equal 0.1).
func TestRewriteKeepsFloatConstants(t *testing.T) {
	d, err := loch.Create(ctx, filepath.Join(t.TempDir(), "f"), schema.Schema{Columns: []schema.Column{
		{Name: "f", DType: schema.Float32, Shape: schema.Shape{}},
	}})
	require.NoError(t, err)
	defer d.Close()
	for _, f := range []float32{0.1, 2.5, 0.1, 7} {
		require.NoError(t, d.Append(ctx, loch.Row{"f": loch.Scalar(f)}))
	}
	_, err = d.Commit(ctx, "rows")
	require.NoError(t, err)
	e, err := New(ctx, d, Options{})
	require.NoError(t, err)
	defer e.Close()
	for _, q := range []string{
		"SELECT f FROM ds WHERE f IN (0.1, 2.5e0)",
		"SELECT f FROM ds WHERE f = 0.1e0 OR f > 6.5e0",
		"SELECT f FROM ds WHERE f IN (0.1, 2.5)",
	} {
		// The query as written (not rewritten): its row ids.
		want := map[uint64]bool{}
		for _, r := range e.answer(t, "SELECT _rowid FROM ds WHERE "+q[len("SELECT f FROM ds WHERE "):]) {
			id, err := strconv.ParseUint(r[0], 10, 64)
			require.NoError(t, err)
			want[id] = true
		}
		sel, err := e.Select(ctx, q)
		require.NoError(t, err, q)
		got := map[uint64]bool{}
		for _, id := range sel.RowIDs {
			got[id] = true
		}
		require.Equal(t, want, got, q)
		if q == "SELECT f FROM ds WHERE f IN (0.1, 2.5e0)" {
			require.Len(t, got, 1, "compared as DOUBLE, only 2.5 matches")
		}
	}
}

// TestSelectRefusesGroups: a selection is rows of the dataset; a query
// whose rows are groups (an aggregate, GROUP BY, HAVING) is refused with
// a message that says so and where its result is had, not DuckDB's
// `column "_rowid" must appear in the GROUP BY clause` (issue 35 item
// 10). Windows and aggregates in subqueries keep rows, and run.
func TestSelectRefusesGroups(t *testing.T) {
	d, err := loch.Create(ctx, filepath.Join(t.TempDir(), "g"), schema.Schema{Columns: []schema.Column{
		{Name: "n", DType: schema.Int64, Shape: schema.Shape{}},
	}})
	require.NoError(t, err)
	defer d.Close()
	for n := range int64(6) {
		require.NoError(t, d.Append(ctx, loch.Row{"n": loch.Scalar(n % 3)}))
	}
	_, err = d.Commit(ctx, "rows")
	require.NoError(t, err)
	e, err := New(ctx, d, Options{})
	require.NoError(t, err)
	defer e.Close()
	for q, why := range map[string]string{
		"SELECT n, count(*) FROM ds GROUP BY n":            "GROUP BY makes",
		"SELECT count(*) FROM ds":                          "the aggregate count(*) makes",
		"SELECT sum(n) AS s FROM ds":                       "the aggregate sum(...) makes",
		"SELECT 1 + max(n) FROM ds":                        "the aggregate max(...) makes",
		"SELECT * FROM ds GROUP BY ALL":                    "GROUP BY ALL makes",
		"SELECT 1 FROM ds HAVING true":                     "HAVING makes",
		"SELECT 1 AS one FROM ds ORDER BY avg(n)":          "the aggregate avg(...) makes",
		"SELECT list(n ORDER BY n) FROM ds LIMIT 1":        "the aggregate list(...) makes",
		"SELECT n, count(*) FROM ds GROUP BY n ORDER BY n": "GROUP BY makes",
	} {
		_, err := e.Select(ctx, q)
		require.ErrorIs(t, err, loch.ErrInvalidArgument, q)
		require.ErrorContains(t, err, "a selection is rows of the dataset, and "+why, q)
		require.ErrorContains(t, err, "ds.sql in Python", q)
		_, err = e.Write(ctx, q, FormatJSON, 0, io.Discard)
		require.NoError(t, err, "%s: as a query it runs", q)
	}
	for q, rows := range map[string]int{
		"SELECT n, count(*) OVER (PARTITION BY n) AS c FROM ds":           6,
		"SELECT n FROM ds WHERE n = (SELECT max(n) FROM ds)":              2,
		"SELECT n FROM ds QUALIFY row_number() OVER (PARTITION BY n) = 1": 3,
	} {
		sel, err := e.Select(ctx, q)
		require.NoError(t, err, q)
		require.Len(t, sel.RowIDs, rows, q)
	}
}
