package vector

import "github.com/viterin/vek/vek32"

// gemmBlock is the number of rows of one matrix product in nearestAll.
const gemmBlock = 256

// centroidsT are centroids transposed (dim x k, row-major) for
// nearestAll: a block of rows' inner products with every centroid is one
// matrix product (vek32.MatMul: AVX2, and parallel inside when large),
// several times faster than a dot product per pair.
type centroidsT struct {
	m      Metric // assignMetric's
	dim, k int
	ct     []float32
	cnorm  []float32
}

func newCentroidsT(m Metric, cents []float32, dim int) *centroidsT {
	k := len(cents) / dim
	c := &centroidsT{m: assignMetric(m), dim: dim, k: k, ct: make([]float32, dim*k), cnorm: norms(cents, dim)}
	for i := range k {
		for j := range dim {
			c.ct[j*k+i] = cents[i*dim+j]
		}
	}
	return c
}

// nearestAll sets out[i] to the centroid nearest to row i of xs (n x dim):
// the largest inner product for cosine, else the smallest |c|^2 - 2<x, c>.
// scratch is reused when it holds gemmBlock x k floats.
func (c *centroidsT) nearestAll(xs []float32, out []int32, scratch []float32) []float32 {
	if len(scratch) < gemmBlock*c.k {
		scratch = make([]float32, gemmBlock*c.k)
	}
	n := len(xs) / c.dim
	for lo := 0; lo < n; lo += gemmBlock {
		hi := min(lo+gemmBlock, n)
		dots := vek32.MatMul_Into(scratch, xs[lo*c.dim:hi*c.dim], c.ct, c.dim)
		for i := lo; i < hi; i++ {
			row := dots[(i-lo)*c.k : (i-lo+1)*c.k]
			if c.m == Cosine {
				out[i] = int32(vek32.ArgMax(row))
				continue
			}
			vek32.MulNumber_Inplace(row, -2)
			vek32.Add_Inplace(row, c.cnorm)
			out[i] = int32(vek32.ArgMin(row))
		}
	}
	return scratch
}
