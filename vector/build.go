package vector

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

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
	// NList is the number of lists (centroids); 0 means DefaultNList:
	// 4 x sqrt(rows), at most 4,096.
	NList int
	// Sample is the number of rows k-means trains on; 0 means
	// max(64 x NList, 50,000), at most every row.
	Sample int
	// Iterations of Lloyd's algorithm; 0 means 10.
	Iterations int
	// Kind is the index type: KindFlat ("ivf-flat", the default: every
	// vector in memory when opened) or KindPQ ("ivf-pq": product
	// quantization codes, lists read by range, docs/format.md §2.8.1).
	Kind string
	// M is the number of subquantizers of an ivf-pq index, a divisor of
	// the dimension; 0 means dim/8 (a byte per 8 dimensions).
	M int
	// Seed makes the training sample and initial centroids reproducible.
	Seed uint64
	// Parallelism is the number of goroutines; 0 means GOMAXPROCS.
	Parallelism int
	// PartRows is the number of rows assigned and stored at a time (a
	// part, Trained.Parts); 0 means PartBytes of float32 vectors.
	PartRows int64
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
	// Type is the index type, "ivf-flat" or "ivf-pq"; M its subquantizers.
	Type string `json:"type"`
	M    int    `json:"m,omitempty"`
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

// lists are an index's rows, one list per centroid, each sorted by id;
// for an ivf-pq index also their codes.
type lists struct {
	ids   [][]uint64
	vecs  [][]float32
	codes [][]byte // nil for ivf-flat
}

// Build trains an index of column at the handle's version, stores it
// (docs/format.md §2.8) and returns its description. It runs the steps
// of a distributed build (Train, EncodePart, MergeLists, Commit) in this
// process: it reads a sample, then the rows part by part (Trained.Parts),
// so that it holds about four parts' vectors (PartBytes) at a time, not
// the column. Building again for the same version, column and metric
// replaces the stored index.
func Build(ctx context.Context, ds *loch.Dataset, column string, opts BuildOptions) (*Info, error) {
	fail := func(err error) (*Info, error) {
		return nil, fmt.Errorf("index %s column %q: %w", ds.URL(), column, err)
	}
	par := Options{Parallelism: opts.Parallelism}.parallelism()
	mo, err := train1(ctx, ds, column, opts)
	if err != nil {
		return fail(err)
	}
	c, err := openColumn(ctx, ds.Scan(), column, par)
	if err != nil {
		return fail(err)
	}
	t, store := mo.t, ds.Store()
	parts := make([]*Part, len(t.Parts))
	for i, r := range t.Parts {
		if parts[i], err = mo.encodePart(ctx, store, c, r[0], r[1], par); err != nil {
			return fail(err)
		}
	}
	merged, err := mergeFreeing(ctx, store, t, parts, par)
	if err != nil {
		return fail(err)
	}
	info, _, err := writeDescriptor(ctx, ds, t, parts, merged)
	if err != nil {
		return fail(err)
	}
	return info, nil
}

// mergeSteps is the number of ranges of lists Build merges one after
// another.
const mergeSteps = 16

// mergeFreeing merges the parts' lists (MergeLists) range by range and
// deletes each range's merged shares (deleteMerged) before the next, so
// that the store holds the parts' objects and one range's merged lists
// beside them, not the index twice (at 10M x 128, 5 GB less). The shares
// are this build's own: no descriptor names them unless another index
// holds the same bytes, which deleteMerged checks.
func mergeFreeing(ctx context.Context, store storage.Store, t *Trained, parts []*Part, par int) ([]PartList, error) {
	var merged []PartList
	step := max(1, (t.NList+mergeSteps-1)/mergeSteps)
	for lo := 0; lo < t.NList; lo += step {
		hi := min(lo+step, t.NList)
		got, err := MergeLists(ctx, store, t, parts, lo, hi, Options{Parallelism: par})
		if err != nil {
			return nil, err
		}
		kept := map[string]bool{}
		shares := make([]*Part, len(parts))
		for i, p := range parts {
			shares[i] = &Part{Lists: slices.DeleteFunc(slices.Clone(p.Lists), func(e PartList) bool { return e.List < lo || e.List >= hi })}
		}
		for _, e := range got {
			kept[e.Key] = true
		}
		deleteMerged(ctx, store, shares, kept)
		merged = append(merged, got...)
	}
	return merged, nil
}

func newLists(nlist int) *lists {
	return &lists{ids: make([][]uint64, nlist), vecs: make([][]float32, nlist)}
}

// sample reads the vectors of about size rows at random positions, in
// row id order.
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
	parts := make([]*lists, par)
	for w := range parts {
		parts[w] = newLists(1)
	}
	err := c.each(ctx, ranges, nil, par, func(w int, b batch) error {
		parts[w].ids[0] = append(parts[w].ids[0], b.ids...)
		parts[w].vecs[0] = append(parts[w].vecs[0], b.vecs...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// In row id order: which worker read which rows varies from run to
	// run, and the trained centroids must not.
	all := newLists(1)
	for _, p := range parts {
		all.ids[0], all.vecs[0] = append(all.ids[0], p.ids[0]...), append(all.vecs[0], p.vecs[0]...)
		p.ids[0], p.vecs[0] = nil, nil
	}
	all.sortList(0, c.dim)
	return all.vecs[0], nil
}

// assign streams the rows of ranges (those keep accepts), assigns each to
// its nearest centroid and appends it to ls; for cosine the vectors are
// stored normalized. Lists end sorted by row id. Each batch is kept as
// read with its rows' lists, and the lists are filled once every row is
// assigned, each allocated at its size (no list grows by appends).
func (c *column) assign(ctx context.Context, m Metric, q *quantizer, ranges [][2]int64, keep func(uint64) bool, par int, ls *lists) error {
	dim := c.dim
	got := make([][]assignedBatch, par)
	scratch := make([][]float32, par)
	grouped := make([]*groupScratch, par)
	err := c.each(ctx, ranges, keep, par, func(w int, b batch) error {
		if m == Cosine {
			normalize(b.vecs, dim)
		}
		a := assignedBatch{ids: slices.Clone(b.ids), vecs: slices.Clone(b.vecs), near: make([]int32, len(b.ids))}
		if q.exact != nil {
			scratch[w] = q.exact.nearestAll(a.vecs, a.near, scratch[w])
		} else {
			grouped[w] = q.nearestAll(a.vecs, a.near, grouped[w])
		}
		got[w] = append(got[w], a)
		return nil
	})
	if err != nil {
		return err
	}
	ls.fill(slices.Concat(got...), dim)
	return nil
}

// assignedBatch is a batch of rows and each row's list.
type assignedBatch struct {
	ids  []uint64
	vecs []float32
	near []int32
}

// fill appends the batches' rows to their lists, batches in the order of
// their first row ids (so that lists come out sorted when the batches'
// ids do not interleave; sortList sorts the others), and frees each
// batch once copied.
func (ls *lists) fill(bs []assignedBatch, dim int) {
	slices.SortFunc(bs, func(a, b assignedBatch) int { return cmp.Compare(a.ids[0], b.ids[0]) })
	cnt := make([]int, len(ls.ids))
	for _, b := range bs {
		for _, l := range b.near {
			cnt[l]++
		}
	}
	for l, n := range cnt {
		if n > 0 {
			ls.ids[l] = slices.Grow(ls.ids[l], n)
			ls.vecs[l] = slices.Grow(ls.vecs[l], n*dim)
		}
	}
	for i := range bs {
		b := &bs[i]
		for r, l := range b.near {
			ls.ids[l] = append(ls.ids[l], b.ids[r])
			ls.vecs[l] = append(ls.vecs[l], b.vecs[r*dim:(r+1)*dim]...)
		}
		*b = assignedBatch{}
	}
	for l, n := range cnt {
		if n > 0 {
			ls.sortList(l, dim)
		}
	}
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
	if ls.codes != nil {
		m := len(ls.codes[l]) / max(len(ids), 1)
		ncodes := make([]byte, len(ls.codes[l]))
		for i, o := range order {
			copy(ncodes[i*m:], ls.codes[l][o*m:(o+1)*m])
		}
		ls.codes[l] = ncodes
	}
}

// putParallelism bounds concurrent puts of an index's objects.
const putParallelism = 8

// write stores the centroids (and for ivf-pq the codebook) and lists,
// then the descriptor naming them, covering every fragment of c's
// snapshot. p is nil for ivf-flat.
func write(ctx context.Context, store storage.Store, c *column, m Metric, cents []float32, p *pq, ls *lists, base string, unchanged map[int]string) (*Info, error) {
	d, err := newDescriptor(ctx, c, m, base)
	if err != nil {
		return nil, err
	}
	objs := map[string][]byte{}
	centObj := vindex.EncodeVectors(vindex.KindCentroids, &vindex.Vectors{Dim: c.dim, Data: cents})
	d.Centroids = vindex.VectorsKey(centObj)
	objs[d.Centroids] = centObj
	if p != nil {
		bookObj := vindex.EncodeVectors(vindex.KindCodebook, &vindex.Vectors{Dim: c.dim, Data: p.book})
		d.Type, d.M, d.Codebook = vindex.TypePQ, p.m, vindex.VectorsKey(bookObj)
		objs[d.Codebook] = bookObj
	}
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
		var obj []byte
		if p != nil {
			obj = vindex.EncodePQList(&vindex.PQList{Dim: c.dim, M: p.m, IDs: ls.ids[l], Codes: ls.codes[l], Data: ls.vecs[l]})
		} else {
			obj = vindex.EncodeVectors(vindex.KindList, &vindex.Vectors{Dim: c.dim, IDs: ls.ids[l], Data: ls.vecs[l]})
		}
		key := vindex.VectorsKey(obj)
		d.Lists[l] = vindex.List{Key: key, Rows: n}
		objs[key] = obj
	}
	bytes, err := putAll(ctx, store, objs)
	if err != nil {
		return nil, err
	}
	obj, err := vindex.EncodeDescriptor(d)
	if err != nil {
		return nil, err
	}
	key := keys.MakeIndex(d.Version, d.UID, d.Metric)
	if err := store.Put(ctx, key, obj); err != nil {
		return nil, fmt.Errorf("write index: %w", err)
	}
	return infoOf(key, d, bytes+int64(len(obj))), nil
}

// infoOf describes a descriptor.
func infoOf(key string, d *vindex.Descriptor, bytes int64) *Info {
	return &Info{Key: key, Version: d.Version, Column: d.Column, Metric: Metric(d.Metric), Dim: d.Dim, Rows: d.Rows,
		NList: len(d.Lists), Type: d.Type, M: d.M, Base: d.Base, Bytes: bytes}
}

// newDescriptor starts the descriptor of an ivf-flat index of c's
// snapshot, covering its every fragment.
func newDescriptor(ctx context.Context, c *column, m Metric, base string) (*vindex.Descriptor, error) {
	h := vindex.Header{Version: c.sc.Version(), Column: c.col.Name, UID: c.col.UID, Metric: string(m), Type: vindex.TypeFlat}
	d := &vindex.Descriptor{Header: h, Dim: c.dim, DType: c.col.DType.String(), Base: base, Time: time.Now().UTC()}
	for k, f := range c.sc.Fragments() {
		digest, err := c.sc.ColumnChunks(ctx, k, c.col.UID)
		if err != nil {
			return nil, err
		}
		d.Covered = append(d.Covered, vindex.Covered{Key: f.Key, IDStart: f.IDStart, Extensions: f.Extensions, Chunks: digest})
	}
	return d, nil
}

// putAll puts the objects, putParallelism at a time, and returns their
// bytes.
func putAll(ctx context.Context, store storage.Store, objs map[string][]byte) (int64, error) {
	var bytes int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(putParallelism)
	for key, obj := range objs {
		bytes += int64(len(obj))
		g.Go(func() error { return store.Put(gctx, key, obj) })
	}
	if err := g.Wait(); err != nil {
		return 0, fmt.Errorf("write index: %w", err)
	}
	return bytes, nil
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
		return infoOf(ix.key, d, 0), nil
	}
	if ix.pqx != nil {
		info, err := ix.updatePQ(ctx, ds.Store(), opts)
		if err != nil {
			return nil, fmt.Errorf("update index of %s column %q: %w", ds.URL(), column, err)
		}
		return info, nil
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
		q := newQuantizer(m, ix.cents, d.Dim, 0, opts.parallelism())
		if err := ix.c.assign(ctx, m, q, ix.uncovered, nil, opts.parallelism(), ix.ls); err != nil {
			return nil, fmt.Errorf("update index of %s column %q: %w", ds.URL(), column, err)
		}
	}
	for l := range ix.ls.ids {
		if len(ix.ls.ids[l]) != before[l] {
			delete(unchanged, l)
		}
	}
	info, err := write(ctx, ds.Store(), ix.c, m, ix.cents, nil, ix.ls, d.Version, unchanged)
	if err != nil {
		return nil, fmt.Errorf("update index of %s column %q: %w", ds.URL(), column, err)
	}
	return info, nil
}
