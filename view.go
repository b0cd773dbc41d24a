package loch

import (
	"context"
	"fmt"
	"sort"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch/chunk"
	"github.com/lochdata/loch/manifest"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// View is an immutable view of one snapshot at chunk granularity, for
// subsystems that schedule their own reads (the streaming loader). It is
// safe for concurrent use once Load has returned.
type View struct {
	d *Dataset
	s *snapshot
}

// View returns a chunk-level view of the handle's current snapshot.
func (d *Dataset) View() *View { return &View{d: d, s: d.current()} }

// Version is the snapshot's id.
func (v *View) Version() string { return v.s.commitID }

// Len is the number of live rows.
func (v *View) Len() int64 { return v.s.man.Rows }

// Schema returns a copy of the snapshot's schema.
func (v *View) Schema() schema.Schema { return v.s.man.Schema.Clone() }

// Store is the dataset's store.
func (v *View) Store() storage.Store { return v.d.store }

// Load reads every fragment object of the snapshot, in parallel. The other
// methods of View need it.
func (v *View) Load(ctx context.Context, parallelism int) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(parallelism, 1))
	for _, f := range v.s.frags {
		g.Go(func() error { return f.load(gctx, v.d) })
	}
	return g.Wait()
}

// Fragments is the number of fragments.
func (v *View) Fragments() int { return len(v.s.frags) }

// FragmentStart returns the position of fragment k's first live row and its
// number of live rows.
func (v *View) FragmentStart(k int) (start, live int64) {
	return v.s.cum[k], v.s.cum[k+1] - v.s.cum[k]
}

// Locate maps a row position to its fragment and physical offset.
func (v *View) Locate(pos int64) (frag int, off int64, err error) {
	if pos < 0 || pos >= v.s.man.Rows {
		return 0, 0, fmt.Errorf("row %d of %s out of range [0, %d): %w", pos, v.d.url, v.s.man.Rows, ErrNotFound)
	}
	k := sort.Search(len(v.s.frags), func(k int) bool { return v.s.cum[k+1] > pos })
	return k, physical(v.s.frags[k].deleted, pos-v.s.cum[k]), nil
}

// Position maps a fragment's physical offset back to a row position, or -1
// when that row is deleted.
func (v *View) Position(frag int, off int64) int64 {
	f := v.s.frags[frag]
	if f.isDeleted(off) {
		return -1
	}
	n := int64(sort.Search(len(f.deleted), func(x int) bool { return f.deleted[x] >= off }))
	return v.s.cum[frag] + off - n
}

// RowID returns the stable id of the row at fragment offset off.
func (v *View) RowID(frag int, off int64) uint64 { return v.s.frags[frag].rowID(off) }

// Chunks returns the chunk references of a column in fragment frag, in row
// order (nil when the column is empty there). The slice is shared: do not
// modify it.
func (v *View) Chunks(frag int, uid int) []manifest.ChunkRef { return v.s.frags[frag].cols[uid] }

// ChunkIndex returns the index in Chunks(frag, uid) of the chunk holding
// offset off (the first piece, for a split sample), or -1 when the column is
// empty in the fragment.
func (v *View) ChunkIndex(frag int, uid int, off int64) int {
	refs := v.s.frags[frag].cols[uid]
	if len(refs) == 0 {
		return -1
	}
	return searchRef(refs, off)
}

// FetchChunk reads and decodes a whole chunk, verifying its checksums and
// that it matches its reference. It does not use the Dataset's read cache.
func (v *View) FetchChunk(ctx context.Context, ref manifest.ChunkRef) (*chunk.Chunk, error) {
	return v.d.ReadChunk(ctx, ref)
}

// DecodeChunk verifies and decodes chunk bytes obtained elsewhere (from a
// cache) against their reference.
func DecodeChunk(obj []byte, ref manifest.ChunkRef) (*chunk.Chunk, error) {
	ch, err := chunk.Decode(obj, nil)
	if err != nil {
		return nil, classify(err, "read chunk %s", ref.Key)
	}
	if err := checkHeader(ch.Header, ref); err != nil {
		return nil, err
	}
	return ch, nil
}

// Deleted returns the sorted offsets of deleted rows in fragment frag. The
// slice is shared: do not modify it.
func (v *View) Deleted(frag int) []int64 { return v.s.frags[frag].deleted }
