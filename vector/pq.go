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
	bt           [][]float32   // per subquantizer: its centroids transposed, dsub x ksub
	bnorm        [][]float32   // per subquantizer: its centroids' squared norms, ksub (+Inf past k)
	ct           []*centroidsT // per subquantizer: its k centroids, for encoding rows in blocks
}

// newPQ returns the quantizer of a codebook of k entries.
func newPQ(dim, m int, book []float32, k int) *pq {
	q := &pq{dim: dim, m: m, dsub: dim / m, book: book, k: k, bt: make([][]float32, m), bnorm: make([][]float32, m), ct: make([]*centroidsT, m)}
	for s := range m {
		sub := make([]float32, 0, k*q.dsub)
		for c := range k {
			sub = append(sub, book[c*dim+s*q.dsub:c*dim+(s+1)*q.dsub]...)
		}
		q.ct[s] = newCentroidsT(L2, sub, q.dsub)
		q.bt[s] = make([]float32, q.dsub*ksub)
		q.bnorm[s] = make([]float32, ksub)
		for c := range ksub {
			if c >= k {
				q.bnorm[s][c] = float32(math.Inf(1))
				continue
			}
			x := book[c*dim+s*q.dsub : c*dim+(s+1)*q.dsub]
			for j, f := range x {
				q.bt[s][j*ksub+c] = f
			}
			q.bnorm[s][c] = vek32.Dot(x, x)
		}
	}
	return q
}

// pqScratch is one goroutine's buffers for dots and encodeRows.
type pqScratch struct {
	acc, tmp []float32
	res      []float32 // a block of residuals (encodeList)
	near     []int32   // a block's nearest centroids
	scores   []float32 // centroidsT.nearestRows's scratch
}

func newPQScratch() *pqScratch {
	return &pqScratch{acc: make([]float32, ksub), tmp: make([]float32, ksub)}
}

// dots fills w.acc with the inner products of x (dsub) with each centroid
// of the transposed codebook bt (dsub x ksub): ksub-wide vector
// operations, one pair per dimension.
func (w *pqScratch) dots(x, bt []float32) []float32 {
	vek32.MulNumber_Into(w.acc, bt[:ksub], x[0])
	for j := 1; j < len(x); j++ {
		vek32.MulNumber_Into(w.tmp, bt[j*ksub:(j+1)*ksub], x[j])
		vek32.Add_Inplace(w.acc, w.tmp)
	}
	return w.acc
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
	k, dsub := min(ksub, n), dim/m
	book := make([]float32, k*dim)
	parallelFor(m, par, func(_, lo, hi int) {
		sub := make([]float32, n*dsub)
		for s := lo; s < hi; s++ {
			for i := range n {
				copy(sub[i*dsub:], res[i*dim+s*dsub:i*dim+(s+1)*dsub])
			}
			cents := kmeans(L2, sub, dsub, k, iters, seed+uint64(s), 1)
			for c := range k {
				copy(book[c*dim+s*dsub:], cents[c*dsub:(c+1)*dsub])
			}
		}
	})
	return newPQ(dim, m, book, k)
}

// encodeRows appends to dst the codes of the residuals res (n x dim):
// for each subquantizer and row the centroid c that minimizes |r - c|^2,
// for a block of rows against all k centroids in a matrix product
// (centroidsT), subquantizer after subquantizer.
func (q *pq) encodeRows(w *pqScratch, dst []byte, res []float32) []byte {
	n := len(res) / q.dim
	base := len(dst)
	dst = append(dst, make([]byte, n*q.m)...)
	if cap(w.near) < n {
		w.near = make([]int32, n)
	}
	near := w.near[:n]
	for s := range q.m {
		w.scores = q.ct[s].nearestRows(res[s*q.dsub:], n, q.dim, near, w.scores)
		for i, c := range near {
			dst[base+i*q.m+s] = byte(c)
		}
	}
	return dst
}

// l2Table fills t (m x ksub) with the squared distances from each
// subvector of r to each centroid; entries past k are +Inf.
func (q *pq) l2Table(w *pqScratch, t []float32, r []float32) {
	for s := range q.m {
		x := r[s*q.dsub : (s+1)*q.dsub]
		row := t[s*ksub : (s+1)*ksub]
		acc := w.dots(x, q.bt[s])
		vek32.MulNumber_Into(row, acc, -2)
		vek32.Add_Inplace(row, q.bnorm[s])
		vek32.AddNumber_Inplace(row, vek32.Dot(x, x))
	}
}

// dotTable fills t (m x ksub) with the negated inner products of each
// subvector of v with each centroid; entries past k are +Inf.
func (q *pq) dotTable(w *pqScratch, t []float32, v []float32) {
	for s := range q.m {
		row := t[s*ksub : (s+1)*ksub]
		vek32.MulNumber_Into(row, w.dots(v[s*q.dsub:(s+1)*q.dsub], q.bt[s]), -1)
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
