package hybrid

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/fts"
	"github.com/lochdata/loch/vector"
)

// The fusion methods.
const (
	// MethodRRF is reciprocal rank fusion: sum of 1 / (rrf_k + rank).
	MethodRRF = "rrf"
	// MethodWeighted is w x vector + (1 - w) x text of min-max
	// normalised scores.
	MethodWeighted = "weighted"
)

// DefaultRRFK is RRF's rank constant, as LanceDB and Elasticsearch.
const DefaultRRFK = 60

// DefaultWeight is the vector side's weight of weighted fusion.
const DefaultWeight = 0.5

// Fusion says how the two rankings become one. Its zero value is RRF
// with rrf_k = 60.
type Fusion struct {
	// Method is MethodRRF ("" too) or MethodWeighted.
	Method string `json:"method"`
	// RRFK is RRF's rank constant; 0 means DefaultRRFK.
	RRFK float64 `json:"rrf_k,omitempty"`
	// Weight is the vector side's weight w in [0, 1] under weighted
	// fusion (the text side's is 1 - w), taken as given: Weighted sets it.
	Weight float64 `json:"weight,omitempty"`
}

// RRF is reciprocal rank fusion with rank constant k (0: DefaultRRFK).
func RRF(k float64) Fusion { return Fusion{Method: MethodRRF, RRFK: k} }

// Weighted is weighted fusion, w the vector side's weight.
func Weighted(w float64) Fusion { return Fusion{Method: MethodWeighted, Weight: w} }

// ParseFusion is the Fusion of a method's name ("rrf", "weighted"; ""
// is rrf), an RRF constant (0: 60) and a weight, checked.
func ParseFusion(method string, rrfK, weight float64) (Fusion, error) {
	f := Fusion{Method: method, RRFK: rrfK, Weight: weight}
	if method == "" {
		f.Method = MethodRRF
	}
	return f, f.check()
}

func (f Fusion) check() error {
	switch f.Method {
	case "", MethodRRF:
		if f.RRFK < 0 || math.IsNaN(f.RRFK) || math.IsInf(f.RRFK, 0) {
			return fmt.Errorf("hybrid search: rrf_k = %v, want a finite number >= 0: %w", f.RRFK, loch.ErrInvalidArgument)
		}
	case MethodWeighted:
		if !(f.Weight >= 0 && f.Weight <= 1) {
			return fmt.Errorf("hybrid search: weight = %v, want a number in [0, 1]: %w", f.Weight, loch.ErrInvalidArgument)
		}
	default:
		return fmt.Errorf("hybrid search: fusion %q, want rrf or weighted: %w", f.Method, loch.ErrInvalidArgument)
	}
	return nil
}

func (f Fusion) rrfK() float64 {
	if f.RRFK == 0 {
		return DefaultRRFK
	}
	return f.RRFK
}

// Hit is one row of a hybrid answer: its stable row id, its fused score
// (higher is better) and what each side said of it. A side that did not
// rank the row has rank 0.
type Hit struct {
	RowID uint64  `json:"row_id"`
	Score float64 `json:"score"`
	// VectorRank is the row's rank (from 1) among the vector side's hits,
	// Distance its distance to the query vector (when VectorRank > 0).
	VectorRank int     `json:"vector_rank"`
	Distance   float32 `json:"distance"`
	// TextRank is the row's rank (from 1) among the text side's hits,
	// TextScore its BM25 score (when TextRank > 0).
	TextRank  int     `json:"text_rank"`
	TextScore float64 `json:"text_score"`
}

// bestRank is the row's best rank in either list.
func (h Hit) bestRank() int {
	switch {
	case h.VectorRank == 0:
		return h.TextRank
	case h.TextRank == 0:
		return h.VectorRank
	}
	return min(h.VectorRank, h.TextRank)
}

// Fuse fuses a vector ranking (nearest first) and a text ranking (best
// first) by f and returns the k best rows (all when k <= 0), best first:
// by fused score, then best rank in either list, then row id.
func Fuse(vec []vector.Hit, text []fts.Hit, k int, f Fusion) ([]Hit, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	vs, ts := sideScores(vec, text, f)
	at := make(map[uint64]int, len(vec)+len(text))
	var out []Hit
	get := func(id uint64) *Hit {
		i, ok := at[id]
		if !ok {
			i = len(out)
			at[id] = i
			out = append(out, Hit{RowID: id})
		}
		return &out[i]
	}
	for i, h := range vec {
		o := get(h.RowID)
		o.VectorRank, o.Distance = i+1, h.Distance
		o.Score += vs[i]
	}
	for i, h := range text {
		o := get(h.RowID)
		o.TextRank, o.TextScore = i+1, h.Score
		o.Score += ts[i]
	}
	slices.SortFunc(out, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(a.bestRank(), b.bestRank()); c != 0 {
			return c
		}
		return cmp.Compare(a.RowID, b.RowID)
	})
	if k > 0 && len(out) > k {
		out = out[:k]
	}
	return out, nil
}

// sideScores are each list's contributions to the fused scores.
func sideScores(vec []vector.Hit, text []fts.Hit, f Fusion) (vs, ts []float64) {
	vs, ts = make([]float64, len(vec)), make([]float64, len(text))
	if f.Method == MethodWeighted {
		d := make([]float64, len(vec))
		for i, h := range vec {
			d[i] = -float64(h.Distance) // nearer is more
		}
		for i, s := range minMax(d) {
			vs[i] = f.Weight * s
		}
		s := make([]float64, len(text))
		for i, h := range text {
			s[i] = h.Score
		}
		for i, n := range minMax(s) {
			ts[i] = (1 - f.Weight) * n
		}
		return vs, ts
	}
	for i := range vs {
		vs[i] = 1 / (f.rrfK() + float64(i+1))
	}
	for i := range ts {
		ts[i] = 1 / (f.rrfK() + float64(i+1))
	}
	return vs, ts
}

// minMax scales xs to [0, 1], the largest 1; all equal are all 1.
func minMax(xs []float64) []float64 {
	if len(xs) == 0 {
		return xs
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	out := make([]float64, len(xs))
	for i, x := range xs {
		if hi > lo {
			out[i] = (x - lo) / (hi - lo)
		} else {
			out[i] = 1
		}
	}
	return out
}
