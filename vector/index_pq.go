package vector

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/viterin/vek/vek32"
	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/internal/vindex"
	"github.com/lochdata/loch/storage"
)

// pqState is what an opened ivf-pq index holds besides its centroids: the
// codebook, where to read lists from, and which list entries are valid.
type pqState struct {
	pq    *pq
	rd    *rangeReader
	valid *RowSet // nil: every list entry is valid (the index's own version)
}

// rangeReader reads ranges of immutable objects: from a chunk cache that
// can read ranges when it holds the object (a miss fetches the object
// whole and caches it), else from the store.
type rangeReader struct {
	store storage.Store
	cache chunkcache.Cache
}

func (r *rangeReader) read(ctx context.Context, key string, off int64, buf []byte) error {
	if rr, ok := r.cache.(chunkcache.RangeReader); ok {
		if hit, err := rr.ReadRange(ctx, key, off, buf); err == nil && hit {
			return nil
		}
		obj, err := r.store.Get(ctx, key)
		if err != nil {
			return err
		}
		_ = r.cache.Put(ctx, key, obj) // refused when it does not hash to key; a failed put costs a later fetch
		if off+int64(len(buf)) > int64(len(obj)) {
			return fmt.Errorf("vectors %s: %d bytes, want at least %d: %w", key, len(obj), off+int64(len(buf)), loch.ErrCorrupt)
		}
		copy(buf, obj[off:])
		return nil
	}
	return r.store.ReadRange(ctx, key, off, buf)
}

// loadPQ reads an ivf-pq descriptor's centroids and codebook; its lists
// stay in storage.
func loadPQ(ctx context.Context, store storage.Store, key string, d *vindex.Descriptor, c *column, m Metric) (*Index, error) {
	ix := &Index{key: key, desc: d, metric: m, c: c}
	var book *vindex.Vectors
	g, gctx := errgroup.WithContext(ctx)
	get := func(k string, kind byte, want int, dst **vindex.Vectors) {
		g.Go(func() error {
			obj, err := store.Get(gctx, k)
			if err != nil {
				return err
			}
			*dst, err = vindex.DecodeVectors(k, kind, d.Dim, want, obj)
			return err
		})
	}
	var cents *vindex.Vectors
	get(d.Centroids, vindex.KindCentroids, len(d.Lists), &cents)
	get(d.Codebook, vindex.KindCodebook, -1, &book)
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if k := book.Len(); k < 1 || k > ksub {
		return nil, fmt.Errorf("codebook %s: %d entries, want 1 to %d: %w", d.Codebook, k, ksub, loch.ErrCorrupt)
	}
	ix.cents, ix.cnorm = cents.Data, norms(cents.Data, d.Dim)
	ix.pqx = &pqState{pq: newPQ(d.Dim, d.M, book.Data, book.Len()), rd: &rangeReader{store: store}}
	return ix, nil
}

// head reads and decodes the head (ids and codes) of list l.
func (ix *Index) head(ctx context.Context, l int) (*vindex.PQHead, error) {
	e := ix.desc.Lists[l]
	buf := make([]byte, vindex.PQHeadSize(ix.desc.M, e.Rows))
	if err := ix.pqx.rd.read(ctx, e.Key, 0, buf); err != nil {
		return nil, fmt.Errorf("read list %s: %w", e.Key, err)
	}
	return vindex.DecodePQHead(e.Key, ix.desc.Dim, ix.desc.M, e.Rows, buf)
}

// coverPQ finds the valid list entries and the uncovered rows. At the
// index's own version every entry is valid and every live row covered;
// otherwise the ids of every list are read (by range, not kept).
func (ix *Index) coverPQ(ctx context.Context) error {
	if ix.c.sc.Version() == ix.desc.Version {
		return nil
	}
	var all []uint64
	for l, e := range ix.desc.Lists {
		if e.Rows == 0 {
			continue
		}
		h, err := ix.head(ctx, l)
		if err != nil {
			return err
		}
		all = append(all, h.IDs...)
	}
	inLists := NewRowSet(all)
	valid, err := ix.coverWith(ctx, inLists.Contains)
	if err != nil {
		return err
	}
	ix.pqx.valid = NewRowSet(valid)
	return nil
}

// pqCand is a row ranked by its code: where to read its vector.
type pqCand struct {
	d    float32
	id   uint64
	l, i int32
}

// searchPQ answers each query: the nprobe nearest lists' rows ranked by
// their codes, the best Options.Rerank of them re-ranked by their
// vectors into tops. Queries are shared out among the goroutines.
func (ix *Index) searchPQ(ctx context.Context, qs []query, tops []*topK, nprobe int, opts Options) error {
	par := min(opts.parallelism(), len(qs))
	errs := make([]error, par)
	parallelFor(len(qs), par, func(w, lo, hi int) {
		s := ix.newPQSearch()
		for j := lo; j < hi && errs[w] == nil; j++ {
			errs[w] = s.query(ctx, &qs[j], tops[j], nprobe, opts)
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// defaultRerank is how many rows an ivf-pq search re-ranks by their full
// vectors when Options.Rerank is 0: max(400, 40 x k, rows / 10,000).
// The last term is for large indexes: the more rows share a list, the
// more of them tie with the true neighbours by their codes, and recall is
// bounded by the re-ranked candidates, not by nprobe (bench/RESULTS.md,
// 10M x 128: recall@10 0.874 at 400 at every nprobe, 0.971 at 1,000).
func defaultRerank(k int, rows int64) int {
	return max(400, 40*k, int(min(rows/10_000, 1<<20)))
}

// pqSearch is one goroutine's scratch for searchPQ.
type pqSearch struct {
	ix    *Index
	table []float32 // m x ksub
	r     []float32 // the query's residual
	vec   []float32
	row   []byte
	cands []pqCand // a max-heap on d, at most rerank
	cs    []centroidRank
	w     *pqScratch
}

func (ix *Index) newPQSearch() *pqSearch {
	dim := ix.desc.Dim
	return &pqSearch{ix: ix, table: make([]float32, ix.desc.M*ksub), r: make([]float32, dim),
		vec: make([]float32, dim), row: make([]byte, vindex.PQRowSize(dim)), w: newPQScratch()}
}

func (s *pqSearch) query(ctx context.Context, q *query, t *topK, nprobe int, opts Options) error {
	ix := s.ix
	rerank := opts.Rerank
	if rerank <= 0 {
		rerank = defaultRerank(t.k, ix.desc.Rows)
	}
	s.cs = ix.rankCentroids(q, s.cs, len(ix.cnorm), nil)
	s.cands = s.cands[:0]
	if ix.metric == Dot {
		ix.pqx.pq.dotTable(s.w, s.table, q.v)
	}
	for p := 0; p < len(s.cs); p++ {
		if p >= nprobe && (opts.Allow == nil || len(s.cands) >= t.k) {
			break
		}
		if err := s.scan(ctx, q, s.cs[p].l, rerank, opts.Allow); err != nil {
			return err
		}
	}
	return s.rerank(ctx, q, t)
}

// scan ranks the valid, allowed rows of list l by their codes.
func (s *pqSearch) scan(ctx context.Context, q *query, l, rerank int, allow *RowSet) error {
	ix := s.ix
	if ix.desc.Lists[l].Rows == 0 {
		return nil
	}
	h, err := ix.head(ctx, l)
	if err != nil {
		return err
	}
	dim, m := ix.desc.Dim, ix.desc.M
	c := ix.cents[l*dim : (l+1)*dim]
	var off float32
	if ix.metric == Dot {
		off = -vek32.Dot(q.v, c)
	} else {
		vek32.Sub_Into(s.r, q.v, c)
		ix.pqx.pq.l2Table(s.w, s.table, s.r)
	}
	valid := ix.pqx.valid
	for i, id := range h.IDs {
		if (valid != nil && !valid.Contains(id)) || (allow != nil && !allow.Contains(id)) {
			continue
		}
		d := off + score(s.table, h.Codes[i*m:(i+1)*m])
		if len(s.cands) == rerank && d >= s.cands[0].d {
			continue
		}
		s.push(pqCand{d: d, id: id, l: int32(l), i: int32(i)}, rerank)
	}
	return nil
}

// push adds c to the candidates' max-heap of at most n.
func (s *pqSearch) push(c pqCand, n int) {
	h := s.cands
	if len(h) < n {
		h = append(h, c)
		for j := len(h) - 1; j > 0; {
			p := (j - 1) / 2
			if h[p].d >= h[j].d {
				break
			}
			h[p], h[j] = h[j], h[p]
			j = p
		}
		s.cands = h
		return
	}
	h[0] = c
	for j := 0; ; {
		a := 2*j + 1
		if a >= len(h) {
			break
		}
		if b := a + 1; b < len(h) && h[b].d > h[a].d {
			a = b
		}
		if h[j].d >= h[a].d {
			break
		}
		h[j], h[a] = h[a], h[j]
		j = a
	}
}

// rerank reads each candidate's vector by range and adds its exact
// distance to t.
func (s *pqSearch) rerank(ctx context.Context, q *query, t *topK) error {
	ix := s.ix
	dim, m := ix.desc.Dim, ix.desc.M
	// In list and row order: neighbouring reads of one object.
	slices.SortFunc(s.cands, func(a, b pqCand) int { return cmp.Or(cmp.Compare(a.l, b.l), cmp.Compare(a.i, b.i)) })
	for _, c := range s.cands {
		e := ix.desc.Lists[c.l]
		if err := ix.pqx.rd.read(ctx, e.Key, vindex.PQRowOffset(dim, m, e.Rows, int(c.i)), s.row); err != nil {
			return fmt.Errorf("read list %s: %w", e.Key, err)
		}
		if err := vindex.DecodePQRow(e.Key, c.id, s.row, s.vec); err != nil {
			return err
		}
		var xx float32
		if ix.metric != Dot {
			xx = vek32.Dot(s.vec, s.vec)
		}
		t.add(Hit{RowID: c.id, Distance: listDistance(ix.metric, q, vek32.Dot(s.vec, q.v), xx)})
	}
	return nil
}

// updatePQ writes the index of the opened version as Update does: lists
// that lost entries or gain uncovered rows are read whole, filtered and
// extended (new rows encoded with the same codebook); the others keep
// their objects.
func (ix *Index) updatePQ(ctx context.Context, store storage.Store, opts Options) (*Info, error) {
	d, dim, par := ix.desc, ix.desc.Dim, opts.parallelism()
	add := newLists(len(d.Lists))
	if ix.nUncov > 0 {
		q := newQuantizer(ix.metric, ix.cents, dim, 0, par)
		if err := ix.c.assign(ctx, ix.metric, q, ix.uncovered, nil, par, add); err != nil {
			return nil, err
		}
	}
	ls := newLists(len(d.Lists))
	ls.codes = make([][]byte, len(d.Lists))
	unchanged := map[int]string{}
	valid := ix.pqx.valid
	w := newPQScratch()
	for l, e := range d.Lists {
		if e.Rows > 0 {
			h, err := ix.head(ctx, l)
			if err != nil {
				return nil, err
			}
			lost := valid != nil && slices.ContainsFunc(h.IDs, func(id uint64) bool { return !valid.Contains(id) })
			if !lost && len(add.ids[l]) == 0 {
				unchanged[l], ls.ids[l] = e.Key, h.IDs
				continue
			}
			obj, err := store.Get(ctx, e.Key)
			if err != nil {
				return nil, fmt.Errorf("read list %s: %w", e.Key, err)
			}
			old, err := vindex.DecodePQList(e.Key, dim, d.M, e.Rows, obj)
			if err != nil {
				return nil, err
			}
			for i, id := range old.IDs {
				if valid == nil || valid.Contains(id) {
					ls.ids[l] = append(ls.ids[l], id)
					ls.vecs[l] = append(ls.vecs[l], old.Data[i*dim:(i+1)*dim]...)
					ls.codes[l] = append(ls.codes[l], old.Codes[i*d.M:(i+1)*d.M]...)
				}
			}
		}
		ls.ids[l] = append(ls.ids[l], add.ids[l]...)
		ls.vecs[l] = append(ls.vecs[l], add.vecs[l]...)
		ls.codes[l] = ix.pqx.pq.encodeList(w, ix.cents[l*dim:(l+1)*dim], add.vecs[l], ls.codes[l])
		ls.sortList(l, dim)
	}
	return write(ctx, store, ix.c, ix.metric, ix.cents, ix.pqx.pq, ls, d.Version, unchanged)
}
