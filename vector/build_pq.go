package vector

import (
	"fmt"

	"github.com/viterin/vek/vek32"
	"strings"

	"github.com/lochdata/loch"
)

// Index kinds (BuildOptions.Kind, Info.Type).
const (
	// KindFlat keeps every vector in its list; an opened index holds them
	// in memory.
	KindFlat = "ivf-flat"
	// KindPQ keeps product quantization codes beside the vectors; an
	// opened index holds only its centroids and codebook in memory and
	// reads lists by range (docs/format.md §2.8.1).
	KindPQ = "ivf-pq"
)

// ParseKind returns the kind of that name: "ivf-flat" (also "" and
// "ivf_flat") or "ivf-pq" (also "ivf_pq").
func ParseKind(s string) (string, error) {
	switch strings.ReplaceAll(strings.ToLower(s), "_", "-") {
	case "", KindFlat:
		return KindFlat, nil
	case KindPQ:
		return KindPQ, nil
	}
	return "", fmt.Errorf("index kind %q: want ivf-flat or ivf-pq: %w", s, loch.ErrInvalidArgument)
}

// pqTrainRows bounds the residuals each subquantizer trains on (64 per
// centroid).
const pqTrainRows = 64 * ksub

// trainResidualPQ trains the product quantizer on the residuals of the
// sample (normalized for cosine) to their nearest centroids.
func trainResidualPQ(m Metric, sample []float32, dim, subq int, q *quantizer, iters int, seed uint64, par int) (*pq, error) {
	if subq == 0 {
		subq = defaultM(dim)
	}
	if subq < 0 || subq > dim || dim%subq != 0 || subq > 1<<16 {
		return nil, fmt.Errorf("m = %d subquantizers: want a divisor of the dimension %d: %w", subq, dim, loch.ErrInvalidArgument)
	}
	n := min(len(sample)/dim, pqTrainRows)
	res := make([]float32, n*dim)
	copy(res, sample[:n*dim])
	for _, a := range q.assignAll(res, par) {
		r := res[int(a.row)*dim : (int(a.row)+1)*dim]
		c := q.cents[int(a.l)*dim : (int(a.l)+1)*dim]
		for j := range r {
			r[j] -= c[j]
		}
	}
	return trainPQ(res, dim, subq, iters, seed, par), nil
}

// encodeList appends to dst the codes of the residuals of vecs to the
// centroid c, gemmBlock rows at a time.
func (p *pq) encodeList(w *pqScratch, c, vecs []float32, dst []byte) []byte {
	dim := p.dim
	if len(w.res) < gemmBlock*dim {
		w.res = make([]float32, gemmBlock*dim)
	}
	for lo := 0; lo < len(vecs); lo += gemmBlock * dim {
		hi := min(lo+gemmBlock*dim, len(vecs))
		res := w.res[:hi-lo]
		for i := 0; i < len(res); i += dim {
			vek32.Sub_Into(res[i:i+dim], vecs[lo+i:lo+i+dim], c)
		}
		dst = p.encodeRows(w, dst, res)
	}
	return dst
}
