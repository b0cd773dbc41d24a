package vector

import (
	"context"
	"github.com/lochdata/loch"
	"github.com/stretchr/testify/require"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
	"unsafe"

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
	if f := os.Getenv("LOCH_NL_CENTS"); f != "" {
		if raw, err := os.ReadFile(f); err == nil {
			cents = unsafe.Slice((*float32)(unsafe.Pointer(&raw[0])), len(raw)/4)
		}
	}
	if cents == nil {
		step("train", func() { cents = train(L2, pts, dim, nlist, 10, 1, 2) })
		if f := os.Getenv("LOCH_NL_CENTS"); f != "" {
			_ = os.WriteFile(f, unsafe.Slice((*byte)(unsafe.Pointer(&cents[0])), len(cents)*4), 0o644)
		}
	}
	var q *quantizer
	step("newQuantizer", func() { q = newQuantizer(L2, cents, dim, 1, 2) })
	logGroups(b, q, pts)
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

// logGroups logs the sizes of q's groups and the centroids a row of pts
// is compared with on average (the sizes of its probed groups).
func logGroups(b *testing.B, q *quantizer, pts []float32) {
	if q.groupT == nil {
		return
	}
	sizes := make([]int, len(q.member))
	for g, mem := range q.member {
		sizes[g] = len(mem)
	}
	slices.Sort(sizes)
	n := min(len(pts)/q.dim, 20000)
	sc := make([]float32, n*q.groupT.kp)
	q.groupT.scores(pts, n, q.dim, sc)
	var top [groupProbe]int32
	compared := 0
	for i := range n {
		for _, g := range q.probed(sc[i*q.groupT.kp:i*q.groupT.kp+q.groupT.k], top[:]) {
			compared += len(q.member[g])
		}
	}
	b.Logf("%d groups of %d (min) / %d (median) / %d (p90) / %d (max) centroids; a row compared with %.0f", len(sizes), sizes[0], sizes[len(sizes)/2], sizes[len(sizes)*9/10], sizes[len(sizes)-1], float64(compared)/float64(n))
}

// BenchmarkSampleRead times, on the dataset at LOCH_NL_SAMPLE_DS (column
// "embedding", opened read-only), the read of a training sample of
// LOCH_NL_SAMPLE rows (1,000,000) at random positions, as Train reads it:
// wall and CPU time. Skipped without LOCH_NL_SAMPLE_DS.
func BenchmarkSampleRead(b *testing.B) {
	url := os.Getenv("LOCH_NL_SAMPLE_DS")
	if url == "" {
		b.Skip("LOCH_NL_SAMPLE_DS unset")
	}
	size, _ := strconv.Atoi(envOr("LOCH_NL_SAMPLE", "1000000"))
	ctx := context.Background()
	ds, err := loch.Open(ctx, url)
	require.NoError(b, err)
	defer ds.Close()
	c, err := openColumn(ctx, ds.Scan(), "embedding", 2)
	require.NoError(b, err)
	t, cpu := time.Now(), cpuTime()
	got, err := c.sample(ctx, int64(size), 1, 2)
	require.NoError(b, err)
	b.Logf("sample of %d of %d rows: %s wall, %.1f s CPU", len(got)/c.dim, ds.Scan().Len(), time.Since(t).Round(time.Millisecond), (cpuTime() - cpu).Seconds())
}
