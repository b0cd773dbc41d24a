package query

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// A long-lived engine keeps what it learnt of a statement's text (its
// parse, its rewritten SQL, the session's state): the same statement run
// again after a commit, with the engine moved to the new version
// (SetDataset, as Python's ds.query and ds.sql do), sees the commit, and
// a statement that differs only in a constant gets its own answer.
func TestRepeatedStatementFollowsVersion(t *testing.T) {
	d, add := idNameDataset(t)
	add(1, 2, 3)
	e, err := New(ctx, d, Options{})
	require.NoError(t, err)
	defer e.Close()
	const q = "SELECT id, name FROM ds WHERE id >= 2 AND name = 'n'"
	count := func(q string) int {
		sel, err := e.Select(ctx, q)
		require.NoError(t, err)
		require.Equal(t, d.Version(), sel.Version)
		return len(sel.RowIDs)
	}
	require.Equal(t, 2, count(q))
	require.Equal(t, 2, count(q), "the same statement again")
	require.Equal(t, 1, count("SELECT id, name FROM ds WHERE id >= 3 AND name = 'n'"))
	parsedBefore := e.texts.parsed.Len()

	add(4, 5)
	require.NoError(t, e.SetDataset(d))
	require.Equal(t, 4, count(q), "a statement run again sees the commit")
	require.Equal(t, parsedBefore, e.texts.parsed.Len(), "its text was not parsed again")
	got := queryRows(t, e, "SELECT count(*) FROM ds WHERE id >= 2")
	require.EqualValues(t, 4, got[0][0])
}

// idNameDataset is a dataset of columns id (int64) and name (text), and
// a function that commits rows of the ids given, each named "n".
func idNameDataset(tb testing.TB) (*loch.Dataset, func(ids ...int64)) {
	d, err := loch.Create(ctx, filepath.Join(tb.TempDir(), "t"), schema.Schema{Columns: []schema.Column{
		{Name: "id", DType: schema.Int64, Shape: schema.Shape{}}, {Name: "name", Kind: schema.TextKind}}})
	require.NoError(tb, err)
	tb.Cleanup(func() { d.Close() })
	return d, func(ids ...int64) {
		var rows []loch.Row
		for _, id := range ids {
			rows = append(rows, loch.Row{"id": loch.Scalar(id), "name": loch.String("n")})
		}
		require.NoError(tb, d.Extend(ctx, rows))
		_, err := d.Commit(ctx, "rows")
		require.NoError(tb, err)
	}
}
