package vector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/viterin/vek/vek32"
	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/vindex"
	"github.com/lochdata/loch/storage"
)

// BuildOptions tune Build. The zero value builds a cosine index with
// defaults measured in bench/RESULTS.md.
type BuildOptions struct {
	// Metric is the distance the index serves; "" means Cosine.
	Metric Metric
	// NList is the number of lists (centroids); 0 means sqrt(rows).
	NList int
	// Sample is the number of rows k-means trains on; 0 means
	// max(64 x NList, 50,000), at most every row.
	Sample int
	// Iterations of Lloyd's algorithm; 0 means 10.
	Iterations int
	// Seed makes the training sample and initial centroids reproducible.
	Seed uint64
	// Parallelism is the number of goroutines; 0 means GOMAXPROCS.
	Parallelism int
}

// Info describes a stored index.
type Info struct {
	// Key is the descriptor's key, indexes/<version>/<uid>.<metric>.
	Key     string `json:"key"`
	Version string `json:"version"`
	Column  string `json:"column"`
	Metric  Metric `json:"metric"`
	Dim     int    `json:"dim"`
	Rows    int64  `json:"rows"`
	NList   int    `json:"nlist"`
	// Base is the version of the index an update started from.
	Base string `json:"base,omitempty"`
	// Bytes is the size of the objects written (an update counts only the
	// lists it rewrote).
	Bytes int64 `json:"bytes"`
}

func (o BuildOptions) metric() (Metric, error) {
	if o.Metric == "" {
		return Cosine, nil
	}
	return ParseMetric(string(o.Metric))
}

// lists are an index's rows, one list per centroid, each sorted by id.
type lists struct {
	ids  [][]uint64
	vecs [][]float32
}

// Build trains an index of column at the handle's version, stores it
// (docs/format.md §2.8) and returns its description. It reads the column
// twice (a sample, then every row) and holds the whole index in memory
// while it writes it. Building again for the same version, column and
// metric replaces the stored index.
func Build(ctx context.Context, ds *loch.Dataset, column string, opts BuildOptions) (*Info, error) {
	m, err := opts.metric()
	if err != nil {
		return nil, err
	}
	par := Options{Parallelism: opts.Parallelism}.parallelism()
	sc := ds.Scan()
	c, err := openColumn(ctx, sc, column, par)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Info, error) {
		return nil, fmt.Errorf("index %s column %q: %w", ds.URL(), column, err)
	}
	n := sc.Len()
	nlist := opts.NList
	if nlist <= 0 {
		nlist = max(1, int(math.Round(math.Sqrt(float64(n)))))
	}
	sampleSize := opts.Sample
	if sampleSize <= 0 {
		sampleSize = max(64*nlist, 50000)
	}
	sample, err := c.sample(ctx, min(int64(sampleSize), n), opts.Seed, par)
	if err != nil {
		return fail(err)
	}
	got := len(sample) / c.dim
	if got == 0 {
		return fail(fmt.Errorf("no rows with a vector to train on: %w", loch.ErrInvalidArgument))
	}
	nlist = min(nlist, got)
	if m == Cosine {
		normalize(sample, c.dim)
	}
	iters := opts.Iterations
	if iters <= 0 {
		iters = 10
	}
	cents := kmeans(m, sample, c.dim, nlist, iters, opts.Seed, par)
	ls := newLists(nlist)
	all := [][2]int64{{0, n}}
	if err := c.assign(ctx, m, cents, all, nil, par, ls); err != nil {
		return fail(err)
	}
	info, err := write(ctx, ds.Store(), c, m, cents, ls, "", nil)
	if err != nil {
		return fail(err)
	}
	return info, nil
}

func newLists(nlist int) *lists {
	return &lists{ids: make([][]uint64, nlist), vecs: make([][]float32, nlist)}
}

// sample reads the vectors of about size rows at random positions.
func (c *column) sample(ctx context.Context, size int64, seed uint64, par int) ([]float32, error) {
	n := c.sc.Len()
	var ranges [][2]int64
	if size >= n {
		ranges = [][2]int64{{0, n}}
	} else {
		r := rand.New(rand.NewPCG(seed, 0x73616d706c65))
		pos := make([]int64, 0, size)
		for _, p := range r.Perm(int(n))[:size] {
			pos = append(pos, int64(p))
		}
		slices.Sort(pos)
		for _, p := range pos {
			ranges = append(ranges, [2]int64{p, p + 1})
		}
	}
	parts := make([][]float32, par)
	err := c.each(ctx, ranges, nil, par, func(w int, b batch) error {
		parts[w] = append(parts[w], b.vecs...)
		return nil
	})
	return slices.Concat(parts...), err
}

// assign streams the rows of ranges (those keep accepts), assigns each to
// its nearest centroid and appends it to ls; for cosine the vectors are
// stored normalized. Lists end sorted by row id.
func (c *column) assign(ctx context.Context, m Metric, cents []float32, ranges [][2]int64, keep func(uint64) bool, par int, ls *lists) error {
	am, dim := assignMetric(m), c.dim
	cnorm := norms(cents, dim)
	nlist := len(cnorm)
	parts := make([]*lists, par)
	for w := range parts {
		parts[w] = newLists(nlist)
	}
	err := c.each(ctx, ranges, keep, par, func(w int, b batch) error {
		if m == Cosine {
			normalize(b.vecs, dim)
		}
		p := parts[w]
		for i, id := range b.ids {
			x := b.vecs[i*dim : (i+1)*dim]
			l := nearestCentroid(am, cents, cnorm, dim, x, vek32.Dot(x, x))
			p.ids[l] = append(p.ids[l], id)
			p.vecs[l] = append(p.vecs[l], x...)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for l := range nlist {
		for _, p := range parts {
			ls.ids[l] = append(ls.ids[l], p.ids[l]...)
			ls.vecs[l] = append(ls.vecs[l], p.vecs[l]...)
		}
		ls.sortList(l, dim)
	}
	return nil
}

// sortList sorts list l by row id, moving the vectors along.
func (ls *lists) sortList(l, dim int) {
	ids := ls.ids[l]
	if slices.IsSorted(ids) {
		return
	}
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return ids[order[a]] < ids[order[b]] })
	nids := make([]uint64, len(ids))
	nvecs := make([]float32, len(ls.vecs[l]))
	for i, o := range order {
		nids[i] = ids[o]
		copy(nvecs[i*dim:], ls.vecs[l][o*dim:(o+1)*dim])
	}
	ls.ids[l], ls.vecs[l] = nids, nvecs
}

// putParallelism bounds concurrent puts of an index's objects.
const putParallelism = 8

// write stores the centroids and lists, then the descriptor naming them,
// covering every fragment of c's snapshot.
func write(ctx context.Context, store storage.Store, c *column, m Metric, cents []float32, ls *lists, base string, unchanged map[int]string) (*Info, error) {
	d := &vindex.Descriptor{Version: c.sc.Version(), Column: c.col.Name, UID: c.col.UID, Metric: string(m),
		Type: "ivf-flat", Dim: c.dim, DType: c.col.DType.String(), Base: base, Time: time.Now().UTC()}
	for k, f := range c.sc.Fragments() {
		digest, err := c.sc.ColumnChunks(ctx, k, c.col.UID)
		if err != nil {
			return nil, err
		}
		d.Covered = append(d.Covered, vindex.Covered{Key: f.Key, IDStart: f.IDStart, Extensions: f.Extensions, Chunks: digest})
	}
	var bytes int64
	objs := map[string][]byte{}
	centObj := vindex.EncodeVectors(vindex.KindCentroids, &vindex.Vectors{Dim: c.dim, Data: cents})
	d.Centroids = vindex.VectorsKey(centObj)
	objs[d.Centroids] = centObj
	d.Lists = make([]vindex.List, len(ls.ids))
	for l := range ls.ids {
		n := len(ls.ids[l])
		d.Rows += int64(n)
		if n == 0 {
			continue
		}
		if key, ok := unchanged[l]; ok {
			d.Lists[l] = vindex.List{Key: key, Rows: n}
			continue
		}
		obj := vindex.EncodeVectors(vindex.KindList, &vindex.Vectors{Dim: c.dim, IDs: ls.ids[l], Data: ls.vecs[l]})
		key := vindex.VectorsKey(obj)
		d.Lists[l] = vindex.List{Key: key, Rows: n}
		objs[key] = obj
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(putParallelism)
	for key, obj := range objs {
		bytes += int64(len(obj))
		g.Go(func() error { return store.Put(gctx, key, obj) })
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("write index: %w", err)
	}
	obj, err := vindex.EncodeDescriptor(d)
	if err != nil {
		return nil, err
	}
	key := keys.MakeIndex(d.Version, d.UID, d.Metric)
	if err := store.Put(ctx, key, obj); err != nil {
		return nil, fmt.Errorf("write index: %w", err)
	}
	return &Info{Key: key, Version: d.Version, Column: d.Column, Metric: m, Dim: d.Dim, Rows: d.Rows,
		NList: len(d.Lists), Base: base, Bytes: bytes + int64(len(obj))}, nil
}

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
}

// ErrNoIndex: no stored index covers the version (an ancestor's would
// do). It matches loch.ErrNotFound.
var ErrNoIndex = fmt.Errorf("no vector index: %w", loch.ErrNotFound)

// Find returns the key of the index of column and metric that serves
// the handle's version: its own, else its newest ancestor's (in
// Dataset.Log order). It is ErrNoIndex when there is none.
func Find(ctx context.Context, ds *loch.Dataset, column string, m Metric) (string, error) {
	uid := -1
	for _, col := range ds.Schema().Columns {
		if col.Name == column {
			uid = col.UID
		}
	}
	if uid < 0 {
		return "", fmt.Errorf("index of %s: no column %q: %w", ds.URL(), column, loch.ErrNotFound)
	}
	have := map[string]string{}
	err := ds.Store().List(ctx, keys.Index.Prefix(), func(a storage.Attrs) error {
		if v, u, mm, ok := keys.ParseIndex(a.Key); ok && u == uid && mm == string(m) {
			have[v] = a.Key
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("index of %s column %q: %w", ds.URL(), column, err)
	}
	if key, ok := have[ds.Version()]; ok || len(have) == 0 {
		if !ok {
			return "", fmt.Errorf("%s column %q, metric %s: %w", ds.URL(), column, m, ErrNoIndex)
		}
		return key, nil
	}
	log, err := ds.Log(ctx)
	if err != nil {
		return "", fmt.Errorf("index of %s column %q: %w", ds.URL(), column, err)
	}
	for _, ci := range log {
		if key, ok := have[ci.ID]; ok {
			return key, nil
		}
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
	// A fragment is covered when the descriptor names it as it is, or
	// names it with other extensions but the same chunks of the column
	// (an update in place of its other columns).
	covered := map[string]bool{}
	chunks := map[string]string{}
	for _, f := range ix.desc.Covered {
		covered[loch.Fragment{Key: f.Key, IDStart: f.IDStart, Extensions: f.Extensions}.Ident()] = true
		if f.Chunks != "" {
			chunks[loch.Fragment{Key: f.Key, IDStart: f.IDStart}.Ident()] = f.Chunks
		}
	}
	isCovered := func(k int, f loch.Fragment) (bool, error) {
		if covered[f.Ident()] {
			return true, nil
		}
		want, ok := chunks[loch.Fragment{Key: f.Key, IDStart: f.IDStart}.Ident()]
		if !ok {
			return false, nil
		}
		got, err := ix.c.sc.ColumnChunks(ctx, k, ix.c.col.UID)
		return got == want, err
	}
	var inLists []uint64
	for _, ids := range ix.ls.ids {
		inLists = append(inLists, ids...)
	}
	slices.Sort(inLists)
	var valid []uint64
	var rows []loch.RowLoc
	add := func(lo, hi int64) {
		if len(ix.uncovered) > 0 && ix.uncovered[len(ix.uncovered)-1][1] == lo {
			ix.uncovered[len(ix.uncovered)-1][1] = hi
		} else {
			ix.uncovered = append(ix.uncovered, [2]int64{lo, hi})
		}
		ix.nUncov += hi - lo
	}
	sc := ix.c.sc
	for k, f := range sc.Fragments() {
		if f.Start == f.End {
			continue
		}
		if ok, err := isCovered(k, f); err != nil {
			return err
		} else if !ok {
			add(f.Start, f.End)
			continue
		}
		for lo := f.Start; lo < f.End; lo += locateBatch {
			var err error
			if rows, err = sc.LocateRange(lo, min(lo+locateBatch, f.End), rows[:0]); err != nil {
				return err
			}
			for i, r := range rows {
				if _, ok := slices.BinarySearch(inLists, r.ID); ok {
					valid = append(valid, r.ID)
				} else {
					add(lo+int64(i), lo+int64(i)+1)
				}
			}
		}
	}
	slices.Sort(valid)
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

// Key is the key of the index's descriptor.
func (ix *Index) Key() string { return ix.key }

// Version is the version the index was built or updated for.
func (ix *Index) Version() string { return ix.desc.Version }

// Uncovered is the number of live rows of the opened version that the
// index does not hold (searched exactly).
func (ix *Index) Uncovered() int64 { return ix.nUncov }

// NList is the number of lists.
func (ix *Index) NList() int { return len(ix.ls.ids) }

// DefaultNProbe is the number of lists a query scans unless told:
// NList/8, at least 16 (bench/RESULTS.md: at 1M x 128, 125 of 1,000
// lists, under 4 ms a query on 2 cores; recall@10 1.00 on a mixture of
// 1,000 components, 0.90 on one of 10,000).
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
// loses recall as the filter narrows (bench/RESULTS.md).
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
	if len(qs) >= par {
		// A batch: one goroutine per share of the queries.
		parallelFor(len(qs), par, func(_, lo, hi int) {
			for j := lo; j < hi; j++ {
				ix.searchLists(&qs[j], []*topK{tops[0][j]}, nprobe, opts.Allow)
			}
		})
	} else {
		// Fewer queries than cores: each query's lists are shared out.
		for j := range qs {
			ts := make([]*topK, par)
			for w := range ts {
				ts[w] = tops[w][j]
			}
			ix.searchLists(&qs[j], ts, nprobe, opts.Allow)
		}
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

// searchLists ranks the centroids and scans the nprobe nearest lists,
// shared out among len(ts) goroutines, each adding to its own top k. With
// a filter, lists after the nprobe nearest are scanned, nearest first,
// until the tops hold k allowed rows between them or no list is left.
func (ix *Index) searchLists(q *query, ts []*topK, nprobe int, allow *RowSet) {
	dim := ix.c.dim
	type cand struct {
		l int
		d float32
	}
	cs := make([]cand, len(ix.cnorm))
	for l := range cs {
		cs[l] = cand{l, distance(ix.metric, q, ix.cents[l*dim:(l+1)*dim], ix.cnorm[l])}
	}
	slices.SortFunc(cs, func(a, b cand) int { return cmp.Compare(a.d, b.d) })
	if len(ts) == 1 {
		for _, cn := range cs[:nprobe] {
			ix.scanList(q, ts[0], cn.l, allow)
		}
	} else {
		parallelFor(nprobe, len(ts), func(w, lo, hi int) {
			t := ts[w]
			for p := lo; p < hi; p++ {
				ix.scanList(q, t, cs[p].l, allow)
			}
		})
	}
	if allow == nil {
		return
	}
	held := 0
	for _, t := range ts {
		held += len(t.h)
	}
	for p := nprobe; p < len(cs) && held < ts[0].k; p++ {
		before := len(ts[0].h)
		ix.scanList(q, ts[0], cs[p].l, allow)
		held += len(ts[0].h) - before
	}
}

// scanList adds the allowed rows of list l to t.
func (ix *Index) scanList(q *query, t *topK, l int, allow *RowSet) {
	dim := ix.c.dim
	ids, vecs, xnorm := ix.ls.ids[l], ix.ls.vecs[l], ix.xnorm[l]
	for i, id := range ids {
		if allow != nil && !allow.Contains(id) {
			continue
		}
		dot := vek32.Dot(vecs[i*dim:(i+1)*dim], q.v)
		var d float32
		switch ix.metric {
		case Cosine: // list vectors are unit length or zero
			d = 1 - dot
			if xnorm[i] == 0 || q.norm == 0 {
				d = 1
			}
		case L2:
			d = float32(math.Sqrt(float64(max(xnorm[i]-2*dot+q.norm, 0))))
		default:
			d = -dot
		}
		t.add(Hit{RowID: id, Distance: d})
	}
}

// Update writes the index of the handle's version from the index that
// serves it (Find): the same centroids, the lists without the entries not
// valid in the version, and the uncovered rows assigned to their nearest
// centroids. Lists that did not change keep their objects. When the
// index already is the version's, it writes nothing and returns its Info.
// Unlike Search, Update fails on a missing or corrupt index object.
func Update(ctx context.Context, ds *loch.Dataset, column string, m Metric, opts Options) (*Info, error) {
	ix, err := Open(ctx, ds, column, m, opts)
	if err != nil {
		return nil, err
	}
	d := ix.desc
	if d.Version == ds.Version() {
		return &Info{Key: ix.key, Version: d.Version, Column: d.Column, Metric: m, Dim: d.Dim, Rows: d.Rows, NList: len(d.Lists), Base: d.Base}, nil
	}
	unchanged := map[int]string{}
	before := make([]int, len(ix.ls.ids))
	for l, key := range ix.listKeys {
		before[l] = len(ix.ls.ids[l])
		if key != "" {
			unchanged[l] = key
		}
	}
	if ix.nUncov > 0 {
		if err := ix.c.assign(ctx, m, ix.cents, ix.uncovered, nil, opts.parallelism(), ix.ls); err != nil {
			return nil, fmt.Errorf("update index of %s column %q: %w", ds.URL(), column, err)
		}
	}
	for l := range ix.ls.ids {
		if len(ix.ls.ids[l]) != before[l] {
			delete(unchanged, l)
		}
	}
	info, err := write(ctx, ds.Store(), ix.c, m, ix.cents, ix.ls, d.Version, unchanged)
	if err != nil {
		return nil, fmt.Errorf("update index of %s column %q: %w", ds.URL(), column, err)
	}
	return info, nil
}

// Search answers a search of the handle's version with the index of
// column and metric if one serves it (Open), else exactly. A stored index
// that cannot be read (missing or corrupt objects) does not fail the
// search: it is answered exactly, with a warning naming the object. Each
// call opens the index anew; a Searcher keeps it between calls.
func Search(ctx context.Context, ds *loch.Dataset, column string, m Metric, queries [][]float32, k int, opts Options) (*Result, error) {
	return NewSearcher(ds).Search(ctx, column, m, queries, k, opts)
}

// Searcher answers the searches of one dataset handle as Search does,
// keeping each index it opened (one per column and metric) for as long as
// it is the index that serves the handle's version (Find, which costs a
// listing of indexes/, is asked each time). It is safe for concurrent use.
type Searcher struct {
	d    *loch.Dataset
	mu   sync.Mutex
	open map[string]*Index // by column and metric
}

// NewSearcher returns a Searcher of d.
func NewSearcher(d *loch.Dataset) *Searcher { return &Searcher{d: d, open: map[string]*Index{}} }

// Search is Search(ctx, d, ...) with the Searcher's indexes.
func (s *Searcher) Search(ctx context.Context, column string, m Metric, queries [][]float32, k int, opts Options) (*Result, error) {
	if _, err := ParseMetric(string(m)); err != nil {
		return nil, err
	}
	if err := checkK(k); err != nil {
		return nil, err
	}
	res := &Result{}
	ix, err := s.index(ctx, column, m, opts)
	switch {
	case err == nil:
		res.Index = ix.Key()
		res.Hits, err = ix.Search(ctx, queries, k, opts)
		return res, err
	case errors.Is(err, ErrNoIndex):
	case errors.Is(err, loch.ErrCorrupt) || errors.Is(err, loch.ErrNotFound):
		res.Warnings = append(res.Warnings, fmt.Sprintf("vector index unusable, searched exactly: %v", err))
	default:
		return nil, err
	}
	res.Hits, err = Exact(ctx, s.d.Scan(), column, m, queries, k, opts)
	return res, err
}

// index returns the open index that serves the handle's version.
func (s *Searcher) index(ctx context.Context, column string, m Metric, opts Options) (*Index, error) {
	key, err := Find(ctx, s.d, column, m)
	if err != nil {
		return nil, err
	}
	name := column + "\x00" + string(m)
	s.mu.Lock()
	ix := s.open[name]
	s.mu.Unlock()
	if ix != nil && ix.key == key && ix.c.sc.Version() == s.d.Version() {
		return ix, nil
	}
	if ix, err = Open(ctx, s.d, column, m, opts); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.open[name] = ix
	s.mu.Unlock()
	return ix, nil
}

// Result is the answer of Search.
type Result struct {
	// Hits holds, for each query vector, its nearest rows, nearest first.
	Hits [][]Hit `json:"hits"`
	// Index is the key of the index used; "" for an exact search.
	Index string `json:"index,omitempty"`
	// Warnings say why an index was not used when one exists.
	Warnings []string `json:"warnings,omitempty"`
}
