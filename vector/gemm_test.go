package vector

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testseed"
)

// TestCentroidDots: the blocked product (panels of 16, blocks of 4 rows,
// a padded last panel and tail rows) equals the inner products computed
// one pair at a time, for dimensions and counts that are and are not
// multiples of the blocks.
func TestCentroidDots(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.Seed(t), 1))
	for _, tc := range []struct{ rows, k, dim int }{{1, 1, 1}, {7, 17, 3}, {256, 1000, 128}, {13, 48, 64}, {4, 16, 9}} {
		xs, cents := make([]float32, tc.rows*tc.dim), make([]float32, tc.k*tc.dim)
		for i := range xs {
			xs[i] = r.Float32()*2 - 1
		}
		for i := range cents {
			cents[i] = r.Float32()*2 - 1
		}
		c := newCentroidsT(L2, cents, tc.dim)
		out := make([]float32, tc.rows*c.kp)
		c.dots(xs, out)
		for i := range tc.rows {
			for j := range tc.k {
				var want float64
				for d := range tc.dim {
					want += float64(xs[i*tc.dim+d]) * float64(cents[j*tc.dim+d])
				}
				require.InDelta(t, want, out[i*c.kp+j], 1e-4, "%+v: row %d centroid %d", tc, i, j)
			}
		}
		near := make([]int32, tc.rows)
		c.nearestAll(xs, near, nil)
		cn := norms(cents, tc.dim)
		for i := range tc.rows {
			x := xs[i*tc.dim : (i+1)*tc.dim]
			want := nearestCentroid(L2, cents, cn, tc.dim, x, sqDist(x, make([]float32, tc.dim)))
			require.InDelta(t, sqDist(x, cents[int(near[i])*tc.dim:][:tc.dim]), sqDist(x, cents[want*tc.dim:][:tc.dim]), 1e-4, "%+v: row %d", tc, i)
		}
	}
}
