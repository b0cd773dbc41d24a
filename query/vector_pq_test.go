package query

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/vector"
)

// TestVectorSearchSQLPQ: vector_search uses an ivf-pq index where one
// serves the version (issue 37), reading its lists through the engine's
// chunk cache; with every list probed (and the few rows all re-ranked)
// the answer is exact search's.
func TestVectorSearchSQLPQ(t *testing.T) {
	d, vecs := vectorDataset(t)
	q := vecs[17]
	wantIDs := exactIDs(t, d, vector.L2, q, 5, vector.Options{})
	info, err := vector.Build(ctx, d, "embedding", vector.BuildOptions{Metric: vector.L2, NList: 4, Kind: vector.KindPQ, M: 4})
	require.NoError(t, err)
	require.Equal(t, vector.KindPQ, info.Type)
	cache := chunkcache.NewMemory(16 << 20)
	defer cache.Close()
	e, err := New(ctx, d, Options{Cache: cache})
	require.NoError(t, err)
	defer e.Close()
	sel, err := e.Select(ctx, fmt.Sprintf("SELECT _rowid FROM vector_search('embedding', %s, k := 5, metric := 'l2', nprobe := 4) ORDER BY distance", sqlVector(q)))
	require.NoError(t, err)
	require.Equal(t, wantIDs, sel.RowIDs)
	require.Positive(t, cache.Stats().Puts)
}
