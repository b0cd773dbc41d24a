package vector

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/viterin/vek/vek32"
)

// BenchmarkGroupedTrainAssign times, on a mixture like BenchmarkIVFReport's,
// the two-level training of LOCH_NL_NLIST (16384) lists on LOCH_NL_N rows
// (200000) and the assignment of those rows, row by row (q.nearest, with
// LOCH_NL_ROWWISE set) and in blocks (q.nearestAll), CPU time a row, and
// the share of rows the blocks assign to their exact nearest centroid.
func BenchmarkGroupedTrainAssign(b *testing.B) {
	nlist, _ := strconv.Atoi(envOr("LOCH_NL_NLIST", "16384"))
	n, _ := strconv.Atoi(envOr("LOCH_NL_N", "200000"))
	const dim = 128
	mx := newMixture(1, dim, 1000, 1)
	pts := make([]float32, 0, n*dim)
	for range n {
		pts = append(pts, mx.draw()...)
	}
	step := func(name string, f func()) {
		t, c := time.Now(), cpuTime()
		f()
		b.Logf("%s: %s wall, %.2f us CPU a row", name, time.Since(t).Round(time.Millisecond), float64((cpuTime()-c).Microseconds())/float64(n))
	}
	var cents []float32
	step("train", func() { cents = train(L2, pts, dim, nlist, 10, 1, 2) })
	var q *quantizer
	step("newQuantizer", func() { q = newQuantizer(L2, cents, dim, 1, 2) })
	out := make([]int32, n)
	if os.Getenv("LOCH_NL_ROWWISE") != "" {
		step("nearest row by row", func() {
			parallelFor(n, 2, func(_, lo, hi int) {
				for i := lo; i < hi; i++ {
					x := pts[i*dim : (i+1)*dim]
					out[i] = int32(q.nearest(x, vek32.Dot(x, x)))
				}
			})
		})
	}
	var got []assignment
	step("nearestAll", func() { got = q.assignAll(pts, 2) })
	nt := min(n, 20000)
	exact := make([]int32, nt)
	newCentroidsT(L2, cents, dim).nearestAll(pts[:nt*dim], exact, nil)
	same := 0
	for i := range nt {
		if got[i].l == exact[i] {
			same++
		}
	}
	b.Logf("the exact nearest centroid for %.4f of %d rows", float64(same)/float64(nt), nt)
}
