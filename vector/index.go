package vector

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/colscan"
	"github.com/lochdata/loch/internal/vindex"
	"github.com/lochdata/loch/storage"
)

// Index is a stored index opened for one version of a dataset: its lists
// hold only the rows valid in that version, and the rows it does not
// cover are searched exactly. Safe for concurrent searches.
type Index struct {
	key       string
	desc      *vindex.Descriptor
	metric    Metric
	c         *column
	cents     []float32
	cnorm     []float32
	ls        *lists
	xnorm     [][]float32 // squared norms of the lists' vectors (cosine, l2)
	listKeys  []string    // each list's object key; "" once it lost rows
	uncovered [][2]int64  // positions of live rows the lists do not hold
	nUncov    int64
	pqx       *pqState // an ivf-pq index: ls, xnorm and listKeys are unused

	flatScratch sync.Pool // of *flatSearch: see newFlatSearch
}

// ErrNoIndex: no stored index covers the version (an ancestor's would
// do). It matches loch.ErrNotFound.
var ErrNoIndex = fmt.Errorf("no vector index: %w", loch.ErrNotFound)

// Find returns the key of the index of column and metric that serves
// the handle's version: its own, else its newest ancestor's (in
// Dataset.Log order). It is ErrNoIndex when there is none.
func Find(ctx context.Context, ds *loch.Dataset, column string, m Metric) (string, error) {
	key, stored, err := colscan.FindIndex(ctx, ds, "index", column, string(m))
	if err != nil || key != "" {
		return key, err
	}
	if !stored {
		return "", fmt.Errorf("%s column %q, metric %s: %w", ds.URL(), column, m, ErrNoIndex)
	}
	return "", fmt.Errorf("%s column %q, metric %s at version %s: %w", ds.URL(), column, m, ds.Version(), ErrNoIndex)
}

// Open loads the index of column and metric that serves the handle's
// version (see Find) into memory, keeping only the list entries valid in
// that version (docs/format.md §2.8, Coverage). A descriptor or object
// that is missing or corrupt is an error naming its key (ErrNotFound,
// ErrCorrupt); Search falls back to exact search on such errors.
func Open(ctx context.Context, ds *loch.Dataset, column string, m Metric, opts Options) (*Index, error) {
	if _, err := ParseMetric(string(m)); err != nil {
		return nil, err
	}
	key, err := Find(ctx, ds, column, m)
	if err != nil {
		return nil, err
	}
	par := opts.parallelism()
	c, err := openColumn(ctx, ds.Scan(), column, par)
	if err != nil {
		return nil, err
	}
	ix, err := load(ctx, ds.Store(), key, c, m)
	if err != nil {
		return nil, fmt.Errorf("open index of %s column %q: %w", ds.URL(), column, err)
	}
	if ix.pqx != nil {
		ix.pqx.rd.cache = opts.Cache
	}
	if err := ix.cover(ctx); err != nil {
		return nil, fmt.Errorf("open index %s of %s: %w", key, ds.URL(), err)
	}
	return ix, nil
}

// load reads the descriptor and its objects.
func load(ctx context.Context, store storage.Store, key string, c *column, m Metric) (*Index, error) {
	obj, err := store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	d, err := vindex.DecodeDescriptor(key, obj)
	if err != nil {
		return nil, err
	}
	if d.Dim != c.dim {
		return nil, fmt.Errorf("index %s has %d dimensions, column %q has %d: %w", key, d.Dim, c.col.Name, c.dim, loch.ErrCorrupt)
	}
	if d.Type == vindex.TypePQ {
		return loadPQ(ctx, store, key, d, c, m)
	}
	ix := &Index{key: key, desc: d, metric: m, c: c, ls: newLists(len(d.Lists)), listKeys: make([]string, len(d.Lists))}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(putParallelism)
	g.Go(func() error {
		obj, err := store.Get(gctx, d.Centroids)
		if err != nil {
			return err
		}
		v, err := vindex.DecodeVectors(d.Centroids, vindex.KindCentroids, d.Dim, len(d.Lists), obj)
		if err != nil {
			return err
		}
		ix.cents = v.Data
		return nil
	})
	for l, e := range d.Lists {
		if e.Key == "" {
			continue
		}
		g.Go(func() error {
			obj, err := store.Get(gctx, e.Key)
			if err != nil {
				return err
			}
			v, err := vindex.DecodeVectors(e.Key, vindex.KindList, d.Dim, e.Rows, obj)
			if err != nil {
				return err
			}
			ix.ls.ids[l], ix.ls.vecs[l], ix.listKeys[l] = v.IDs, v.Data, e.Key
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	ix.cnorm = norms(ix.cents, d.Dim)
	return ix, nil
}

// cover drops the list entries that are not valid in the column's
// version and finds the positions of the live rows the lists do not hold.
func (ix *Index) cover(ctx context.Context) error {
	if ix.pqx != nil {
		return ix.coverPQ(ctx)
	}
	var inLists []uint64
	for _, ids := range ix.ls.ids {
		inLists = append(inLists, ids...)
	}
	slices.Sort(inLists)
	valid, err := ix.coverWith(ctx, func(id uint64) bool {
		_, ok := slices.BinarySearch(inLists, id)
		return ok
	})
	if err != nil {
		return err
	}
	dim := ix.c.dim
	ix.xnorm = make([][]float32, len(ix.ls.ids))
	for l, ids := range ix.ls.ids {
		keep := 0
		for i, id := range ids {
			if _, ok := slices.BinarySearch(valid, id); ok {
				ids[keep] = id
				copy(ix.ls.vecs[l][keep*dim:], ix.ls.vecs[l][i*dim:(i+1)*dim])
				keep++
			}
		}
		if keep < len(ids) {
			ix.listKeys[l] = ""
		}
		ix.ls.ids[l], ix.ls.vecs[l] = ids[:keep], ix.ls.vecs[l][:keep*dim]
		if ix.metric != Dot {
			ix.xnorm[l] = norms(ix.ls.vecs[l], dim)
		}
	}
	return nil
}

// coverWith returns the ids of the live rows of covered fragments that
// inLists holds (the valid list entries), sorted, and sets ix.uncovered to
// the positions of the other live rows.
func (ix *Index) coverWith(ctx context.Context, inLists func(uint64) bool) ([]uint64, error) {
	valid, uncovered, n, err := colscan.Cover(ctx, ix.c.sc, ix.c.col.UID, ix.desc.Covered, inLists)
	if err != nil {
		return nil, err
	}
	ix.uncovered = append(ix.uncovered, uncovered...)
	ix.nUncov += n
	slices.Sort(valid)
	return valid, nil
}

// Key is the key of the index's descriptor.
func (ix *Index) Key() string { return ix.key }

// Version is the version the index was built or updated for.
func (ix *Index) Version() string { return ix.desc.Version }

// Uncovered is the number of live rows of the opened version that the
// index does not hold (searched exactly).
func (ix *Index) Uncovered() int64 { return ix.nUncov }

// NList is the number of lists.
func (ix *Index) NList() int { return len(ix.desc.Lists) }

// DefaultNProbe is the number of lists a query scans unless told:
// NList/8, at least 16 (bench/history/2026-11-29-issue-37.md: at 1M x
// 128, 125 of 1,000 lists, under 4 ms a query on 2 cores; recall@10 1.00
// on a mixture of 1,000 components, 0.90 on one of 10,000).
func (ix *Index) DefaultNProbe() int { return min(ix.NList(), max(16, ix.NList()/8)) }

// Search returns, for each query vector, the k nearest rows of the
// opened version: the best of the nprobe nearest lists (Options.NProbe)
// and of an exact scan of the uncovered rows.
//
// With a filter (Options.Allow) that allows a share s of the rows, the
// lists are scanned for allowed rows only, and nprobe/s lists rather than
// nprobe (so about as many allowed rows are compared as an unfiltered
// search compares rows), then further lists until k allowed rows are
// found: never a short answer. When nprobe/s reaches the number of lists
// (a share under nprobe/nlist, 6% with the defaults) every list is
// scanned and the answer is exact. Plain pre-filtering with nprobe lists
// loses recall as the filter narrows (bench/history/2026-11-29-issue-37.md).
func (ix *Index) Search(ctx context.Context, queries [][]float32, k int, opts Options) ([][]Hit, error) {
	if err := checkK(k); err != nil {
		return nil, err
	}
	c := ix.c
	if err := checkQueries(queries, c.dim); err != nil {
		return nil, fmt.Errorf("vector search of %s column %q: %w", c.sc.URL(), c.col.Name, err)
	}
	nprobe := opts.NProbe
	if nprobe <= 0 {
		nprobe = ix.DefaultNProbe()
	}
	if opts.Allow != nil && !opts.PlainPrefilter {
		if share := float64(opts.Allow.Len()) / float64(max(c.sc.Len(), 1)); share > 0 {
			nprobe = int(min(math.Ceil(float64(nprobe)/share), float64(ix.NList())))
		}
	}
	nprobe = min(nprobe, ix.NList())
	qs := prepareAll(ix.metric, queries)
	par := opts.parallelism()
	tops := newTops(par, len(qs), k)
	if ix.pqx != nil {
		if err := ix.searchPQ(ctx, qs, tops[0], nprobe, opts); err != nil {
			return nil, fmt.Errorf("vector search of %s column %q: %w", c.sc.URL(), c.col.Name, err)
		}
	} else {
		ix.searchFlat(qs, tops, nprobe, opts.Allow)
	}
	if len(ix.uncovered) > 0 {
		err := c.each(ctx, ix.uncovered, opts.Allow.keep(), par, func(w int, b batch) error {
			scoreBatch(ix.metric, qs, tops[w], b, c.dim)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("vector search of %s column %q: %w", c.sc.URL(), c.col.Name, err)
		}
	}
	return mergeTops(tops), nil
}

// listDistance is the metric's distance from a list's vector x (unit
// length or zero for cosine) to a prepared query, given their dot product
// and |x|^2 (unused for dot).
func listDistance(m Metric, q *query, dot, xx float32) float32 {
	switch m {
	case Cosine:
		if xx == 0 || q.norm == 0 {
			return 1
		}
		return 1 - dot
	case L2:
		return float32(math.Sqrt(float64(max(xx-2*dot+q.norm, 0))))
	}
	return -dot
}
