package fts

import (
	"cmp"
	"slices"
	"sync"

	"github.com/lochdata/loch/internal/ftsindex"
)

// The common query, a plain OR of words, is scored term at a time into
// an accumulator indexed by row id (dense when the ids are), decoding
// each posting list once without building it: no merge of hit lists.

// flatTerms returns the terms of a query that is an OR of single terms.
func (n *node) flatTerms() ([]string, bool) {
	if n.leaf() || len(n.must) > 0 || len(n.not) > 0 {
		return nil, false
	}
	ts := make([]string, 0, len(n.should))
	for _, c := range n.should {
		if len(c.terms) != 1 {
			return nil, false
		}
		ts = append(ts, c.terms[0].Term)
	}
	return ts, true
}

// maxDense bounds the row ids a dense accumulator covers.
const maxDense = 1 << 24

// accum is a dense accumulator: a score per row id (0: untouched) and
// the ids touched, reused between queries.
type accum struct {
	acc     []float64
	touched []uint64
}

var accPool = sync.Pool{New: func() any { return &accum{} }}

// lookup finds a term in every segment, without reading its postings.
func (e *eval) lookup(t string) (df int, infos []ftsindex.TermInfo, err error) {
	if td, ok := e.terms[t]; ok {
		return td.df, td.infos, nil
	}
	infos = make([]ftsindex.TermInfo, len(e.ix.segs))
	for i, s := range e.ix.segs {
		ti, ok, err := s.lookup(e.ctx, t)
		if err != nil {
			return 0, nil, err
		}
		if ok {
			infos[i] = ti
			df += ti.DF
		}
	}
	e.terms[t] = &termData{df: df, infos: infos} // postings not read
	return df, infos, nil
}

// orTerms scores the rows holding any of the terms, summing their BM25
// scores: the k best, best first, or with k = 0 all of them in no order.
func (e *eval) orTerms(ts []string, k int) ([]Hit, error) {
	a, err := e.accumulator(ts)
	if err != nil {
		return nil, err
	}
	var sparse map[uint64]float64
	if a == nil {
		sparse = map[uint64]float64{}
	} else {
		defer accPool.Put(a)
	}
	for _, t := range ts {
		if err := e.scoreTerm(t, a, sparse); err != nil {
			return nil, err
		}
	}
	if a != nil {
		return a.hits(k), nil
	}
	out := make([]Hit, 0, len(sparse))
	for id, sc := range sparse {
		out = append(out, Hit{RowID: id, Score: sc})
	}
	if k > 0 {
		return topK(out, k), nil
	}
	return out, nil
}

// accumulator returns a pooled dense accumulator for the terms' rows, or
// nil when the row ids span too wide a range (a map then).
func (e *eval) accumulator(ts []string) (*accum, error) {
	if e.ix.maxID >= maxDense {
		return nil, nil
	}
	total := 0
	for _, t := range ts {
		df, _, err := e.lookup(t)
		if err != nil {
			return nil, err
		}
		total += df
	}
	a := accPool.Get().(*accum)
	if uint64(len(a.acc)) <= e.ix.maxID {
		a.acc = make([]float64, e.ix.maxID+1)
	}
	a.touched = slices.Grow(a.touched[:0], min(total, len(a.acc)))
	return a, nil
}

// scoreTerm adds the BM25 score of term t to the valid rows holding it,
// in a (or sparse when a is nil).
func (e *eval) scoreTerm(t string, a *accum, sparse map[uint64]float64) error {
	df, infos, err := e.lookup(t)
	if err != nil || df == 0 {
		return err
	}
	w := IDF(e.n, float64(df)) * (K1 + 1)
	var norms [256]float64
	for nb := range norms {
		norms[nb] = K1 * (1 - B + B*float64(ftsindex.DecodeNorm(uint8(nb)))/e.avgdl)
	}
	for i, s := range e.ix.segs {
		if infos[i].DF == 0 {
			continue
		}
		raw, err := s.r.readRange(e.ctx, infos[i].PostOff, int(infos[i].PostLen))
		if err != nil {
			return err
		}
		it, err := ftsindex.NewPostingIter(infos[i], raw)
		if err != nil {
			return s.corrupt(err)
		}
		check := !s.all && !e.ix.allValid
		for it.Next() {
			id := it.ID
			if check && !e.ix.valid.Contains(id) {
				continue
			}
			tf := float64(it.TF)
			sc := w * tf / (tf + norms[it.Norm])
			if a == nil {
				sparse[id] += sc
				continue
			}
			if a.acc[id] == 0 {
				a.touched = append(a.touched, id)
			}
			a.acc[id] += sc
		}
		if it.Err() != nil {
			return s.corrupt(it.Err())
		}
	}
	return nil
}

// hits returns the k best rows touched (all, in no order, for k = 0)
// and clears the accumulator for its next use.
func (a *accum) hits(k int) []Hit {
	var out []Hit
	if k > 0 {
		t := newTop(k)
		for _, id := range a.touched {
			t.add(Hit{RowID: id, Score: a.acc[id]})
			a.acc[id] = 0
		}
		return t.h
	}
	out = make([]Hit, len(a.touched))
	for i, id := range a.touched {
		out[i] = Hit{RowID: id, Score: a.acc[id]}
		a.acc[id] = 0
	}
	return out
}

// top keeps the k best hits seen, best first.
type top struct {
	k int
	h []Hit
}

func newTop(k int) *top { return &top{k: k, h: make([]Hit, 0, k+1)} }

func (t *top) add(h Hit) {
	if len(t.h) == t.k && (h.Score < t.h[t.k-1].Score || better(h, t.h[t.k-1]) >= 0) {
		return
	}
	i, _ := slices.BinarySearchFunc(t.h, h, better)
	t.h = slices.Insert(t.h, i, h)
	if len(t.h) > t.k {
		t.h = t.h[:t.k]
	}
}

func byRowID(a, b Hit) int { return cmp.Compare(a.RowID, b.RowID) }
