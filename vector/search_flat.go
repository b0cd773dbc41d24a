package vector

import (
	"cmp"
	"math"
	"slices"
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
	if len(qs) >= par && len(qs) > 1 {
		parallelFor(len(qs), par, func(_, lo, hi int) {
			s := ix.newFlatSearch()
			defer ix.flatScratch.Put(s)
			for j := lo; j < hi; j++ {
				s.query(&qs[j], []*topK{tops[0][j]}, nprobe, allow)
			}
		})
		return
	}
	s := ix.newFlatSearch()
	defer ix.flatScratch.Put(s)
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
	ix    *Index
	cs    []centroidRank
	dots  []float32
	cdots []float32 // the query's dot products with the centroids
}

// newFlatSearch takes a scratch from ix.flatScratch (the caller puts it
// back), or makes one: a query then allocates only its answer.
func (ix *Index) newFlatSearch() *flatSearch {
	if s, ok := ix.flatScratch.Get().(*flatSearch); ok {
		return s
	}
	return &flatSearch{ix: ix, dots: make([]float32, max(1, dotBlock/ix.c.dim)), cdots: make([]float32, ix.NList())}
}

// query ranks the centroids and scans the nprobe nearest lists, shared
// out among len(ts) goroutines, each adding to its own top k. With a
// filter, lists after the nprobe nearest are scanned, nearest first,
// until the tops hold k allowed rows between them or no list is left.
// The tops hold distances (not the keys scanList ranks by) on return.
func (s *flatSearch) query(q *query, ts []*topK, nprobe int, allow *RowSet) {
	ix := s.ix
	ranked := nprobe
	if allow != nil { // lists after the nprobe nearest may be scanned, in order
		ranked = ix.NList()
	}
	s.cs = ix.rankCentroids(q, s.cs, ranked, s.cdots)
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
				defer ix.flatScratch.Put(ws)
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
		dots := dotRows(s.dots, vecs[lo*dim:hi*dim], q.v, dim)
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

// rankCentroids puts the centroids and their distances to q into cs, the
// first nearest nearest first: all of them ordered by distance when
// first is the number of lists; else the first nearest to q (by
// distance, then list) in that order, the others after them unordered.
// With dots of a length of at least the number of lists, where matVec2
// runs, the dot products are one matrix-vector product into it (the same
// bits as one vek32.Dot a centroid: see dotRows).
func (ix *Index) rankCentroids(q *query, cs []centroidRank, first int, dots []float32) []centroidRank {
	dim, n := ix.c.dim, len(ix.cnorm)
	cs = cs[:0]
	if len(dots) >= n && n > 1 && haveGemm4x16 && dim%32 == 0 {
		dots = dotRows(dots, ix.cents[:n*dim], q.v, dim)
		for l, dot := range dots {
			cs = append(cs, centroidRank{l, dotDistance(ix.metric, q, dot, ix.cnorm[l])})
		}
	} else {
		for l := range ix.cnorm {
			cs = append(cs, centroidRank{l, distance(ix.metric, q, ix.cents[l*dim:(l+1)*dim], ix.cnorm[l])})
		}
	}
	if first >= len(cs) {
		slices.SortFunc(cs, func(a, b centroidRank) int { return cmp.Compare(a.d, b.d) })
		return cs
	}
	nearestFirst(cs, first)
	return cs
}

type centroidRank struct {
	l int
	d float32
}

// nearer orders centroids by distance, then list.
func (a centroidRank) nearer(b centroidRank) bool { return a.d < b.d || a.d == b.d && a.l < b.l }

// nearestFirst moves the n nearest of cs (0 < n < len(cs)) to its front,
// ordered: a quickselect (median-of-three pivots) for the n-th, then a
// sort of the n; cheaper than sorting all when n is a small share.
func nearestFirst(cs []centroidRank, n int) {
	lo, hi := 0, len(cs)-1 // the n-th nearest is in cs[lo:hi+1]
	for hi-lo > 8 {
		mid := lo + (hi-lo)/2
		if cs[mid].nearer(cs[lo]) {
			cs[mid], cs[lo] = cs[lo], cs[mid]
		}
		if cs[hi].nearer(cs[lo]) {
			cs[hi], cs[lo] = cs[lo], cs[hi]
		}
		if cs[hi].nearer(cs[mid]) {
			cs[hi], cs[mid] = cs[mid], cs[hi]
		}
		// cs[lo] <= cs[mid] <= cs[hi]: partition cs[lo+1:hi] around the median.
		pivot := cs[mid]
		cs[mid], cs[hi-1] = cs[hi-1], cs[mid]
		i := lo + 1
		for j := lo + 1; j < hi-1; j++ {
			if cs[j].nearer(pivot) {
				cs[i], cs[j] = cs[j], cs[i]
				i++
			}
		}
		cs[i], cs[hi-1] = cs[hi-1], cs[i] // the pivot at its place, i
		switch {
		case i == n-1 || i == n:
			lo, hi = i, i
		case i < n:
			lo = i + 1
		default:
			hi = i - 1
		}
	}
	slices.SortFunc(cs[lo:hi+1], compareNearer)
	slices.SortFunc(cs[:n], compareNearer)
}

func compareNearer(a, b centroidRank) int {
	switch {
	case a.nearer(b):
		return -1
	case b.nearer(a):
		return 1
	}
	return 0
}
