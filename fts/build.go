package fts

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/internal/ftsindex"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/vindex"
)

// BuildOptions tune Build and Update.
type BuildOptions struct {
	// Parallelism is the number of goroutines that analyse rows; 0 means
	// GOMAXPROCS.
	Parallelism int
	// Cache, when set, is the chunk cache Update reads segments through.
	Cache chunkcache.Cache
}

// Info describes a stored full-text index.
type Info struct {
	// Key is the descriptor's key, indexes/<version>/<uid>.bm25.
	Key      string `json:"key"`
	Version  string `json:"version"`
	Column   string `json:"column"`
	Docs     int64  `json:"docs"`
	Tokens   int64  `json:"tokens"`
	Segments int    `json:"segments"`
	// Base is the version of the index an update started from.
	Base string `json:"base,omitempty"`
	// Bytes is the size of the objects written (an update counts only the
	// segments it wrote).
	Bytes int64 `json:"bytes"`
}

// Merge thresholds of Update (docs/format.md §2.9).
const (
	maxSegments    = 8
	maxInvalidFrac = 0.2
)

// Build analyses every row of column at the handle's version into one
// segment and stores the index (docs/format.md §2.9). It holds the
// segment in memory while it writes it. Building again for the same
// version and column replaces the stored index.
func Build(ctx context.Context, ds *loch.Dataset, column string, opts BuildOptions) (*Info, error) {
	par := Options{Parallelism: opts.Parallelism}.parallelism()
	c, err := openColumn(ctx, ds.Scan(), column, par)
	if err != nil {
		return nil, err
	}
	b, err := c.analyze(ctx, [][2]int64{{0, c.sc.Len()}}, nil, par)
	if err != nil {
		return nil, err
	}
	info, err := write(ctx, ds, c, nil, []*ftsindex.Builder{b}, "")
	if err != nil {
		return nil, fmt.Errorf("full-text index %s column %q: %w", ds.URL(), column, err)
	}
	return info, nil
}

// write stores the new segments' objects, then the descriptor naming the
// kept and the new segments, covering every fragment of c's snapshot.
func write(ctx context.Context, ds *loch.Dataset, c *column, kept []ftsindex.Segment, news []*ftsindex.Builder, base string) (*Info, error) {
	h := vindex.Header{Version: c.sc.Version(), Column: c.col.Name, UID: c.col.UID, Metric: ftsindex.Metric, Type: ftsindex.Type}
	d := &ftsindex.Descriptor{Header: h, Analyzer: ftsindex.Analyzer, DType: c.col.DType.String(), Base: base, Time: time.Now().UTC(),
		Covered: []vindex.Covered{}, Segments: append([]ftsindex.Segment{}, kept...)}
	for k, f := range c.sc.Fragments() {
		digest, err := c.sc.ColumnChunks(ctx, k, c.col.UID)
		if err != nil {
			return nil, err
		}
		d.Covered = append(d.Covered, vindex.Covered{Key: f.Key, IDStart: f.IDStart, Extensions: f.Extensions, Chunks: digest})
	}
	objs := map[string][]byte{}
	var bytes int64
	for _, b := range news {
		if b.Docs() == 0 {
			continue
		}
		obj := b.Encode()
		key := ftsindex.SegmentKey(obj)
		objs[key] = obj
		bytes += int64(len(obj))
		d.Segments = append(d.Segments, ftsindex.Segment{Key: key, Bytes: int64(len(obj)), Docs: int64(b.Docs()), Tokens: int64(b.Tokens())})
	}
	for _, s := range d.Segments {
		d.Docs += s.Docs
		d.Tokens += s.Tokens
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for key, obj := range objs {
		g.Go(func() error { return ds.Store().Put(gctx, key, obj) })
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("write full-text index: %w", err)
	}
	obj, err := ftsindex.EncodeDescriptor(d)
	if err != nil {
		return nil, err
	}
	key := keys.MakeIndex(d.Version, d.UID, ftsindex.Metric)
	if err := ds.Store().Put(ctx, key, obj); err != nil {
		return nil, fmt.Errorf("write full-text index: %w", err)
	}
	return &Info{Key: key, Version: d.Version, Column: d.Column, Docs: d.Docs, Tokens: d.Tokens, Segments: len(d.Segments),
		Base: base, Bytes: bytes + int64(len(obj))}, nil
}

// Update writes the index of the handle's version from the index that
// serves it (Find): its segments as they are and one new segment of the
// rows they do not cover; or, when that would make more than 8 segments
// or more than a fifth of their docs are no longer valid, one segment
// merged from the valid entries of all. When the index already is the
// version's, it writes nothing and returns its Info. Unlike Search,
// Update fails on a missing or corrupt index object.
func Update(ctx context.Context, ds *loch.Dataset, column string, opts BuildOptions) (*Info, error) {
	ix, err := Open(ctx, ds, column, Options{Parallelism: opts.Parallelism, Cache: opts.Cache})
	if err != nil {
		return nil, err
	}
	d := ix.desc
	if d.Version == ds.Version() {
		return &Info{Key: ix.key, Version: d.Version, Column: d.Column, Docs: d.Docs, Tokens: d.Tokens, Segments: len(d.Segments), Base: d.Base}, nil
	}
	fail := func(err error) (*Info, error) {
		return nil, fmt.Errorf("update full-text index of %s column %q: %w", ds.URL(), column, err)
	}
	var fresh *ftsindex.Builder
	if ix.nUncov > 0 {
		// The rows analysed at Open again, into a segment to store.
		last := ix.segs[len(ix.segs)-1]
		if fresh, err = segmentBuilder(ctx, last, nil); err != nil {
			return fail(err)
		}
	}
	invalid := d.Docs - int64(ix.valid.Len())
	if len(d.Segments)+1 <= maxSegments && float64(invalid) <= maxInvalidFrac*float64(max(d.Docs, 1)) {
		var news []*ftsindex.Builder
		if fresh != nil {
			news = append(news, fresh)
		}
		info, err := write(ctx, ds, ix.c, d.Segments, news, d.Version)
		if err != nil {
			return fail(err)
		}
		return info, nil
	}
	merged := ftsindex.NewBuilder()
	for _, s := range ix.segs[:len(d.Segments)] {
		b, err := segmentBuilder(ctx, s, ix.valid.Contains)
		if err != nil {
			return fail(err)
		}
		merged.Merge(b)
	}
	if fresh != nil {
		merged.Merge(fresh)
	}
	info, err := write(ctx, ds, ix.c, nil, []*ftsindex.Builder{merged}, d.Version)
	if err != nil {
		return fail(err)
	}
	return info, nil
}

// segmentBuilder reads a segment whole and returns a Builder of its
// entries whose rows keep accepts (nil: all), their norms as they were.
// A document's token count is the sum of its terms' tf (terms longer
// than MaxTerm, dropped, no longer count).
func segmentBuilder(ctx context.Context, s *segReader, keep func(uint64) bool) (*ftsindex.Builder, error) {
	obj, err := s.r.readRange(ctx, 0, int(s.f.Size))
	if err != nil {
		return nil, err
	}
	var dec *ftsindex.Decoded
	if _, mem := s.r.(memRanger); mem {
		dec, err = ftsindex.DecodeSegment(ftsindex.SegmentKey(obj), obj)
	} else {
		dec, err = ftsindex.DecodeSegment(s.key, obj)
	}
	if err != nil {
		return nil, err
	}
	b := ftsindex.NewBuilder()
	lengths := map[uint64]uint64{}
	for i, t := range dec.Terms {
		var ps []ftsindex.Posting
		var pos []uint32
		at := 0
		for _, p := range dec.Postings[i] {
			n := int(p.TF)
			if keep == nil || keep(p.ID) {
				ps = append(ps, p)
				pos = append(pos, dec.Positions[i][at:at+n]...)
				lengths[p.ID] += uint64(p.TF)
			}
			at += n
		}
		if len(ps) > 0 {
			b.AddPostings(t.Term, ps, pos)
		}
	}
	var ids []uint64
	var tokens uint64
	for _, r := range dec.Runs {
		for id := r.Start; id < r.Start+r.Len; id++ {
			if keep == nil || keep(id) {
				ids = append(ids, id)
				tokens += lengths[id]
			}
		}
	}
	if keep == nil {
		tokens = dec.Footer.Tokens
	}
	b.AddDocs(ids, tokens)
	return b, nil
}
