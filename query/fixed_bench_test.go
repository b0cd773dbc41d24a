package query

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkStatementFixedCost is a statement's cost on a long-lived
// engine over 10 rows (what Python's ds.query and ds.sql pay after the
// first statement, issue 39 target 4): Select of the same statement with
// and without a WHERE, and of a statement new to the engine each time.
func BenchmarkStatementFixedCost(b *testing.B) {
	d, add := idNameDataset(b)
	add(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
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
