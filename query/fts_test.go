package query

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/fts"
	"github.com/lochdata/loch/schema"
)

// TestFTSSQL: fts_match filters and fts_score ranks as fts.Search does,
// with and without an index, next to other conditions.
func TestFTSSQL(t *testing.T) {
	d, err := loch.Create(ctx, filepath.Join(t.TempDir(), "txt"), schema.Schema{Columns: []schema.Column{
		{Name: "caption", DType: schema.Text},
		{Name: "label", DType: schema.Int64, Shape: schema.Shape{}},
	}})
	require.NoError(t, err)
	defer d.Close()
	for i, c := range []string{"red car", "red red truck", "blue car car car", "green bicycle", "a red bicycle"} {
		require.NoError(t, d.Append(ctx, loch.Row{"caption": loch.String(c), "label": loch.Scalar(int64(i % 2))}))
	}
	_, err = d.Commit(ctx, "rows")
	require.NoError(t, err)
	for _, built := range []bool{false, true} {
		if built {
			_, err := fts.Build(ctx, d, "caption", fts.BuildOptions{})
			require.NoError(t, err)
		}
		e, err := New(ctx, d, Options{})
		require.NoError(t, err)
		rows := queryRows(t, e, "SELECT label, caption, fts_score(caption, 'red car') AS s FROM ds WHERE fts_match(caption, 'red car') ORDER BY s DESC, label LIMIT 3")
		want, err := fts.Search(ctx, d, "caption", "red car", 3, fts.Options{})
		require.NoError(t, err)
		require.Len(t, rows, 3)
		for i, h := range want.Hits {
			require.InDelta(t, h.Score, rows[i][2], 1e-9, "built %v row %d", built, i)
		}
		require.Equal(t, "red car", rows[0][1])
		rows = queryRows(t, e, "SELECT caption FROM ds WHERE fts_match(caption, '+red -car') AND label = 0 ORDER BY caption")
		require.Equal(t, [][]any{{"a red bicycle"}}, rows)
		rows = queryRows(t, e, "SELECT count(*) FROM ds WHERE NOT fts_match(caption, '\"red car\" OR bicycle')")
		require.Equal(t, [][]any{{int64(2)}}, rows)
		require.ErrorContains(t, queryErr(e, "SELECT * FROM ds WHERE fts_match(caption, '\"red')"), "not closed")
		require.ErrorContains(t, queryErr(e, "SELECT * FROM ds WHERE fts_match(label, 'red')"), "want a text or json column")
		require.NoError(t, e.Close())
	}
}

// queryRows runs q and returns its rows as Go values.
func queryRows(t *testing.T, e *Engine, q string) [][]any {
	t.Helper()
	rows, done, err := e.Rows(ctx, q)
	require.NoError(t, err, q)
	defer done()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		out = append(out, vals)
	}
	require.NoError(t, rows.Err())
	return out
}

// queryErr runs q and returns its error.
func queryErr(e *Engine, q string) error {
	rows, done, err := e.Rows(ctx, q)
	if err != nil {
		return err
	}
	defer done()
	for rows.Next() {
	}
	return rows.Err()
}
