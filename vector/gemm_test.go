package vector

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/viterin/vek/vek32"

	"github.com/lochdata/loch/internal/testseed"
)

func randFloats(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()*2 - 1
	}
	return v
}

// TestCentroidScores: the blocked product (panels of 16 started from the
// bias, blocks of 4 rows, a padded last panel and tail rows, rows packed
// or strided) equals <x, c> - |c|^2/2 computed one pair at a time, for
// dimensions and counts that are and are not multiples of the blocks; the
// nearest centroid it picks is as near as the one found one at a time.
func TestCentroidScores(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.Seed(t), 1))
	for _, tc := range []struct{ rows, k, dim, ldx int }{{1, 1, 1, 1}, {7, 17, 3, 3}, {256, 1000, 128, 128}, {13, 48, 64, 64}, {4, 16, 9, 9}, {301, 256, 8, 128}, {6, 40, 8, 11}} {
		xs, cents := randFloats(r, tc.rows*tc.ldx), randFloats(r, tc.k*tc.dim)
		row := func(i int) []float32 { return xs[i*tc.ldx : i*tc.ldx+tc.dim] }
		c := newCentroidsT(L2, cents, tc.dim)
		out := make([]float32, tc.rows*c.kp)
		c.scores(xs, tc.rows, tc.ldx, out)
		cn := norms(cents, tc.dim)
		for i := range tc.rows {
			for j := range tc.k {
				var want float64
				for d, x := range row(i) {
					want += float64(x) * float64(cents[j*tc.dim+d])
				}
				want -= float64(cn[j]) / 2
				require.InDelta(t, want, out[i*c.kp+j], 1e-4, "%+v: row %d centroid %d", tc, i, j)
			}
		}
		near := make([]int32, tc.rows)
		c.nearestRows(xs, tc.rows, tc.ldx, near, nil)
		for i := range tc.rows {
			x := row(i)
			want := nearestCentroid(L2, cents, cn, tc.dim, x, sqDist(x, make([]float32, tc.dim)))
			require.InDelta(t, sqDist(x, cents[int(near[i])*tc.dim:][:tc.dim]), sqDist(x, cents[want*tc.dim:][:tc.dim]), 1e-4, "%+v: row %d", tc, i)
		}
	}
}

// TestPQEncodeRows: the codes encodeList writes in blocks are, for each
// subquantizer, a centroid as near to the residual's subvector as the
// nearest found one centroid at a time, with a codebook of fewer than 256
// entries and lists longer than a block.
func TestPQEncodeRows(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.Seed(t), 2))
	for _, tc := range []struct{ n, dim, m, k int }{{1, 8, 2, 3}, {600, 32, 4, 256}, {37, 12, 3, 100}} {
		book, vecs, cent := randFloats(r, tc.k*tc.dim), randFloats(r, tc.n*tc.dim), randFloats(r, tc.dim)
		q := newPQ(tc.dim, tc.m, book, tc.k)
		codes := q.encodeList(newPQScratch(), cent, vecs, []byte{9})
		require.Len(t, codes, 1+tc.n*tc.m)
		require.Equal(t, byte(9), codes[0])
		for i := range tc.n {
			for s := range tc.m {
				res := make([]float32, q.dsub)
				for j := range res {
					res[j] = vecs[i*tc.dim+s*q.dsub+j] - cent[s*q.dsub+j]
				}
				best := float32(1e30)
				for c := range tc.k {
					best = min(best, sqDist(res, book[c*tc.dim+s*q.dsub:][:q.dsub]))
				}
				got := int(codes[1+i*tc.m+s])
				require.Less(t, got, tc.k)
				require.InDelta(t, best, sqDist(res, book[got*tc.dim+s*q.dsub:][:q.dsub]), 1e-4, "%+v: row %d subquantizer %d", tc, i, s)
			}
		}
	}
}

// TestDotRows: the list scan's kernel gives vek32.MatMul_Into's dot
// products bit for bit (so an index answers as before it), for
// dimensions that take the two-row kernel and others, odd and even row
// counts, values of mixed magnitude.
func TestDotRows(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.Seed(t), 3))
	for _, dim := range []int{1, 8, 31, 32, 64, 96, 128, 384, 768} {
		for _, rows := range []int{1, 2, 3, 17, 316} {
			x, q := randFloats(r, rows*dim), randFloats(r, dim)
			for i := range x {
				x[i] *= float32(math.Exp2(float64(r.IntN(20) - 10)))
			}
			want := vek32.MatMul_Into(make([]float32, rows), x, q, dim)
			got := dotRows(make([]float32, rows+5), x, q, dim)
			require.Len(t, got, rows)
			for i := range want {
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "dim %d rows %d row %d: %g against %g", dim, rows, i, got[i], want[i])
			}
		}
	}
}

// TestRankCentroidsBatched: the centroids' distances from one
// matrix-vector product are those of one dot product a centroid, bit for
// bit, for each metric, with dimensions that take the batch and not.
func TestRankCentroidsBatched(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.Seed(t), 4))
	for _, m := range []Metric{L2, Cosine, Dot} {
		for _, dim := range []int{8, 64, 100, 128} {
			cents := randFloats(r, 37*dim)
			ix := &Index{metric: m, c: &column{dim: dim}, cents: cents, cnorm: norms(cents, dim)}
			q := prepare(m, randFloats(r, dim))
			want := ix.rankCentroids(&q, nil, 37, nil)
			got := ix.rankCentroids(&q, nil, 37, make([]float32, 37))
			require.Equal(t, want, got, "metric %s dim %d", m, dim)
		}
	}
}
