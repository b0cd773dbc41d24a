package vector

import (
	"cmp"
	"math"
	"slices"

	"github.com/viterin/vek/vek32"
)

// shareOutAbove is the number of floats a query's lists must hold (about
// a millisecond of dot products) before its lists are shared out among
// goroutines: below it, starting them and waiting for the slowest (on a
// machine whose cores are busy) costs more than it saves.
const shareOutAbove = 4 << 20

// dotBlock bounds the rows of one matrix-vector product (vek32's stays
// on one goroutine below 100,000 multiplications).
const dotBlock = 90000

// searchFlat answers the queries from an ivf-flat index's lists into
// tops[w][j]: a batch shares its queries out among the goroutines; a
// query whose lists are large shares its lists out; others run on the
// caller's goroutine.
func (ix *Index) searchFlat(qs []query, tops [][]*topK, nprobe int, allow *RowSet) {
	par := len(tops)
	if len(qs) >= par {
		parallelFor(len(qs), par, func(_, lo, hi int) {
			s := ix.newFlatSearch()
			for j := lo; j < hi; j++ {
				s.query(&qs[j], []*topK{tops[0][j]}, nprobe, allow)
			}
		})
		return
	}
	s := ix.newFlatSearch()
	for j := range qs {
		ts := []*topK{tops[0][j]}
		if rows := float64(ix.desc.Rows) * float64(nprobe) / float64(max(1, ix.NList())); rows*float64(ix.c.dim) > shareOutAbove {
			ts = make([]*topK, par)
			for w := range ts {
				ts[w] = tops[w][j]
			}
		}
		s.query(&qs[j], ts, nprobe, allow)
	}
}

// flatSearch is the scratch of one goroutine's searches: the ranked
// centroids and the dot products of a block of rows.
type flatSearch struct {
	ix   *Index
	cs   []centroidRank
	dots []float32
}

func (ix *Index) newFlatSearch() *flatSearch {
	return &flatSearch{ix: ix, dots: make([]float32, max(1, dotBlock/ix.c.dim))}
}

// query ranks the centroids and scans the nprobe nearest lists, shared
// out among len(ts) goroutines, each adding to its own top k. With a
// filter, lists after the nprobe nearest are scanned, nearest first,
// until the tops hold k allowed rows between them or no list is left.
// The tops hold distances (not the keys scanList ranks by) on return.
func (s *flatSearch) query(q *query, ts []*topK, nprobe int, allow *RowSet) {
	ix := s.ix
	s.cs = ix.rankCentroids(q, s.cs)
	cs := s.cs
	if len(ts) == 1 {
		for _, cn := range cs[:nprobe] {
			s.scanList(q, ts[0], cn.l, allow)
		}
	} else {
		parallelFor(nprobe, len(ts), func(w, lo, hi int) {
			ws := s
			if w > 0 {
				ws = ix.newFlatSearch()
			}
			for p := lo; p < hi; p++ {
				ws.scanList(q, ts[w], cs[p].l, allow)
			}
		})
	}
	if allow != nil {
		held := 0
		for _, t := range ts {
			held += len(t.h)
		}
		for p := nprobe; p < len(cs) && held < ts[0].k; p++ {
			before := len(ts[0].h)
			s.scanList(q, ts[0], cs[p].l, allow)
			held += len(ts[0].h) - before
		}
	}
	for _, t := range ts {
		for i := range t.h {
			t.h[i].Distance = fromKey(ix.metric, q, t.h[i].Distance)
		}
	}
}

// scanList adds the allowed rows of list l to t, ranked by their key (see
// fromKey): their dot products with the query a block of rows at a time,
// one matrix-vector product each.
func (s *flatSearch) scanList(q *query, t *topK, l int, allow *RowSet) {
	ix := s.ix
	dim := ix.c.dim
	ids, vecs, xnorm := ix.ls.ids[l], ix.ls.vecs[l], ix.xnorm[l]
	blk := len(s.dots)
	for lo := 0; lo < len(ids); lo += blk {
		hi := min(lo+blk, len(ids))
		dots := vek32.MatMul_Into(s.dots, vecs[lo*dim:hi*dim], q.v, dim)
		for i, dot := range dots {
			id := ids[lo+i]
			var key float32
			switch ix.metric {
			case L2:
				key = xnorm[lo+i] - 2*dot
			default: // cosine: unit or zero vectors, 1 - dot; dot: -dot
				key = -dot
			}
			if len(t.h) == t.k && key > t.h[0].Distance {
				continue
			}
			if allow != nil && !allow.Contains(id) {
				continue
			}
			t.add(Hit{RowID: id, Distance: key})
		}
	}
}

// fromKey turns the key scanList ranks a list's row by into its distance
// (non-decreasing, so that the order is kept): for l2 |x|^2 - 2<x, q>,
// for cosine and dot -<x, q>.
func fromKey(m Metric, q *query, key float32) float32 {
	switch m {
	case L2:
		return float32(math.Sqrt(float64(max(key+q.norm, 0))))
	case Cosine:
		if q.norm == 0 {
			return 1
		}
		return 1 + key
	}
	return key
}

// rankCentroids orders the centroids by distance to q into cs.
func (ix *Index) rankCentroids(q *query, cs []centroidRank) []centroidRank {
	dim := ix.c.dim
	cs = cs[:0]
	for l := range ix.cnorm {
		cs = append(cs, centroidRank{l, distance(ix.metric, q, ix.cents[l*dim:(l+1)*dim], ix.cnorm[l])})
	}
	slices.SortFunc(cs, func(a, b centroidRank) int { return cmp.Compare(a.d, b.d) })
	return cs
}

type centroidRank struct {
	l int
	d float32
}
