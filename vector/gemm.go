package vector

import "github.com/viterin/vek/vek32"

// gemmBlock is the number of rows of one matrix product in nearestRows.
const gemmBlock = 256

// panelCols is the width of a panel of centroids (gemm4x16's).
const panelCols = 16

// centroidsT are centroids laid out for nearestRows: a block of rows'
// scores against every centroid is one matrix product. Where the CPU has
// AVX2 and FMA the centroids are cut into panels of 16 (dim x 16,
// row-major, the last padded with zeros) for gemm4x16, which keeps a 4 x
// 16 block of the product in registers and starts it from the bias;
// elsewhere they are transposed (dim x k) for vek32.MatMul, which adds a
// row of the product at a time to memory (measured: bench/RESULTS.md).
type centroidsT struct {
	m      Metric // assignMetric's
	dim, k int
	kp     int       // k rounded up to panelCols (panels), else k
	ct     []float32 // the panels, or the transposed centroids
	bias   []float32 // kp: -|c|^2/2 for L2, 0 for cosine (and past k)
	panels bool
}

func newCentroidsT(m Metric, cents []float32, dim int) *centroidsT {
	k := len(cents) / dim
	c := &centroidsT{m: assignMetric(m), dim: dim, k: k, kp: k, panels: haveGemm4x16}
	if c.panels {
		c.kp = (k + panelCols - 1) / panelCols * panelCols
	}
	c.bias = make([]float32, c.kp)
	if c.m != Cosine {
		for i, n := range norms(cents, dim) {
			c.bias[i] = -n / 2
		}
	}
	if c.panels {
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

// scores sets out (n x kp) to the scores of the n rows of xs (row i at
// xs[i*ldx:i*ldx+dim]) against the centroids: <x, c> - |c|^2/2 for L2
// (|x - c|^2 is |x|^2 less twice it: the largest is the nearest), <x, c>
// for cosine; columns past k are not scores.
func (c *centroidsT) scores(xs []float32, n, ldx int, out []float32) {
	dim := c.dim
	if !c.panels {
		rows := xs
		if ldx != dim {
			rows = make([]float32, n*dim)
			for i := range n {
				copy(rows[i*dim:(i+1)*dim], xs[i*ldx:])
			}
		}
		vek32.MatMul_Into(out[:n*c.k], rows[:n*dim], c.ct, dim)
		for i := range n {
			vek32.Add_Inplace(out[i*c.k:(i+1)*c.k], c.bias)
		}
		return
	}
	n4 := n / 4 * 4
	var pad []float32
	if n4 < n {
		pad = make([]float32, 4*dim)
		for r := n4; r < n; r++ {
			copy(pad[(r-n4)*dim:(r-n4+1)*dim], xs[r*ldx:])
		}
	}
	tail := make([]float32, 4*c.kp)
	for p := 0; p < c.kp/panelCols; p++ {
		panel, bias := &c.ct[p*dim*panelCols], &c.bias[p*panelCols]
		for r := 0; r < n4; r += 4 {
			gemm4x16(&xs[r*ldx], panel, bias, &out[r*c.kp+p*panelCols], dim, ldx, c.kp)
		}
		if pad != nil {
			gemm4x16(&pad[0], panel, bias, &tail[p*panelCols], dim, dim, c.kp)
		}
	}
	if pad != nil {
		copy(out[n4*c.kp:n*c.kp], tail)
	}
}

// nearestAll sets out[i] to the centroid nearest to row i of xs (n x dim):
// the largest inner product for cosine, else the smallest L2 distance.
// scratch is reused when it holds gemmBlock x kp floats; the scratch used
// is returned.
func (c *centroidsT) nearestAll(xs []float32, out []int32, scratch []float32) []float32 {
	return c.nearestRows(xs, len(xs)/c.dim, c.dim, out, scratch)
}

// nearestRows is nearestAll of the n rows of xs with stride ldx (row i at
// xs[i*ldx:i*ldx+dim]).
func (c *centroidsT) nearestRows(xs []float32, n, ldx int, out []int32, scratch []float32) []float32 {
	if len(scratch) < gemmBlock*c.kp {
		scratch = make([]float32, gemmBlock*c.kp)
	}
	for lo := 0; lo < n; lo += gemmBlock {
		hi := min(lo+gemmBlock, n)
		sc := scratch[:(hi-lo)*c.kp]
		c.scores(xs[lo*ldx:], hi-lo, ldx, sc)
		for i := lo; i < hi; i++ {
			out[i] = int32(vek32.ArgMax(sc[(i-lo)*c.kp : (i-lo)*c.kp+c.k]))
		}
	}
	return scratch
}

// dotRows sets dst[r] to the dot product of row r of x (rows of dim
// floats) with q for each row of x (len(dst) >= rows) and returns
// dst[:rows]: vek32.MatMul_Into(dst, x, q, dim), bit for bit, but two
// rows at a time in matVec2 where the CPU and dim allow (half the loads
// of q, shared horizontal sums: a list scan's kernel).
func dotRows(dst, x, q []float32, dim int) []float32 {
	rows := len(x) / dim
	if !haveGemm4x16 || dim%32 != 0 || rows < 2 || len(q) < dim {
		return vek32.MatMul_Into(dst, x, q, dim)
	}
	dst = dst[:rows]
	matVec2(&x[0], &q[0], &dst[0], dim, rows/2)
	if rows%2 == 1 {
		vek32.MatMul_Into(dst[rows-1:], x[(rows-1)*dim:rows*dim], q[:dim], dim)
	}
	return dst
}
