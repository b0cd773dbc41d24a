package vector

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkExact is exact search of one query over 50,000 x 128 float32
// vectors on local disk; SetBytes makes its MB/s the vectors scanned per
// second (compare the memory read in query's BenchmarkVectorReport).
func BenchmarkExact(b *testing.B) {
	ctx := context.Background()
	mx := newMixture(1, 128, 100, 1)
	m, _ := filledChunks(b, mx, 50000, 0)
	q := [][]float32{mx.draw()}
	b.SetBytes(50000 * 128 * 4)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		_, err := Exact(ctx, m.ds.Scan(), "embedding", Cosine, q, 10, Options{})
		require.NoError(b, err)
	}
}

// BenchmarkFlatSearch is one query at a time of an ivf-flat index of
// 100,000 x 64 float32 vectors (a mixture of 1,000 components), nlist
// 316, nprobe 39, L2: issue 37's comparison with faiss-cpu IndexIVFFlat
// (bench/vector/bench_vector.py measures faiss on the same setting).
// Index is the open index's search; Searcher is the search the C ABI
// (and so Python's ds.search) makes, which also finds the index that
// serves the handle's version.
func BenchmarkFlatSearch(b *testing.B) {
	ctx := context.Background()
	mx := newMixture(1, 64, 1000, 1)
	m, _ := filledChunks(b, mx, 100000, 0)
	_, err := Build(ctx, m.ds, "embedding", BuildOptions{Metric: L2, NList: 316, Seed: 1})
	require.NoError(b, err)
	ix, err := Open(ctx, m.ds, "embedding", L2, Options{})
	require.NoError(b, err)
	s := NewSearcher(m.ds)
	qs := make([][]float32, 100)
	for i := range qs {
		qs[i] = mx.draw()
	}
	b.Run("Index", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			_, err := ix.Search(ctx, qs[i%len(qs):i%len(qs)+1], 10, Options{NProbe: 39})
			require.NoError(b, err)
		}
	})
	b.Run("Searcher", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			res, err := s.Search(ctx, "embedding", L2, qs[i%len(qs):i%len(qs)+1], 10, Options{NProbe: 39})
			require.NoError(b, err)
			require.NotEmpty(b, res.Index)
		}
	})
}
