package vector

import "github.com/viterin/vek/vek32"

// gemmBlock is the number of rows of one matrix product in nearestAll.
const gemmBlock = 256

// panelCols is the width of a panel of centroids (gemm4x16's).
const panelCols = 16

// centroidsT are centroids laid out for nearestAll: a block of rows'
// inner products with every centroid is one matrix product. Where the CPU
// has AVX2 and FMA the centroids are cut into panels of 16 (dim x 16,
// row-major, the last padded with zeros) for gemm4x16, which keeps a 4 x
// 16 block of the product in registers; elsewhere they are transposed
// (dim x k) for vek32.MatMul, which adds a row of the product at a time
// to memory (measured: bench/RESULTS.md).
type centroidsT struct {
	m      Metric // assignMetric's
	dim, k int
	kp     int       // k rounded up to panelCols (panels), else k
	ct     []float32 // the panels, or the transposed centroids
	cnorm  []float32
	panels bool
}

func newCentroidsT(m Metric, cents []float32, dim int) *centroidsT {
	k := len(cents) / dim
	c := &centroidsT{m: assignMetric(m), dim: dim, k: k, kp: k, cnorm: norms(cents, dim), panels: haveGemm4x16}
	if c.panels {
		c.kp = (k + panelCols - 1) / panelCols * panelCols
		c.ct = make([]float32, c.kp*dim)
		for i := range k {
			p, col := i/panelCols, i%panelCols
			for j := range dim {
				c.ct[p*dim*panelCols+j*panelCols+col] = cents[i*dim+j]
			}
		}
		return c
	}
	c.ct = make([]float32, dim*k)
	for i := range k {
		for j := range dim {
			c.ct[j*k+i] = cents[i*dim+j]
		}
	}
	return c
}

// dots sets out (rows x kp) to the inner products of the rows of xs with
// the centroids (columns past k: zero).
func (c *centroidsT) dots(xs, out []float32) {
	if !c.panels {
		vek32.MatMul_Into(out, xs, c.ct, c.dim)
		return
	}
	dim, n := c.dim, len(xs)/c.dim
	n4 := n / 4 * 4
	var pad []float32
	if n4 < n {
		pad = make([]float32, 4*dim)
		copy(pad, xs[n4*dim:])
	}
	tail := make([]float32, 4*c.kp)
	for p := 0; p < c.kp/panelCols; p++ {
		panel := &c.ct[p*dim*panelCols]
		for r := 0; r < n4; r += 4 {
			gemm4x16(&xs[r*dim], panel, &out[r*c.kp+p*panelCols], dim, dim, c.kp)
		}
		if pad != nil {
			gemm4x16(&pad[0], panel, &tail[p*panelCols], dim, dim, c.kp)
		}
	}
	if pad != nil {
		copy(out[n4*c.kp:n*c.kp], tail)
	}
}

// nearestAll sets out[i] to the centroid nearest to row i of xs (n x dim):
// the largest inner product for cosine, else the smallest |c|^2 - 2<x, c>.
// scratch is reused when it holds gemmBlock x kp floats.
func (c *centroidsT) nearestAll(xs []float32, out []int32, scratch []float32) []float32 {
	if len(scratch) < gemmBlock*c.kp {
		scratch = make([]float32, gemmBlock*c.kp)
	}
	n := len(xs) / c.dim
	for lo := 0; lo < n; lo += gemmBlock {
		hi := min(lo+gemmBlock, n)
		dots := scratch[:(hi-lo)*c.kp]
		c.dots(xs[lo*c.dim:hi*c.dim], dots)
		for i := lo; i < hi; i++ {
			row := dots[(i-lo)*c.kp : (i-lo)*c.kp+c.k]
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
