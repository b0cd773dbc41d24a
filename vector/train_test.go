package vector

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testseed"
)

// skewed draws n points of dim from a mixture of comps components whose
// weights fall as 1/(i+1)^2 (the first holds about 60% of the points), the
// i-th with spread sigma/(i+1): dense clusters of very different sizes.
func skewed(seed uint64, n, dim, comps int, sigma float64) []float32 {
	r := rand.New(rand.NewPCG(seed, 3))
	centres := make([]float64, comps*dim)
	for i := range centres {
		centres[i] = r.NormFloat64() * 4
	}
	cum := make([]float64, comps)
	total := 0.0
	for i := range comps {
		total += 1 / float64((i+1)*(i+1))
		cum[i] = total
	}
	out := make([]float32, 0, n*dim)
	for range n {
		c, _ := slices.BinarySearch(cum, r.Float64()*total)
		c = min(c, comps-1)
		for j := range dim {
			out = append(out, float32(centres[c*dim+j]+r.NormFloat64()*sigma/float64(c+1)))
		}
	}
	return out
}

// listSizes assigns every point to its list through the quantizer of
// cents and returns the lists' sizes.
func listSizes(cents, pts []float32, dim int, seed uint64) []int {
	q := newQuantizer(L2, cents, dim, seed, 2)
	sizes := make([]int, len(cents)/dim)
	for _, a := range q.assignAll(pts, 2) {
		sizes[a.l]++
	}
	return sizes
}

// TestListsBalancedOnSkewedMixture: on a skewed mixture the lists the
// trainer makes (plain k-means, and two levels above twoLevelAbove) are
// none empty and none over 10 times the mean, however unequal the
// mixture's components.
func TestListsBalancedOnSkewedMixture(t *testing.T) {
	seed := testseed.Seed(t)
	for _, tc := range []struct{ n, dim, nlist int }{{20000, 16, 64}, {8 * (twoLevelAbove + 200), 8, twoLevelAbove + 200}} {
		pts := skewed(seed, tc.n, tc.dim, 30, 1)
		cents := train(L2, pts, tc.dim, tc.nlist, 10, seed, 2)
		require.Len(t, cents, tc.nlist*tc.dim)
		sizes := listSizes(cents, pts, tc.dim, seed)
		mean := float64(tc.n) / float64(tc.nlist)
		empty := 0
		for _, s := range sizes {
			if s == 0 {
				empty++
			}
		}
		t.Logf("%+v: largest list %d rows (mean %.1f), %d empty", tc, slices.Max(sizes), mean, empty)
		require.LessOrEqual(t, float64(slices.Max(sizes)), 10*mean, "%+v", tc)
		require.Zero(t, empty, "%+v", tc)
	}
}
