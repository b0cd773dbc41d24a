package fts

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/internal/colscan"
	"github.com/lochdata/loch/internal/ftsindex"
	"github.com/lochdata/loch/internal/vindex"
	"github.com/lochdata/loch/vector"
)

// ErrNoIndex: no stored full-text index covers the version (an
// ancestor's would do). It matches loch.ErrNotFound.
var ErrNoIndex = fmt.Errorf("no full-text index: %w", loch.ErrNotFound)

// Options tune searches.
type Options struct {
	// Parallelism is the number of goroutines that analyse rows the index
	// does not cover; 0 means GOMAXPROCS.
	Parallelism int
	// Cache, when set, is the chunk cache segments are read through.
	Cache chunkcache.Cache
	// Allow, when set, restricts the results to its rows (applied before
	// the top k is taken).
	Allow *vector.RowSet
}

func (o Options) parallelism() int {
	if o.Parallelism > 0 {
		return o.Parallelism
	}
	return runtime.GOMAXPROCS(0)
}

// Index is a full-text index opened for one version of a dataset: its
// stored segments, read by range, the rows valid in that version, and a
// segment in memory of the live rows the stored ones do not cover. Safe
// for concurrent searches.
type Index struct {
	key    string // "" when no stored index serves the version
	desc   *ftsindex.Descriptor
	c      *column
	segs   []*segReader
	valid  *vector.RowSet // rows of the stored segments valid in the version
	docs   int64          // N: the segments' docs
	tokens int64
	nUncov int64
	maxID  uint64 // the largest row id a segment holds
	// allValid: every row the stored segments hold is valid (no check).
	allValid bool
}

// Find returns the key of the full-text index of column that serves the
// handle's version: its own, else its newest ancestor's (in Dataset.Log
// order). It is ErrNoIndex when there is none.
func Find(ctx context.Context, ds *loch.Dataset, column string) (string, error) {
	key, _, err := colscan.FindIndex(ctx, ds, "full-text index", column, ftsindex.Metric)
	if err != nil || key != "" {
		return key, err
	}
	return "", fmt.Errorf("%s column %q at version %s: %w", ds.URL(), column, ds.Version(), ErrNoIndex)
}

// Open opens the full-text index of column that serves the handle's
// version (see Find): it reads each segment's footer, block index and
// row ids, finds the rows valid in the version (docs/format.md §2.9,
// coverage) and analyses the live rows the segments do not cover into a
// segment in memory. A descriptor or segment that is missing or corrupt
// is an error naming its key (ErrNotFound, ErrCorrupt); Search then
// searches exactly.
func Open(ctx context.Context, ds *loch.Dataset, column string, opts Options) (*Index, error) {
	key, err := Find(ctx, ds, column)
	if err != nil {
		return nil, err
	}
	c, err := openColumn(ctx, ds.Scan(), column, opts.parallelism())
	if err != nil {
		return nil, err
	}
	obj, err := ds.Store().Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("open full-text index of %s: %w", ds.URL(), err)
	}
	d, err := ftsindex.DecodeDescriptor(key, obj)
	if err != nil {
		return nil, err
	}
	ix := &Index{key: key, desc: d, c: c, segs: make([]*segReader, len(d.Segments)), docs: d.Docs, tokens: d.Tokens}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, s := range d.Segments {
		g.Go(func() error {
			r := &storeRanger{store: ds.Store(), cache: opts.Cache, key: s.Key, size: s.Bytes}
			seg, err := openSegment(gctx, s.Key, r, s.Bytes)
			if err == nil && (int64(seg.f.Docs) != s.Docs || int64(seg.f.Tokens) != s.Tokens) {
				err = fmt.Errorf("full-text segment %s: %d docs and %d tokens, descriptor says %d and %d: %w", s.Key, seg.f.Docs, seg.f.Tokens, s.Docs, s.Tokens, loch.ErrCorrupt)
			}
			ix.segs[i] = seg
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("open full-text index %s of %s: %w", key, ds.URL(), err)
	}
	if err := ix.cover(ctx, opts); err != nil {
		return nil, fmt.Errorf("open full-text index %s of %s: %w", key, ds.URL(), err)
	}
	return ix, nil
}

// openExact is an Index of no stored segments: every live row analysed.
func openExact(ctx context.Context, ds *loch.Dataset, column string, opts Options) (*Index, error) {
	c, err := openColumn(ctx, ds.Scan(), column, opts.parallelism())
	if err != nil {
		return nil, err
	}
	ix := &Index{c: c}
	if err := ix.cover(ctx, opts); err != nil {
		return nil, err
	}
	return ix, nil
}

// cover finds the rows of the stored segments that are valid in the
// version, and analyses the live rows they do not hold into a segment in
// memory.
func (ix *Index) cover(ctx context.Context, opts Options) error {
	var list []vindex.Covered
	if ix.desc != nil {
		list = ix.desc.Covered
	}
	valid, uncovered, n, err := colscan.Cover(ctx, ix.c.sc, ix.c.col.UID, list, ix.stored)
	if err != nil {
		return err
	}
	ix.nUncov += n
	ix.valid = vector.NewRowSet(valid)
	if ix.desc != nil {
		ix.allValid = int64(ix.valid.Len()) == ix.desc.Docs
	}
	defer func() {
		for _, s := range ix.segs {
			ix.maxID = max(ix.maxID, s.maxID())
		}
	}()
	if len(uncovered) == 0 {
		return nil
	}
	b, err := ix.c.analyze(ctx, uncovered, nil, opts.parallelism())
	if err != nil {
		return err
	}
	obj := b.Encode()
	seg, err := openSegment(ctx, "(rows not covered)", memRanger(obj), int64(len(obj)))
	if err != nil {
		return err
	}
	seg.all = true
	ix.segs = append(ix.segs, seg)
	ix.docs += int64(b.Docs())
	ix.tokens += int64(b.Tokens())
	return nil
}

// stored reports whether a stored segment analysed row id.
func (ix *Index) stored(id uint64) bool {
	return slices.ContainsFunc(ix.segs, func(s *segReader) bool { return !s.all && s.holds(id) })
}

// Key is the key of the index's descriptor; "" for an exact search.
func (ix *Index) Key() string { return ix.key }

// Uncovered is the number of live rows the stored segments do not hold
// (analysed when the index was opened).
func (ix *Index) Uncovered() int64 { return ix.nUncov }

// isUnusable reports whether err says a stored index could not be read.
func isUnusable(err error) bool {
	return errors.Is(err, loch.ErrCorrupt) || errors.Is(err, loch.ErrNotFound) || errors.Is(err, loch.ErrNewerFormat)
}
