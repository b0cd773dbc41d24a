package catalog

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/storage"
)

// BenchmarkTables lists a catalog of 1,000 tables on MinIO (made with
// CreateTable) and, as the baseline of the same run, lists 1,000 objects
// with the store's own List: what a catalog that found its tables by
// listing the bucket would pay at the least.
//
//	go test -run '^$' -bench BenchmarkTables -benchtime 50x ./catalog
func BenchmarkTables(b *testing.B) {
	const n = 1000
	root := testserver.MinIO(b).URL
	c, err := Create(ctx, root)
	require.NoError(b, err)
	defer c.Close()
	for i := range n {
		d, err := c.CreateTable(ctx, fmt.Sprintf("table_%04d", i), rowsSchema)
		require.NoError(b, err)
		require.NoError(b, d.Close())
	}
	st, err := storage.Open(ctx, root)
	require.NoError(b, err)
	defer st.Close()
	for i := range n {
		require.NoError(b, st.Put(ctx, fmt.Sprintf("baseline/%04d", i), []byte("x")))
	}
	b.ResetTimer()

	b.Run("catalog", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ts, err := c.Tables(ctx)
			if err != nil || len(ts) != n {
				b.Fatalf("%d tables, %v", len(ts), err)
			}
		}
	})
	b.Run("baseline-list", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			k := 0
			err := st.List(ctx, "baseline/", func(storage.Attrs) error { k++; return nil })
			if err != nil || k != n {
				b.Fatalf("%d objects, %v", k, err)
			}
		}
	})
}
