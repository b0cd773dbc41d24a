package vector

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/viterin/vek/vek32"
)

// twoLevelAbove is the number of centroids above which training and
// assignment go through a coarse level of about sqrt(nlist) groups (as
// faiss's two-level clustering does): below it, plain Lloyd and an exact
// nearest centroid cost little.
const twoLevelAbove = 4096

// groupProbe is the number of coarse groups whose centroids a row is
// compared with when it is assigned through the coarse level.
const groupProbe = 10

// groupedAbove is the number of centroids from which rows are assigned
// through groups (newQuantizer) rather than compared with every centroid:
// with the two levels. Below it the matrix products of centroidsT were
// measured faster than comparing a row with a quarter of the centroids
// one dot product at a time (bench/RESULTS.md).
const groupedAbove = twoLevelAbove + 1

// train returns nlist centroids of the sample (n x dim, normalized for
// cosine). Above twoLevelAbove it trains two levels: k-means of about
// sqrt(nlist) coarse centroids, then, inside each coarse cell, k-means of
// a share of nlist proportional to the cell's points; a Lloyd iteration
// then costs O(n x sqrt(nlist)) distances instead of O(n x nlist).
func train(m Metric, sample []float32, dim, nlist, iters int, seed uint64, par int) []float32 {
	n := len(sample) / dim
	if nlist <= twoLevelAbove || n < 2*nlist {
		return kmeans(m, sample, dim, nlist, iters, seed, par)
	}
	k1 := int(math.Round(math.Sqrt(float64(nlist))))
	coarse := kmeans(m, sample, dim, k1, iters, seed, par)
	q := &quantizer{m: assignMetric(m), dim: dim, cents: coarse, cnorm: norms(coarse, dim), exact: newCentroidsT(m, coarse, dim)}
	cells := make([][]float32, k1)
	for _, a := range q.assignAll(sample, par) {
		i := int(a.l)
		cells[i] = append(cells[i], sample[int(a.row)*dim:(int(a.row)+1)*dim]...)
	}
	shares := shareOut(nlist, cells, dim)
	parts := make([][]float32, k1)
	var wg sync.WaitGroup
	next := make(chan int, k1)
	for i := range k1 {
		next <- i
	}
	close(next)
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if shares[i] > 0 {
					parts[i] = kmeans(m, cells[i], dim, shares[i], iters, seed+uint64(i)+1, 1)
				}
			}
		}()
	}
	wg.Wait()
	return refine(m, sample, dim, slices.Concat(parts...), refineIters, seed, par)
}

// refineIters is the number of Lloyd iterations over the whole sample
// after the two levels, each row assigned through the quantizer of the
// centroids so far: centroids move across the coarse cells' borders. 4
// were measured at the same recall@10 (300k x 128, nlist 16,384: 0.902
// against 0.905 at nprobe 8) for a third more build CPU
// (bench/history/2026-11-30-nl2-2.md).
const refineIters = 2

// refine runs Lloyd iterations with assignment through a quantizer; an
// empty cell takes half of a large one (means), as in kmeans.
func refine(m Metric, sample []float32, dim int, cents []float32, iters int, seed uint64, par int) []float32 {
	nlist := len(cents) / dim
	r := rand.New(rand.NewPCG(seed, 0x726566696e65))
	for it := range iters {
		q := newQuantizer(m, cents, dim, seed+uint64(it), par)
		sum := make([]float32, nlist*dim)
		cnt := make([]int, nlist)
		for _, a := range q.assignAll(sample, par) {
			cnt[a.l]++
			vek32.Add_Inplace(sum[int(a.l)*dim:(int(a.l)+1)*dim], sample[int(a.row)*dim:(int(a.row)+1)*dim])
		}
		cents = means(m, sum, cnt, dim, r)
	}
	return cents
}

// shareOut divides nlist among the cells in proportion to their points
// (largest remainders first), at least one to a cell with points and at
// most one per point.
func shareOut(nlist int, cells [][]float32, dim int) []int {
	n := 0
	for _, c := range cells {
		n += len(c) / dim
	}
	shares := make([]int, len(cells))
	type rem struct {
		i int
		r float64
	}
	var rems []rem
	total := 0
	for i, c := range cells {
		pts := len(c) / dim
		if pts == 0 {
			continue
		}
		exact := float64(nlist) * float64(pts) / float64(n)
		shares[i] = min(max(1, int(exact)), pts)
		total += shares[i]
		rems = append(rems, rem{i, exact - float64(shares[i])})
	}
	slices.SortFunc(rems, func(a, b rem) int { return cmp.Compare(b.r, a.r) })
	for j := 0; total < nlist && len(rems) > 0; j = (j + 1) % len(rems) {
		if i := rems[j].i; shares[i] < len(cells[i])/dim {
			shares[i]++
			total++
		} else if j == len(rems)-1 && !slices.ContainsFunc(rems, func(r rem) bool { return shares[r.i] < len(cells[r.i])/dim }) {
			break
		}
	}
	// The minimum of one a cell may have overshot: take from the largest.
	for total > nlist {
		i := 0
		for j, v := range shares {
			if v > shares[i] {
				i = j
			}
		}
		if shares[i] <= 1 {
			break
		}
		shares[i]--
		total--
	}
	return shares
}

// quantizer assigns vectors to their nearest centroid: exactly when there
// are few centroids, else through about sqrt(groupsPerList x nlist)
// groups of centroids (k-means of the centroids themselves, the groups'
// sizes bounded: balancedGroups), comparing a vector with the centroids
// of its groupProbe nearest groups only. Safe for concurrent use.
type quantizer struct {
	m      Metric // assignMetric's
	dim    int
	cents  []float32
	cnorm  []float32
	groups *quantizer // nil: exact
	member [][]int32  // centroids of each group
	exact  *centroidsT
	groupT *centroidsT   // the groups' centroids, for a block's matrix product
	memT   []*centroidsT // each group's centroids (nil: none)
}

// newQuantizer returns the quantizer of centroids for metric m.
func newQuantizer(m Metric, cents []float32, dim int, seed uint64, par int) *quantizer {
	q := &quantizer{m: assignMetric(m), dim: dim, cents: cents, cnorm: norms(cents, dim)}
	nlist := len(q.cnorm)
	if nlist < groupedAbove {
		q.exact = newCentroidsT(m, cents, dim)
		return q
	}
	k1 := int(math.Round(math.Sqrt(float64(groupsPerList * nlist))))
	gc := kmeans(m, slices.Clone(cents), dim, k1, 10, seed^0x717561, par)
	gc, q.member = balancedGroups(m, cents, gc, dim, par)
	k1 = len(gc) / dim
	q.groups = &quantizer{m: q.m, dim: dim, cents: gc, cnorm: norms(gc, dim)}
	q.groupT = newCentroidsT(m, gc, dim)
	q.memT = make([]*centroidsT, k1)
	for g, mem := range q.member {
		if len(mem) > 0 {
			mc := make([]float32, 0, len(mem)*dim)
			for _, c := range mem {
				mc = append(mc, cents[int(c)*dim:(int(c)+1)*dim]...)
			}
			q.memT[g] = newCentroidsT(m, mc, dim)
		}
	}
	return q
}

// assignment is a row's list.
type assignment struct{ row, l int32 }

// assignAll returns the nearest centroid of each vector of vs.
func (q *quantizer) assignAll(vs []float32, par int) []assignment {
	n := len(vs) / q.dim
	out := make([]assignment, n)
	if q.exact != nil {
		ls := make([]int32, n)
		parallelFor(n, par, func(_, lo, hi int) { q.exact.nearestAll(vs[lo*q.dim:hi*q.dim], ls[lo:hi], nil) })
		for i, l := range ls {
			out[i] = assignment{int32(i), l}
		}
		return out
	}
	ls := make([]int32, n)
	parallelFor(n, par, func(_, lo, hi int) { q.nearestAll(vs[lo*q.dim:hi*q.dim], ls[lo:hi], nil) })
	for i, l := range ls {
		out[i] = assignment{int32(i), l}
	}
	return out
}

// nearest returns the centroid nearest to x (xx = |x|^2).
func (q *quantizer) nearest(x []float32, xx float32) int {
	if q.groups == nil {
		return nearestCentroid(q.m, q.cents, q.cnorm, q.dim, x, xx)
	}
	g := q.groups
	sc := make([]float32, len(g.cnorm))
	for c := range sc {
		sc[c] = groupScore(q.m, centroidDistance(q.m, g.cents[c*q.dim:(c+1)*q.dim], g.cnorm[c], x, xx), xx)
	}
	var top [groupProbe]int32
	nt := topScores(sc, top[:])
	best, bd := 0, float32(math.Inf(1))
	for _, gi := range top[:nt] {
		for _, c := range q.member[gi] {
			d := centroidDistance(q.m, q.cents[int(c)*q.dim:(int(c)+1)*q.dim], q.cnorm[c], x, xx)
			if d < bd || (d == bd && int(c) < best) {
				bd, best = d, int(c)
			}
		}
	}
	return best
}

// centroidDistance orders centroids by nearness to x as nearestCentroid
// does: -dot for cosine, the squared L2 distance otherwise.
func centroidDistance(m Metric, c []float32, cc float32, x []float32, xx float32) float32 {
	dot := vek32.Dot(c, x)
	if m == Cosine {
		return -dot
	}
	return cc - 2*dot + xx
}

// groupScore turns centroidDistance's d into the score centroidsT gives
// (<x, c> - |c|^2/2 for L2, <x, c> for cosine), by which rows rank groups.
func groupScore(m Metric, d, xx float32) float32 {
	if m == Cosine {
		return -d
	}
	return (xx - d) / 2
}
