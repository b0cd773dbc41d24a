package fts

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/ftsindex"
)

// BM25 parameters (docs/format.md §2.9).
const (
	K1 = 1.2
	B  = 0.75
)

// IDF is BM25's inverse document frequency of a term that n of N
// documents hold: ln(1 + (N - n + 0.5) / (n + 0.5)), as Lucene and
// tantivy.
func IDF(N, n float64) float64 { return math.Log(1 + (N-n+0.5)/(n+0.5)) }

// Hit is one row a search found: its stable row id and its BM25 score.
type Hit struct {
	RowID uint64  `json:"row_id"`
	Score float64 `json:"score"`
}

// eval evaluates one query over an opened index.
type eval struct {
	ctx   context.Context
	ix    *Index
	n     float64 // N
	avgdl float64
	terms map[string]*termData
}

// termData is what one query read of a term, per segment.
type termData struct {
	df    int
	infos []ftsindex.TermInfo // per segment; DF 0 when absent
	posts [][]ftsindex.Posting
	pos   [][]uint32 // read for phrases only
}

func (ix *Index) newEval(ctx context.Context) *eval {
	e := &eval{ctx: ctx, ix: ix, n: float64(ix.docs), terms: map[string]*termData{}}
	if ix.docs > 0 {
		e.avgdl = float64(ix.tokens) / float64(ix.docs)
	}
	return e
}

// term looks a term up in every segment and reads its postings.
func (e *eval) term(t string) (*termData, error) {
	if td, ok := e.terms[t]; ok && td.posts != nil {
		return td, nil
	}
	td := &termData{infos: make([]ftsindex.TermInfo, len(e.ix.segs)), posts: make([][]ftsindex.Posting, len(e.ix.segs))}
	for i, s := range e.ix.segs {
		ti, ok, err := s.lookup(e.ctx, t)
		if err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		td.infos[i] = ti
		td.df += ti.DF
		if td.posts[i], err = s.postings(e.ctx, ti); err != nil {
			return nil, err
		}
	}
	e.terms[t] = td
	return td, nil
}

// positions reads a term's positions in every segment that holds it.
func (e *eval) positions(td *termData) error {
	if td.pos != nil {
		return nil
	}
	td.pos = make([][]uint32, len(e.ix.segs))
	for i, s := range e.ix.segs {
		if td.infos[i].DF == 0 {
			continue
		}
		p, err := s.positions(e.ctx, td.infos[i], td.posts[i])
		if err != nil {
			return err
		}
		td.pos[i] = p
	}
	return nil
}

// bm25 is the score of a term of the given idf that occurs tf times in a
// row whose norm byte is norm.
func (e *eval) bm25(idf float64, tf float64, norm uint8) float64 {
	dl := float64(ftsindex.DecodeNorm(norm))
	return idf * tf * (K1 + 1) / (tf + K1*(1-B+B*dl/e.avgdl))
}

func (e *eval) valid(seg int, id uint64) bool {
	s := e.ix.segs[seg]
	return s.all || e.ix.valid.Contains(id)
}

// node evaluates a node into its matching rows with scores, by row id.
func (e *eval) node(n *node) ([]Hit, error) {
	switch {
	case len(n.terms) == 1:
		return e.single(n.terms[0].Term)
	case len(n.terms) > 1:
		return e.phrase(n.terms)
	}
	// The rows of every must child (the first child's, then intersected),
	// plus (scores added) or else with (united) the should children's,
	// less the not children's.
	out, err := e.fold(nil, n.must, func(out, hs []Hit, i int) []Hit {
		if i == 0 {
			return hs
		}
		return intersect(out, hs)
	})
	if err != nil {
		return nil, err
	}
	should := union
	if len(n.must) > 0 {
		should = addScores
	}
	if out, err = e.fold(out, n.should, func(out, hs []Hit, _ int) []Hit { return should(out, hs) }); err != nil {
		return nil, err
	}
	return e.fold(out, n.not, func(out, hs []Hit, _ int) []Hit { return subtract(out, hs) })
}

// fold evaluates the nodes cs in order, combining the rows of child i
// into out with combine.
func (e *eval) fold(out []Hit, cs []*node, combine func(out, hs []Hit, i int) []Hit) ([]Hit, error) {
	for i, c := range cs {
		hs, err := e.node(c)
		if err != nil {
			return nil, err
		}
		out = combine(out, hs, i)
	}
	return out, nil
}

// single scores the rows that hold a term.
func (e *eval) single(t string) ([]Hit, error) {
	td, err := e.term(t)
	if err != nil || td.df == 0 {
		return nil, err
	}
	idf := IDF(e.n, float64(td.df))
	var out []Hit
	segs := 0
	for i, ps := range td.posts {
		if len(ps) > 0 {
			segs++
		}
		for _, p := range ps {
			if e.valid(i, p.ID) {
				out = append(out, Hit{RowID: p.ID, Score: e.bm25(idf, float64(p.TF), p.Norm)})
			}
		}
	}
	if segs > 1 {
		slices.SortFunc(out, func(a, b Hit) int { return cmp.Compare(a.RowID, b.RowID) })
	}
	return out, nil
}

// phrase scores the rows that hold the terms at their relative
// positions: the sum over its terms of BM25 with the phrase's count as tf.
func (e *eval) phrase(ts []ftsindex.Token) ([]Hit, error) {
	tds := make([]*termData, len(ts))
	idf := 0.0
	for i, t := range ts {
		td, err := e.term(t.Term)
		if err != nil || td.df == 0 {
			return nil, err
		}
		if err := e.positions(td); err != nil {
			return nil, err
		}
		tds[i] = td
		idf += IDF(e.n, float64(td.df))
	}
	var out []Hit
	for s := range e.ix.segs {
		out = append(out, e.phraseIn(s, ts, tds, idf)...)
	}
	slices.SortFunc(out, func(a, b Hit) int { return cmp.Compare(a.RowID, b.RowID) })
	return out, nil
}

// cursor walks a term's postings of a segment: at is where the
// positions of posting i start.
type cursor struct{ i, at int }

// phraseIn finds a phrase's rows in segment s.
func (e *eval) phraseIn(s int, ts []ftsindex.Token, tds []*termData, idf float64) []Hit {
	// cursors walk each term's postings, and the start of each posting's
	// positions.
	cs := make([]cursor, len(ts))
	var out []Hit
	first := tds[0].posts[s]
	for _, td := range tds {
		if len(td.posts[s]) == 0 {
			return nil
		}
	}
	for _, p0 := range first {
		all := true
		for k := 1; k < len(ts) && all; k++ {
			ps := tds[k].posts[s]
			c := &cs[k]
			for c.i < len(ps) && ps[c.i].ID < p0.ID {
				c.at += int(ps[c.i].TF)
				c.i++
			}
			all = c.i < len(ps) && ps[c.i].ID == p0.ID
		}
		if all && e.valid(s, p0.ID) {
			if pf := e.phraseCount(s, ts, tds, cs, p0); pf > 0 {
				out = append(out, Hit{RowID: p0.ID, Score: e.bm25(idf, float64(pf), p0.Norm)})
			}
		}
		cs[0].at += int(p0.TF)
	}
	return out
}

// phraseCount counts the places of a row where the phrase occurs.
func (e *eval) phraseCount(s int, ts []ftsindex.Token, tds []*termData, cs []cursor, p0 ftsindex.Posting) int {
	base := tds[0].pos[s][cs[0].at : cs[0].at+int(p0.TF)]
	n := 0
	for _, start := range base {
		ok := true
		for k := 1; k < len(ts) && ok; k++ {
			want := int64(start) + int64(ts[k].Pos) - int64(ts[0].Pos)
			p := tds[k].posts[s][cs[k].i]
			pos := tds[k].pos[s][cs[k].at : cs[k].at+int(p.TF)]
			_, ok = slices.BinarySearch(pos, uint32(max(want, 0)))
			ok = ok && want >= 0
		}
		if ok {
			n++
		}
	}
	return n
}

// intersect keeps the rows in both, summing scores.
func intersect(a, b []Hit) []Hit {
	out := a[:0:0]
	eachMatch(a, b, func(i, j int) { out = append(out, Hit{RowID: a[i].RowID, Score: a[i].Score + b[j].Score}) })
	return out
}

// addScores adds b's scores to the rows of a that b holds.
func addScores(a, b []Hit) []Hit {
	eachMatch(a, b, func(i, j int) { a[i].Score += b[j].Score })
	return a
}

// eachMatch calls f(i, j) for each row a[i] that b holds, at b[j] (both
// in row id order).
func eachMatch(a, b []Hit, f func(i, j int)) {
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i].RowID < b[j].RowID:
			i++
		case a[i].RowID > b[j].RowID:
			j++
		default:
			f(i, j)
			i++
			j++
		}
	}
}

// union keeps the rows of either, summing scores.
func union(a, b []Hit) []Hit {
	if len(a) == 0 {
		return b
	}
	out := make([]Hit, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i].RowID < b[j].RowID:
			out = append(out, a[i])
			i++
		case a[i].RowID > b[j].RowID:
			out = append(out, b[j])
			j++
		default:
			out = append(out, Hit{RowID: a[i].RowID, Score: a[i].Score + b[j].Score})
			i++
			j++
		}
	}
	return append(append(out, a[i:]...), b[j:]...)
}

// subtract drops the rows b holds.
func subtract(a, b []Hit) []Hit {
	out := a[:0]
	j := 0
	for _, h := range a {
		for j < len(b) && b[j].RowID < h.RowID {
			j++
		}
		if j == len(b) || b[j].RowID != h.RowID {
			out = append(out, h)
		}
	}
	return out
}

// Match returns every row of the opened version that the query matches,
// with its score, by row id.
func (ix *Index) Match(ctx context.Context, query string, opts Options) ([]Hit, error) {
	return ix.match(ctx, query, opts, true, 0)
}

// match is Match, its hits by row id when sorted says so; with k > 0,
// only the k best (best first) of a plain OR of words.
func (ix *Index) match(ctx context.Context, query string, opts Options, sorted bool, k int) ([]Hit, error) {
	n, err := parse(query)
	if err != nil {
		return nil, err
	}
	e := ix.newEval(ctx)
	var hs []Hit
	if ts, ok := n.flatTerms(); ok {
		if opts.Allow != nil {
			k = 0 // the filter comes first
		}
		if hs, err = e.orTerms(ts, k); err == nil && sorted {
			slices.SortFunc(hs, byRowID)
		}
	} else {
		hs, err = e.node(n)
	}
	if err != nil {
		return nil, fmt.Errorf("full-text search of %s column %q: %w", ix.c.sc.URL(), ix.c.col.Name, err)
	}
	if opts.Allow != nil {
		out := hs[:0]
		for _, h := range hs {
			if opts.Allow.Contains(h.RowID) {
				out = append(out, h)
			}
		}
		hs = out
	}
	return hs, nil
}

// Search returns the k best rows of the opened version for the query,
// best first (ties by row id).
func (ix *Index) Search(ctx context.Context, query string, k int, opts Options) ([]Hit, error) {
	if k < 1 {
		return nil, fmt.Errorf("full-text search: k = %d, want at least 1: %w", k, loch.ErrInvalidArgument)
	}
	hs, err := ix.match(ctx, query, opts, false, k)
	if err != nil {
		return nil, err
	}
	return topK(hs, k), nil
}

func better(a, b Hit) int {
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c
	}
	return cmp.Compare(a.RowID, b.RowID)
}

// topK returns the k best hits, best first.
func topK(hs []Hit, k int) []Hit {
	if len(hs) <= 4*k {
		slices.SortFunc(hs, better)
		return hs[:min(k, len(hs))]
	}
	t := newTop(k)
	for _, h := range hs {
		t.add(h)
	}
	return t.h
}
