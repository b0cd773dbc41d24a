package vector

import (
	"math"
	"math/rand/v2"
	"sync"

	"github.com/viterin/vek/vek32"
)

// coarse ranks centroids for a metric: by cosine for cosine (vectors and
// centroids unit length), by L2 otherwise (k-means minimizes it; for dot,
// lists are L2 cells and queries rank centroids by inner product, as
// faiss's IVF does).
func assignMetric(m Metric) Metric {
	if m == Cosine {
		return Cosine
	}
	return L2
}

// nearestCentroid returns the index of the centroid nearest to x by m.
// cnorm holds the centroids' squared norms.
func nearestCentroid(m Metric, cents []float32, cnorm []float32, dim int, x []float32, xx float32) int {
	best, bd := 0, float32(math.Inf(1))
	for c := range len(cnorm) {
		dot := vek32.Dot(cents[c*dim:(c+1)*dim], x)
		var d float32
		if m == Cosine {
			d = -dot
		} else {
			d = cnorm[c] - 2*dot + xx
		}
		if d < bd {
			bd, best = d, c
		}
	}
	return best
}

func norms(vs []float32, dim int) []float32 {
	out := make([]float32, len(vs)/dim)
	for i := range out {
		x := vs[i*dim : (i+1)*dim]
		out[i] = vek32.Dot(x, x)
	}
	return out
}

// normalize scales each vector of vs to unit length (zero stays zero).
func normalize(vs []float32, dim int) {
	for i := 0; i < len(vs); i += dim {
		x := vs[i : i+dim]
		if n := vek32.Dot(x, x); n > 0 {
			vek32.MulNumber_Inplace(x, float32(1/math.Sqrt(float64(n))))
		}
	}
}

// exactIters is the number of k-means iterations that compare every
// point with every centroid (see kmeans).
const exactIters = 3

// fullIters is the number of last k-means iterations that run on the
// whole sample; the ones before run on a strided subsample of
// subPerCentroid points a centroid (mini-batch k-means in the manner of
// faiss's sampling: the early iterations only need to place the
// centroids roughly, and cost a quarter).
const (
	fullIters      = 3
	subPerCentroid = 16
)

// kmeans runs Lloyd's algorithm on the sample (n x dim, normalized for
// cosine) and returns nlist centroids. Initial centroids are distinct
// random sample points; the iterations before the last fullIters run on
// a subsample (see fullIters); an empty cell takes half of a large one
// (splitEmpty). From groupedAbove centroids, the iterations after the
// first exactIters assign through a quantizer of the centroids so far: by
// then few points change cells.
func kmeans(m Metric, sample []float32, dim, nlist, iters int, seed uint64, parallelism int) []float32 {
	n := len(sample) / dim
	r := rand.New(rand.NewPCG(seed, 0x6b6d65616e73))
	cents := make([]float32, nlist*dim)
	for c, p := range r.Perm(n)[:nlist] {
		copy(cents[c*dim:], sample[p*dim:(p+1)*dim])
	}
	sub := subsample(sample, dim, subPerCentroid*nlist)
	for it := range iters {
		pts := sample
		if it < iters-fullIters {
			pts = sub
		}
		assign := make([]int, len(pts)/dim)
		if nlist >= groupedAbove && it >= exactIters {
			for _, a := range newQuantizer(m, cents, dim, seed+uint64(it), parallelism).assignAll(pts, parallelism) {
				assign[a.row] = int(a.l)
			}
		} else {
			assignStep(assignMetric(m), pts, cents, dim, norms(pts, dim), assign, parallelism)
		}
		sum := make([]float32, nlist*dim)
		cnt := make([]int, nlist)
		for i, a := range assign {
			cnt[a]++
			vek32.Add_Inplace(sum[a*dim:(a+1)*dim], pts[i*dim:(i+1)*dim])
		}
		cents = means(m, sum, cnt, dim, r)
	}
	return cents
}

// means turns the sums of each cell's points (sum, nlist x dim) and their
// counts into the cells' centroids, in place: an empty cell takes half of
// a large one (splitEmpty), and for cosine each centroid is normalized.
// It returns sum.
func means(m Metric, sum []float32, cnt []int, dim int, r *rand.Rand) []float32 {
	for c := range cnt {
		if cnt[c] > 0 {
			vek32.MulNumber_Inplace(sum[c*dim:(c+1)*dim], 1/float32(cnt[c]))
		}
	}
	splitEmpty(sum, cnt, dim, r)
	if m == Cosine {
		normalize(sum, dim)
	}
	return sum
}

// subsample returns every (n/size)-th point of the sample when it holds
// over twice size points, else the sample.
func subsample(sample []float32, dim, size int) []float32 {
	n := len(sample) / dim
	if size <= 0 || n <= 2*size {
		return sample
	}
	out := make([]float32, 0, size*dim)
	for i := range size {
		p := int(int64(i) * int64(n) / int64(size))
		out = append(out, sample[p*dim:(p+1)*dim]...)
	}
	return out
}

// splitEps is the relative distance at which splitEmpty places the two
// halves of a split cell's centroid.
const splitEps = 1.0 / 1024

// splitEmpty gives each empty cell half of a cell picked with probability
// proportional to its points less one (as faiss does): the two centroids
// are the picked one moved by splitEps up and down, each taking half its
// points, so that the next iteration divides the large cell instead of
// leaving a list empty.
func splitEmpty(cents []float32, cnt []int, dim int, r *rand.Rand) {
	n, k := 0, len(cnt)
	for _, c := range cnt {
		n += c
	}
	if n <= k {
		return
	}
	for ci := range k {
		if cnt[ci] != 0 {
			continue
		}
		cj := 0
		for ; ; cj = (cj + 1) % k {
			if r.Float64() < float64(cnt[cj]-1)/float64(n-k) {
				break
			}
		}
		a, b := cents[ci*dim:(ci+1)*dim], cents[cj*dim:(cj+1)*dim]
		copy(a, b)
		for j := range a {
			e := float32(splitEps)
			if j%2 == 1 {
				e = -e
			}
			a[j] *= 1 + e
			b[j] *= 1 - e
		}
		cnt[ci] = cnt[cj] / 2
		cnt[cj] -= cnt[ci]
	}
}

// parallelFor runs fn(w, lo, hi) over [0, n) split into parallelism
// parts, part w on its own goroutine.
func parallelFor(n, parallelism int, fn func(w, lo, hi int)) {
	var wg sync.WaitGroup
	for t := range parallelism {
		lo, hi := n*t/parallelism, n*(t+1)/parallelism
		if lo == hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(t, lo, hi)
		}()
	}
	wg.Wait()
}

// assignStep sets assign[i] to the centroid nearest to sample row i (by
// am, xnorm the rows' squared norms): against few centroids one dot
// product at a time, else a block of rows against every centroid in a
// matrix product (centroidsT), in few dimensions (a product quantizer's
// subspaces) as in many.
func assignStep(am Metric, sample, cents []float32, dim int, xnorm []float32, assign []int, par int) {
	cnorm := norms(cents, dim)
	if len(cnorm) < 32 {
		parallelFor(len(assign), par, func(_, lo, hi int) {
			for i := lo; i < hi; i++ {
				assign[i] = nearestCentroid(am, cents, cnorm, dim, sample[i*dim:(i+1)*dim], xnorm[i])
			}
		})
		return
	}
	out := make([]int32, len(assign))
	ct := newCentroidsT(am, cents, dim)
	parallelFor(len(assign), par, func(_, lo, hi int) {
		ct.nearestAll(sample[lo*dim:hi*dim], out[lo:hi], nil)
	})
	for i, a := range out {
		assign[i] = int(a)
	}
}
