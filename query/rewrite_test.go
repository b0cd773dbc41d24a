package query

import (
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
