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

// kmeans runs Lloyd's algorithm on the sample (n x dim, normalized for
// cosine) and returns nlist centroids. Initial centroids are distinct
// random sample points; an empty cell takes a random point. From
// groupedAbove centroids, the iterations after the first exactIters
// assign through a quantizer of the centroids so far: by then few points
// change cells.
func kmeans(m Metric, sample []float32, dim, nlist, iters int, seed uint64, parallelism int) []float32 {
	n := len(sample) / dim
	r := rand.New(rand.NewPCG(seed, 0x6b6d65616e73))
	cents := make([]float32, nlist*dim)
	for c, p := range r.Perm(n)[:nlist] {
		copy(cents[c*dim:], sample[p*dim:(p+1)*dim])
	}
	am := assignMetric(m)
	assign := make([]int, n)
	xnorm := norms(sample, dim)
	for it := range iters {
		if nlist >= groupedAbove && it >= exactIters {
			for _, a := range newQuantizer(m, cents, dim, seed+uint64(it), parallelism).assignAll(sample, parallelism) {
				assign[a.row] = int(a.l)
			}
		} else {
			assignStep(am, sample, cents, dim, xnorm, assign, parallelism)
		}
		sum := make([]float32, nlist*dim)
		cnt := make([]int, nlist)
		for i, a := range assign {
			cnt[a]++
			vek32.Add_Inplace(sum[a*dim:(a+1)*dim], sample[i*dim:(i+1)*dim])
		}
		for c := range nlist {
			s := sum[c*dim : (c+1)*dim]
			if cnt[c] == 0 {
				copy(s, sample[r.IntN(n)*dim:][:dim])
				continue
			}
			vek32.MulNumber_Inplace(s, 1/float32(cnt[c]))
		}
		if m == Cosine {
			normalize(sum, dim)
		}
		cents = sum
	}
	return cents
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
// am, xnorm the rows' squared norms). In few dimensions (a product
// quantizer's subspaces) a row is compared with every centroid at once,
// the centroids transposed, in vector operations as wide as the number of
// centroids.
func assignStep(am Metric, sample, cents []float32, dim int, xnorm []float32, assign []int, par int) {
	cnorm := norms(cents, dim)
	k := len(cnorm)
	if k < 32 {
		parallelFor(len(assign), par, func(_, lo, hi int) {
			for i := lo; i < hi; i++ {
				assign[i] = nearestCentroid(am, cents, cnorm, dim, sample[i*dim:(i+1)*dim], xnorm[i])
			}
		})
		return
	}
	if dim > 16 {
		out := make([]int32, len(assign))
		ct := newCentroidsT(am, cents, dim)
		parallelFor(len(assign), par, func(_, lo, hi int) {
			ct.nearestAll(sample[lo*dim:hi*dim], out[lo:hi], nil)
		})
		for i, a := range out {
			assign[i] = int(a)
		}
		return
	}
	ct := make([]float32, dim*k)
	for c := range k {
		for j := range dim {
			ct[j*k+c] = cents[c*dim+j]
		}
	}
	parallelFor(len(assign), par, func(_, lo, hi int) {
		acc, tmp := make([]float32, k), make([]float32, k)
		for i := lo; i < hi; i++ {
			x := sample[i*dim : (i+1)*dim]
			vek32.MulNumber_Into(acc, ct[:k], x[0])
			for j := 1; j < dim; j++ {
				vek32.MulNumber_Into(tmp, ct[j*k:(j+1)*k], x[j])
				vek32.Add_Inplace(acc, tmp)
			}
			if am == Cosine {
				assign[i] = vek32.ArgMax(acc)
				continue
			}
			vek32.MulNumber_Inplace(acc, -2)
			vek32.Add_Inplace(acc, cnorm)
			assign[i] = vek32.ArgMin(acc)
		}
	})
}
