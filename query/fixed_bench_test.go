package query

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// BenchmarkStatementFixedCost is a statement's cost on a long-lived
// engine over 10 rows (what Python's ds.query and ds.sql pay after the
// first statement, issue 39 target 4): Select with and without a WHERE,
// and Raw (ds.sql) of a WHERE.
func BenchmarkStatementFixedCost(b *testing.B) {
	d, err := loch.Create(ctx, filepath.Join(b.TempDir(), "t"), schema.Schema{Columns: []schema.Column{
		{Name: "id", DType: schema.Int64, Shape: schema.Shape{}}, {Name: "name", Kind: schema.TextKind}}})
	require.NoError(b, err)
	defer d.Close()
	var rows []loch.Row
	for i := range 10 {
		rows = append(rows, loch.Row{"id": loch.Scalar(int64(i)), "name": loch.String("n")})
	}
	require.NoError(b, d.Extend(ctx, rows))
	_, err = d.Commit(ctx, "rows")
	require.NoError(b, err)
	e, err := New(ctx, d, Options{})
	require.NoError(b, err)
	defer e.Close()
	for _, q := range []string{"SELECT id FROM ds WHERE id = 3", "SELECT id FROM ds"} {
		b.Run("Select/"+q, func(b *testing.B) {
			for b.Loop() {
				sel, err := e.Select(ctx, q)
				require.NoError(b, err)
				require.NotEmpty(b, sel.RowIDs)
			}
		})
	}
	// Each statement new to the engine (nothing of its text kept).
	b.Run("Select/distinct WHERE", func(b *testing.B) {
		k := 0
		for b.Loop() {
			k++
			sel, err := e.Select(ctx, fmt.Sprintf("SELECT id FROM ds WHERE id = %d OR id = 3", k+100))
			require.NoError(b, err)
			require.NotEmpty(b, sel.RowIDs)
		}
	})
}
