package vector

import (
	"context"
	"fmt"
	"math"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/vindex"
	"github.com/lochdata/loch/storage"
)

// An index is built in four steps, which Build runs in one process and
// which processes of a cluster can share (python/loch/ray.py's
// create_index): Train, on one machine, trains the centroids (and an
// ivf-pq index's codebook) on a sample, stores them and plans the row
// ranges; EncodePart, for one range, assigns its rows to their lists and
// stores each non-empty list's share as an ordinary list object;
// MergeLists, for a range of lists, stores each list as one object (a
// list that only one part holds keeps that part's object); Commit writes
// the descriptor, the only object a reader looks for, once. Until Commit
// nothing is visible: the objects written are content-addressed vectors
// objects that no descriptor names, which `loch gc` deletes after its
// grace period, so a step that fails leaves nothing committed and a step
// that is run again writes the same objects under the same keys.

// TrainedFormat is the version of Trained's JSON.
const TrainedFormat = 1

// Trained is a trained index, not yet committed: what the other steps
// need, small enough to pass to every task as JSON.
type Trained struct {
	Format    int    `json:"format"`
	Dataset   string `json:"dataset"` // informative: the dataset's URL
	Version   string `json:"version"`
	Column    string `json:"column"`
	UID       int    `json:"uid"`
	Metric    Metric `json:"metric"`
	Kind      string `json:"kind"`
	Dim       int    `json:"dim"`
	NList     int    `json:"nlist"`
	M         int    `json:"m,omitempty"`
	Seed      uint64 `json:"seed"`
	Centroids string `json:"centroids"`
	Codebook  string `json:"codebook,omitempty"`
	// Rows is the number of row positions of the version; Parts the
	// planned position ranges [start, stop), each about PartBytes of
	// vectors, which together are [0, Rows).
	Rows  int64      `json:"rows"`
	Parts [][2]int64 `json:"parts"`
	// Bytes is the size of the centroids and codebook objects.
	Bytes int64 `json:"bytes"`
}

// PartList is one list's share of a part (or, from MergeLists, the whole
// list): its vectors object and its rows.
type PartList struct {
	List int    `json:"list"`
	Key  string `json:"key"`
	Rows int    `json:"rows"`
}

// Part is what EncodePart stored for the positions [Start, Stop) of
// Version: the non-empty lists' shares, by list.
type Part struct {
	Version string     `json:"version"`
	Start   int64      `json:"start"`
	Stop    int64      `json:"stop"`
	Lists   []PartList `json:"lists"`
}

// PartBytes is the bytes of vectors (float32) that a planned part holds
// (1M x 128 is one part): it bounds a build's memory, about twice this.
const PartBytes = 512 << 20

// trainedModel is a trained index in memory: the centroids, their quantizer and
// the product quantizer (nil for ivf-flat).
type trainedModel struct {
	t     *Trained
	cents []float32
	q     *quantizer
	p     *pq
}

// Train samples the column at the handle's version, trains the centroids
// (and for ivf-pq the codebook) as Build does, stores them and returns
// the trained index with its parts planned.
func Train(ctx context.Context, ds *loch.Dataset, column string, opts BuildOptions) (*Trained, error) {
	mo, err := train1(ctx, ds, column, opts)
	if err != nil {
		return nil, fmt.Errorf("index %s column %q: %w", ds.URL(), column, err)
	}
	return mo.t, nil
}

// train1 is Train, returning the trainedModel.
func train1(ctx context.Context, ds *loch.Dataset, column string, opts BuildOptions) (*trainedModel, error) {
	m, err := opts.metric()
	if err != nil {
		return nil, err
	}
	kind, err := ParseKind(opts.Kind)
	if err != nil {
		return nil, err
	}
	par := Options{Parallelism: opts.Parallelism}.parallelism()
	sc := ds.Scan()
	c, err := openColumn(ctx, sc, column, par)
	if err != nil {
		return nil, err
	}
	n := sc.Len()
	nlist := opts.NList
	if nlist <= 0 {
		nlist = DefaultNList(n)
	}
	sample, err := c.sample(ctx, min(int64(sampleSize(opts, nlist)), n), opts.Seed, par)
	if err != nil {
		return nil, err
	}
	got := len(sample) / c.dim
	if got == 0 {
		return nil, fmt.Errorf("no rows with a vector to train on: %w", loch.ErrInvalidArgument)
	}
	if m == Cosine {
		normalize(sample, c.dim)
	}
	iters := opts.Iterations
	if iters <= 0 {
		iters = 10
	}
	cents := train(m, sample, c.dim, min(nlist, got), iters, opts.Seed, par)
	t := &Trained{Format: TrainedFormat, Dataset: ds.URL(), Version: sc.Version(), Column: c.col.Name, UID: c.col.UID,
		Metric: m, Kind: kind, Dim: c.dim, NList: len(cents) / c.dim, Seed: opts.Seed, Rows: n, Parts: planParts(n, c.dim, opts.PartRows)}
	mo := &trainedModel{t: t, cents: cents, q: newQuantizer(m, cents, c.dim, opts.Seed, par)}
	if kind == KindPQ {
		if mo.p, err = trainResidualPQ(m, sample, c.dim, opts.M, mo.q, iters, opts.Seed, par); err != nil {
			return nil, err
		}
		t.M = mo.p.m
	}
	if err := mo.store(ctx, ds.Store()); err != nil {
		return nil, err
	}
	return mo, nil
}

// DefaultNList is the number of lists of an index of n rows unless told:
// 4 x sqrt(n) (the low end of faiss's 4-16 x sqrt(N)), at most
// twoLevelAbove, where training and assignment stay one matrix product
// against every centroid. At 200,000 x 128 (a mixture of 2,000
// components) 4 x sqrt(N) lists reached recall@10 0.98-0.999 where sqrt(N)
// lists reached 0.65-0.89 scanning the same share of the rows
// (bench/RESULTS.md), for 4.6x the build's CPU.
func DefaultNList(n int64) int {
	return min(max(1, int(math.Round(4*math.Sqrt(float64(n))))), twoLevelAbove)
}

// sampleSize is the number of rows k-means trains on (BuildOptions.Sample).
func sampleSize(opts BuildOptions, nlist int) int {
	if opts.Sample > 0 {
		return opts.Sample
	}
	return max(64*nlist, 50000)
}

// planParts splits the positions [0, n) into ranges of per rows (0:
// about PartBytes of float32 vectors of dim).
func planParts(n int64, dim int, per int64) [][2]int64 {
	if per <= 0 {
		per = max(int64(1), int64(PartBytes)/int64(4*dim))
	}
	parts := [][2]int64{}
	for lo := int64(0); lo < n; lo += per {
		parts = append(parts, [2]int64{lo, min(lo+per, n)})
	}
	return parts
}

// store puts the centroids and the codebook and records their keys.
func (mo *trainedModel) store(ctx context.Context, store storage.Store) error {
	t := mo.t
	objs := map[string][]byte{}
	centObj := vindex.EncodeVectors(vindex.KindCentroids, &vindex.Vectors{Dim: t.Dim, Data: mo.cents})
	t.Centroids = vindex.VectorsKey(centObj)
	objs[t.Centroids] = centObj
	if mo.p != nil {
		bookObj := vindex.EncodeVectors(vindex.KindCodebook, &vindex.Vectors{Dim: t.Dim, Data: mo.p.book})
		t.Codebook = vindex.VectorsKey(bookObj)
		objs[t.Codebook] = bookObj
	}
	bytes, err := putAll(ctx, store, objs)
	t.Bytes = bytes
	return err
}

// loadModel checks a trained index against the handle (its version and
// column) and reads its centroids and codebook.
func loadModel(ctx context.Context, ds *loch.Dataset, t *Trained, par int) (*trainedModel, *column, error) {
	if t == nil || t.Format != TrainedFormat {
		return nil, nil, fmt.Errorf("trained index: format %v, want %d: %w", formatOf(t), TrainedFormat, loch.ErrInvalidArgument)
	}
	if ds.Version() != t.Version {
		return nil, nil, fmt.Errorf("trained index of version %s, the handle is at %s: %w", t.Version, ds.Version(), loch.ErrInvalidArgument)
	}
	c, err := openColumn(ctx, ds.Scan(), t.Column, par)
	if err != nil {
		return nil, nil, err
	}
	if c.col.UID != t.UID || c.dim != t.Dim || c.sc.Len() != t.Rows {
		return nil, nil, fmt.Errorf("trained index of column uid %d, %d dimensions, %d rows; the version's column %q has uid %d, %d, %d: %w",
			t.UID, t.Dim, t.Rows, t.Column, c.col.UID, c.dim, c.sc.Len(), loch.ErrInvalidArgument)
	}
	store := ds.Store()
	obj, err := store.Get(ctx, t.Centroids)
	if err != nil {
		return nil, nil, err
	}
	cents, err := vindex.DecodeVectors(t.Centroids, vindex.KindCentroids, t.Dim, t.NList, obj)
	if err != nil {
		return nil, nil, err
	}
	mo := &trainedModel{t: t, cents: cents.Data, q: newQuantizer(t.Metric, cents.Data, t.Dim, t.Seed, par)}
	if t.Kind == KindPQ {
		if obj, err = store.Get(ctx, t.Codebook); err != nil {
			return nil, nil, err
		}
		book, err := vindex.DecodeVectors(t.Codebook, vindex.KindCodebook, t.Dim, -1, obj)
		if err != nil {
			return nil, nil, err
		}
		if k := book.Len(); k < 1 || k > ksub || t.M < 1 || t.Dim%t.M != 0 {
			return nil, nil, fmt.Errorf("codebook %s: %d entries, m %d: %w", t.Codebook, k, t.M, loch.ErrCorrupt)
		}
		mo.p = newPQ(t.Dim, t.M, book.Data, book.Len())
	}
	return mo, c, nil
}

func formatOf(t *Trained) any {
	if t == nil {
		return "none"
	}
	return t.Format
}

// EncodePart assigns the rows at positions [start, stop) of the trained
// version (the handle must be at it) to their lists, encodes them and
// stores each non-empty list's share as a list object. Its memory is
// about twice the range's vectors.
func EncodePart(ctx context.Context, ds *loch.Dataset, t *Trained, start, stop int64, opts Options) (*Part, error) {
	par := opts.parallelism()
	mo, c, err := loadModel(ctx, ds, t, par)
	if err == nil {
		var p *Part
		if p, err = mo.encodePart(ctx, ds.Store(), c, start, stop, par); err == nil {
			return p, nil
		}
	}
	return nil, fmt.Errorf("index part [%d, %d) of %s column %q: %w", start, stop, ds.URL(), t.Column, err)
}

func (mo *trainedModel) encodePart(ctx context.Context, store storage.Store, c *column, start, stop int64, par int) (*Part, error) {
	t := mo.t
	if start < 0 || stop < start || stop > t.Rows {
		return nil, fmt.Errorf("positions [%d, %d): want a range of [0, %d): %w", start, stop, t.Rows, loch.ErrInvalidArgument)
	}
	ls := newLists(t.NList)
	if err := c.assign(ctx, t.Metric, mo.q, [][2]int64{{start, stop}}, nil, par, ls); err != nil {
		return nil, err
	}
	if mo.p != nil {
		mo.encodeCodes(ls, par)
	}
	pl, err := putLists(ctx, store, mo.p, t.Dim, ls, allLists(t.NList), par)
	if err != nil {
		return nil, err
	}
	return &Part{Version: t.Version, Start: start, Stop: stop, Lists: pl}, nil
}

func allLists(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// encodeCodes fills ls.codes with the codes of its vectors' residuals.
func (mo *trainedModel) encodeCodes(ls *lists, par int) {
	dim := mo.t.Dim
	ls.codes = make([][]byte, len(ls.ids))
	parallelFor(len(ls.ids), par, func(_, lo, hi int) {
		w := newPQScratch()
		for l := lo; l < hi; l++ {
			ls.codes[l] = mo.p.encodeList(w, mo.cents[l*dim:(l+1)*dim], ls.vecs[l], nil)
		}
	})
}

// putLists encodes and stores the non-empty lists among which (p nil:
// ivf-flat objects), putParallelism at a time, freeing each list once
// stored; it returns them in list order.
func putLists(ctx context.Context, store storage.Store, p *pq, dim int, ls *lists, which []int, par int) ([]PartList, error) {
	out := make([]PartList, len(which))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(par, putParallelism))
	for i, l := range which {
		if len(ls.ids[l]) == 0 {
			continue
		}
		g.Go(func() error {
			var obj []byte
			if p != nil {
				obj = vindex.EncodePQList(&vindex.PQList{Dim: dim, M: p.m, IDs: ls.ids[l], Codes: ls.codes[l], Data: ls.vecs[l]})
				ls.codes[l] = nil
			} else {
				obj = vindex.EncodeVectors(vindex.KindList, &vindex.Vectors{Dim: dim, IDs: ls.ids[l], Data: ls.vecs[l]})
			}
			out[i] = PartList{List: l, Key: vindex.VectorsKey(obj), Rows: len(ls.ids[l])}
			ls.ids[l], ls.vecs[l] = nil, nil
			if err := store.Put(gctx, out[i].Key, obj); err != nil {
				return fmt.Errorf("write index: %w", err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(out, func(e PartList) bool { return e.Key == "" }), nil
}

// MergeLists stores each list l in [lo, hi) of the parts as one object
// and returns them (empty lists left out): a list that one part holds
// keeps that part's object; the others are read, merged in row id order
// and written. The parts must be of the trained index and cover its rows
// (the shares of lists outside [lo, hi) may be left out).
func MergeLists(ctx context.Context, store storage.Store, t *Trained, parts []*Part, lo, hi int, opts Options) ([]PartList, error) {
	if lo < 0 || hi < lo || hi > t.NList {
		return nil, fmt.Errorf("merge lists [%d, %d) of an index of %d lists: %w", lo, hi, t.NList, loch.ErrInvalidArgument)
	}
	if err := checkParts(t, parts); err != nil {
		return nil, fmt.Errorf("merge lists: %w", err)
	}
	shares := make([][]PartList, hi-lo)
	for _, p := range parts {
		for _, e := range p.Lists {
			if e.List >= lo && e.List < hi {
				shares[e.List-lo] = append(shares[e.List-lo], e)
			}
		}
	}
	out := make([]PartList, hi-lo)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.parallelism())
	for i, sh := range shares {
		if len(sh) == 1 {
			out[i] = sh[0]
			continue
		}
		if len(sh) > 1 {
			g.Go(func() (err error) {
				out[i], err = mergeList(gctx, store, t, sh)
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("merge lists of index of %s column %q: %w", t.Dataset, t.Column, err)
	}
	return slices.DeleteFunc(out, func(e PartList) bool { return e.Key == "" }), nil
}

// mergeList reads the shares of one list, merges them by row id and
// stores the list.
func mergeList(ctx context.Context, store storage.Store, t *Trained, shares []PartList) (PartList, error) {
	ls := newLists(1)
	if t.Kind == KindPQ {
		ls.codes = make([][]byte, 1)
	}
	for _, e := range shares {
		obj, err := store.Get(ctx, e.Key)
		if err != nil {
			return PartList{}, fmt.Errorf("read list %s: %w", e.Key, err)
		}
		if t.Kind == KindPQ {
			v, err := vindex.DecodePQList(e.Key, t.Dim, t.M, e.Rows, obj)
			if err != nil {
				return PartList{}, err
			}
			ls.ids[0], ls.vecs[0], ls.codes[0] = append(ls.ids[0], v.IDs...), append(ls.vecs[0], v.Data...), append(ls.codes[0], v.Codes...)
			continue
		}
		v, err := vindex.DecodeVectors(e.Key, vindex.KindList, t.Dim, e.Rows, obj)
		if err != nil {
			return PartList{}, err
		}
		ls.ids[0], ls.vecs[0] = append(ls.ids[0], v.IDs...), append(ls.vecs[0], v.Data...)
	}
	ls.sortList(0, t.Dim)
	var p *pq
	if t.Kind == KindPQ {
		p = &pq{m: t.M}
	}
	got, err := putLists(ctx, store, p, t.Dim, ls, []int{0}, 1)
	if err != nil {
		return PartList{}, err
	}
	got[0].List = shares[0].List
	return got[0], nil
}

// checkParts checks that the parts are of the trained version and that
// their ranges, in any order, tile [0, t.Rows): no row is missing or
// counted twice.
func checkParts(t *Trained, parts []*Part) error {
	sorted := slices.Clone(parts)
	slices.SortFunc(sorted, func(a, b *Part) int { return int(min(max(a.Start-b.Start, -1), 1)) })
	next := int64(0)
	for _, p := range sorted {
		if p == nil || p.Version != t.Version {
			return fmt.Errorf("a part of another version than the index's %s: %w", t.Version, loch.ErrInvalidArgument)
		}
		if p.Start != next || p.Stop < p.Start {
			return fmt.Errorf("parts do not tile the %d rows: [%d, %d) after %d: %w", t.Rows, p.Start, p.Stop, next, loch.ErrInvalidArgument)
		}
		for _, e := range p.Lists {
			if e.List < 0 || e.List >= t.NList || e.Rows < 1 {
				return fmt.Errorf("part [%d, %d): list %d of %d with %d rows: %w", p.Start, p.Stop, e.List, t.NList, e.Rows, loch.ErrInvalidArgument)
			}
		}
		next = p.Stop
	}
	if next != t.Rows {
		return fmt.Errorf("parts cover rows [0, %d) of %d: %w", next, t.Rows, loch.ErrInvalidArgument)
	}
	return nil
}

// Commit writes the descriptor of the index from its parts and its merged
// lists (MergeLists over every list), once every part and list agree, and
// then deletes the parts' objects that no list kept. The handle must be
// at the trained version. Building again for the same version, column
// and metric replaces the index.
func Commit(ctx context.Context, ds *loch.Dataset, t *Trained, parts []*Part, merged []PartList) (*Info, error) {
	info, err := commit(ctx, ds, t, parts, merged)
	if err != nil {
		return nil, fmt.Errorf("commit index of %s column %q: %w", ds.URL(), t.Column, err)
	}
	return info, nil
}

func commit(ctx context.Context, ds *loch.Dataset, t *Trained, parts []*Part, merged []PartList) (*Info, error) {
	info, kept, err := writeDescriptor(ctx, ds, t, parts, merged)
	if err != nil {
		return nil, err
	}
	deleteMerged(ctx, ds.Store(), parts, kept)
	return info, nil
}

// writeDescriptor checks the parts and the merged lists against each
// other and stores the index's descriptor; it returns the merged lists'
// keys, the objects the parts may not delete.
func writeDescriptor(ctx context.Context, ds *loch.Dataset, t *Trained, parts []*Part, merged []PartList) (*Info, map[string]bool, error) {
	if err := checkParts(t, parts); err != nil {
		return nil, nil, err
	}
	c, err := openColumn(ctx, ds.Scan(), t.Column, 0)
	if err != nil {
		return nil, nil, err
	}
	if ds.Version() != t.Version || c.col.UID != t.UID {
		return nil, nil, fmt.Errorf("trained for version %s column uid %d, the handle is at %s, uid %d: %w", t.Version, t.UID, ds.Version(), c.col.UID, loch.ErrInvalidArgument)
	}
	want := make([]int, t.NList)
	for _, p := range parts {
		for _, e := range p.Lists {
			want[e.List] += e.Rows
		}
	}
	d, err := newDescriptor(ctx, c, t.Metric, "")
	if err != nil {
		return nil, nil, err
	}
	d.Centroids, d.Lists = t.Centroids, make([]vindex.List, t.NList)
	if t.Kind == KindPQ {
		d.Type, d.M, d.Codebook = vindex.TypePQ, t.M, t.Codebook
	}
	bytes, kept := t.Bytes, map[string]bool{}
	for _, e := range merged {
		if e.List < 0 || e.List >= t.NList || d.Lists[e.List].Key != "" {
			return nil, nil, fmt.Errorf("merged list %d: out of range or given twice: %w", e.List, loch.ErrInvalidArgument)
		}
		d.Lists[e.List] = vindex.List{Key: e.Key, Rows: e.Rows}
		d.Rows += int64(e.Rows)
		bytes += listBytes(t, e.Rows)
		kept[e.Key] = true
	}
	for l, n := range want {
		if d.Lists[l].Rows != n {
			return nil, nil, fmt.Errorf("list %d: the parts hold %d rows, the merged list %d: %w", l, n, d.Lists[l].Rows, loch.ErrInvalidArgument)
		}
	}
	obj, err := vindex.EncodeDescriptor(d)
	if err != nil {
		return nil, nil, err
	}
	key := keys.MakeIndex(d.Version, d.UID, d.Metric)
	if err := ds.Store().Put(ctx, key, obj); err != nil {
		return nil, nil, fmt.Errorf("write index: %w", err)
	}
	return infoOf(key, d, bytes+int64(len(obj))), kept, nil
}

// listBytes is the size of a list object of n rows.
func listBytes(t *Trained, n int) int64 {
	if t.Kind == KindPQ {
		return vindex.PQListSize(t.Dim, t.M, n)
	}
	return int64(16 + 8*n + 4*n*t.Dim + 4)
}

// deleteMerged deletes the parts' objects that no list of the committed
// index names (they were merged into others) and that no other vector
// index names either (objects are content-addressed: another index may
// hold the same bytes). When a descriptor cannot be read, or a delete
// fails, the objects are left to `loch gc`.
func deleteMerged(ctx context.Context, store storage.Store, parts []*Part, kept map[string]bool) {
	var gone []string
	for _, p := range parts {
		for _, e := range p.Lists {
			if !kept[e.Key] {
				gone = append(gone, e.Key)
			}
		}
	}
	if len(gone) == 0 || namedByIndexes(ctx, store, kept) != nil {
		return
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(putParallelism)
	for _, key := range gone {
		if !kept[key] {
			g.Go(func() error {
				_ = store.Delete(gctx, key)
				return nil
			})
		}
	}
	_ = g.Wait()
}

// namedByIndexes adds to named the objects every stored vector index
// descriptor names.
func namedByIndexes(ctx context.Context, store storage.Store, named map[string]bool) error {
	var descs []string
	err := store.List(ctx, keys.Index.Prefix(), func(a storage.Attrs) error {
		if _, _, m, ok := keys.ParseIndex(a.Key); ok && vindex.KnownMetric(m) {
			descs = append(descs, a.Key)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, key := range descs {
		obj, err := store.Get(ctx, key)
		if err != nil {
			return err
		}
		d, err := vindex.DecodeDescriptor(key, obj)
		if err != nil {
			return err
		}
		for _, o := range d.Objects() {
			named[o] = true
		}
	}
	return nil
}
