package vector

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/internal/testseed"
)

// TestPQThroughCache: an ivf-pq index read through a chunk cache answers
// as it does from the store; the second search is served from the cache
// by range, and the opened index holds no list in memory.
func TestPQThroughCache(t *testing.T) {
	seed := testseed.Seed(t)
	ctx := context.Background()
	mx := newMixture(seed, 16, 10, 0.5)
	m, vs := filled(t, mx, 2000)
	info, err := Build(ctx, m.ds, "embedding", BuildOptions{Metric: Cosine, Seed: seed, Kind: "ivf_pq", M: 4})
	require.NoError(t, err)
	require.Equal(t, KindPQ, info.Type)
	require.Equal(t, 4, info.M)
	cache := chunkcache.NewMemory(64 << 20)
	defer cache.Close()
	plain, err := Open(ctx, m.ds, "embedding", Cosine, Options{})
	require.NoError(t, err)
	cached, err := Open(ctx, m.ds, "embedding", Cosine, Options{Cache: cache})
	require.NoError(t, err)
	require.Nil(t, cached.ls)
	qs := [][]float32{mx.draw(), mx.draw(), vs[17]}
	want, err := plain.Search(ctx, qs, 10, Options{})
	require.NoError(t, err)
	for range 2 {
		got, err := cached.Search(ctx, qs, 10, Options{})
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	require.Positive(t, cache.Stats().Hits)
	require.Equal(t, uint64(17), want[2][0].RowID)
}

// TestTrainTwoLevel: above twoLevelAbove centroids the trainer returns
// nlist distinct centroids, and the two-level quantizer assigns nearly
// every point to its exact nearest centroid.
func TestTrainTwoLevel(t *testing.T) {
	seed := testseed.Seed(t)
	mx := newMixture(seed, 16, 50, 1)
	var sample []float32
	for range 5 * (twoLevelAbove + 52) {
		sample = append(sample, mx.draw()...)
	}
	nlist := twoLevelAbove + 52
	cents := train(L2, sample, 16, nlist, 8, seed, 2)
	require.Len(t, cents, nlist*16)
	q := newQuantizer(L2, cents, 16, seed, 2)
	require.NotNil(t, q.groups)
	same := 0
	for i := range 2000 {
		x := sample[i*16 : (i+1)*16]
		xx := sqDist(x, make([]float32, 16))
		if q.nearest(x, xx) == nearestCentroid(L2, cents, q.cnorm, 16, x, xx) {
			same++
		}
	}
	t.Logf("%d of 2000 assigned to their exact nearest centroid", same)
	require.GreaterOrEqual(t, same, 1700)
}

// TestShareOut: nlist is divided among cells in proportion to their
// points, at least one each and at most one per point.
func TestShareOut(t *testing.T) {
	cell := func(n int) []float32 { return make([]float32, n) }
	for _, tc := range []struct {
		nlist int
		cells []int
		want  []int
	}{
		{10, []int{50, 50}, []int{5, 5}},
		{10, []int{90, 5, 5}, []int{8, 1, 1}},
		{10, []int{3, 0, 100}, []int{1, 0, 9}},
		{10, []int{2, 2}, []int{2, 2}},
	} {
		var cells [][]float32
		for _, n := range tc.cells {
			cells = append(cells, cell(n))
		}
		require.Equal(t, tc.want, shareOut(tc.nlist, cells, 1), "%v", tc)
	}
}

// TestDefaultRerank: the re-ranked candidates grow with k and, past
// 4,000,000 rows, with the index's rows (rows / 10,000), and never fall
// below 400.
func TestDefaultRerank(t *testing.T) {
	for _, c := range []struct {
		k    int
		rows int64
		want int
	}{
		{10, 0, 400}, {10, 1_000_000, 400}, {20, 1_000_000, 800},
		{10, 10_000_000, 1000}, {50, 10_000_000, 2000}, {10, 100_000_000, 10_000},
		{10, 1 << 62, 1 << 20},
	} {
		require.Equal(t, c.want, defaultRerank(c.k, c.rows), "k %d, rows %d", c.k, c.rows)
	}
}
