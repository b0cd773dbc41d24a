package vector

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/schema"
)

// BenchmarkExact is exact search of one query over 50,000 x 128 float32
// vectors on local disk; SetBytes makes its MB/s the vectors scanned per
// second (compare the memory read in query's BenchmarkVectorReport).
func BenchmarkExact(b *testing.B) {
	ctx := context.Background()
	mx := newMixture(1, 128, 100, 1)
	m := newModelChunks(b, filepath.Join(b.TempDir(), "ds"), 128, schema.Float32, 0)
	var vs [][]float32
	for range 50000 {
		vs = append(vs, mx.draw())
	}
	m.append(vs)
	m.commit("rows")
	q := [][]float32{mx.draw()}
	b.SetBytes(50000 * 128 * 4)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		_, err := Exact(ctx, m.ds.Scan(), "embedding", Cosine, q, 10, Options{})
		require.NoError(b, err)
	}
}
