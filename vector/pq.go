package vector

import (
	"math"

	"github.com/viterin/vek/vek32"
)

// ksub is the number of centroids of each subquantizer: codes are bytes.
const ksub = 256

// pq is a product quantizer: m subquantizers, each with up to ksub
// centroids of dim/m dimensions, stored as the codebook object lays them
// out (docs/format.md §2.8.1): entry c is dim floats, subquantizer s's
// centroid c at [s*dsub, (s+1)*dsub).
type pq struct {
	dim, m, dsub int
	book         []float32 // k x dim
	k            int
}

// defaultM is the number of subquantizers unless told: dim/8 (8
// dimensions a byte, 1/32 of float32), rounded down to a divisor of dim.
func defaultM(dim int) int {
	m := max(1, dim/8)
	for dim%m != 0 {
		m--
	}
	return m
}

// trainPQ trains m subquantizers on the residuals (n x dim).
func trainPQ(res []float32, dim, m, iters int, seed uint64, par int) *pq {
	n := len(res) / dim
	q := &pq{dim: dim, m: m, dsub: dim / m, k: min(ksub, n)}
	q.book = make([]float32, q.k*dim)
	parallelFor(m, par, func(_, lo, hi int) {
		sub := make([]float32, n*q.dsub)
		for s := lo; s < hi; s++ {
			for i := range n {
				copy(sub[i*q.dsub:], res[i*dim+s*q.dsub:i*dim+(s+1)*q.dsub])
			}
			cents := kmeans(L2, sub, q.dsub, q.k, iters, seed+uint64(s), 1)
			for c := range q.k {
				copy(q.book[c*dim+s*q.dsub:], cents[c*q.dsub:(c+1)*q.dsub])
			}
		}
	})
	return q
}

// encode appends the code of residual r (len dim) to dst.
func (q *pq) encode(dst []byte, r []float32) []byte {
	for s := range q.m {
		x := r[s*q.dsub : (s+1)*q.dsub]
		best, bd := 0, float32(math.Inf(1))
		for c := range q.k {
			if d := sqDist(x, q.book[c*q.dim+s*q.dsub:c*q.dim+(s+1)*q.dsub]); d < bd {
				best, bd = c, d
			}
		}
		dst = append(dst, byte(best))
	}
	return dst
}

// l2Table fills t (m x ksub) with the squared distances from each
// subvector of r to each centroid; entries past k are +Inf.
func (q *pq) l2Table(t []float32, r []float32) {
	for s := range q.m {
		x := r[s*q.dsub : (s+1)*q.dsub]
		row := t[s*ksub : (s+1)*ksub]
		for c := range q.k {
			row[c] = sqDist(x, q.book[c*q.dim+s*q.dsub:c*q.dim+(s+1)*q.dsub])
		}
		for c := q.k; c < ksub; c++ {
			row[c] = float32(math.Inf(1))
		}
	}
}

// dotTable fills t (m x ksub) with the negated inner products of each
// subvector of q with each centroid; entries past k are +Inf.
func (q *pq) dotTable(t []float32, v []float32) {
	for s := range q.m {
		x := v[s*q.dsub : (s+1)*q.dsub]
		row := t[s*ksub : (s+1)*ksub]
		for c := range q.k {
			row[c] = -vek32.Dot(x, q.book[c*q.dim+s*q.dsub:c*q.dim+(s+1)*q.dsub])
		}
		for c := q.k; c < ksub; c++ {
			row[c] = float32(math.Inf(1))
		}
	}
}

// score is the table's sum over a code.
func score(t []float32, code []byte) float32 {
	var s0, s1 float32
	i := 0
	for ; i+1 < len(code); i += 2 {
		s0 += t[i*ksub+int(code[i])]
		s1 += t[(i+1)*ksub+int(code[i+1])]
	}
	if i < len(code) {
		s0 += t[i*ksub+int(code[i])]
	}
	return s0 + s1
}

func sqDist(a, b []float32) float32 {
	var s float32
	for i, x := range a {
		d := x - b[i]
		s += d * d
	}
	return s
}
