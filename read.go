package loch

import (
	"context"
	"errors"
	"fmt"

	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/schema"
)

// ColumnReader reads the samples of one column of a Dataset's snapshot
// (schema.Column is the column's definition, which Info returns). It is safe for
// concurrent use and stays bound to the snapshot it was made from, even if
// the Dataset later commits or refreshes.
type ColumnReader struct {
	d    *Dataset
	snap *snapshot
	col  schema.Column
}

// Column returns a reader of the named column at the handle's snapshot.
func (d *Dataset) Column(name string) (*ColumnReader, error) {
	s := d.current()
	c, err := s.column(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.url, err)
	}
	return &ColumnReader{d: d, snap: s, col: *c}, nil
}

// Info returns the column's schema entry with its statistics.
func (c *ColumnReader) Info() schema.Column { return c.col }

// Len is the number of rows.
func (c *ColumnReader) Len() int64 { return c.snap.man.Rows }

// Read returns the sample at row position i, decoded: png/jpeg images as
// HWC uint8 pixels. If buf has room, the sample's Data aliases buf;
// otherwise Data is newly allocated. Either way the caller owns it.
func (c *ColumnReader) Read(ctx context.Context, i int64, buf []byte) (Sample, error) {
	s, err := c.read(ctx, i, false)
	if err != nil || s.Null {
		return s, err
	}
	if err := s.CheckDecode(); err != nil {
		return Sample{}, fmt.Errorf("%s: column %q row %d: %w", c.d.url, c.col.Name, i, err)
	}
	n := s.DecodedLen()
	if buf == nil || cap(buf) < n {
		buf = make([]byte, n) // Data is never nil for a sample that is not null
	}
	out, err := s.DecodeInto(buf[:n])
	if err != nil {
		return Sample{}, fmt.Errorf("%s: column %q row %d: %w", c.d.url, c.col.Name, i, err)
	}
	return out, nil
}

// ReadEncoded returns the sample at row position i as stored: for png/jpeg
// columns the encoded image (Encoding set, Shape the decoded shape). The
// caller owns Data.
func (c *ColumnReader) ReadEncoded(ctx context.Context, i int64) (Sample, error) {
	s, err := c.read(ctx, i, false)
	if err != nil || s.Null {
		return s, err
	}
	s.Data = append([]byte{}, s.Data...)
	return s, nil
}

// ReadRange returns the samples at positions [start, end), decoded as by
// Read. Whole chunks are fetched, once each.
func (c *ColumnReader) ReadRange(ctx context.Context, start, end int64) ([]Sample, error) {
	return c.readRange(ctx, start, end, true)
}

// ReadEncodedRange returns the samples at positions [start, end) as stored
// (see ReadEncoded), fetching whole chunks once each.
func (c *ColumnReader) ReadEncodedRange(ctx context.Context, start, end int64) ([]Sample, error) {
	return c.readRange(ctx, start, end, false)
}

func (c *ColumnReader) readRange(ctx context.Context, start, end int64, decode bool) ([]Sample, error) {
	if start < 0 || end > c.Len() || start > end {
		return nil, fmt.Errorf("%s: column %q: range [%d, %d) outside [0, %d): %w", c.d.url, c.col.Name, start, end, c.Len(), ErrInvalidArgument)
	}
	out := make([]Sample, 0, end-start)
	for i := start; i < end; i++ {
		s, err := c.read(ctx, i, true)
		if err != nil {
			return nil, err
		}
		if !s.Null {
			if decode {
				s, err = s.Decode()
			} else {
				s.Data = append([]byte{}, s.Data...)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: column %q row %d: %w", c.d.url, c.col.Name, i, err)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// read returns sample i as stored. Its Data may alias the Dataset's chunk
// cache: the caller copies before handing it out. whole prefers reading
// (and caching) whole chunks over single-sample range reads.
func (c *ColumnReader) read(ctx context.Context, i int64, whole bool) (Sample, error) {
	f, off, err := c.d.position(ctx, c.snap, i)
	if err != nil {
		return Sample{}, err
	}
	refs := f.cols[c.col.UID]
	if len(refs) == 0 {
		return Sample{Null: true}, nil
	}
	s, err := c.d.readCached(ctx, refs, searchRef(refs, off), off, whole)
	if err != nil {
		return Sample{}, fmt.Errorf("%s: column %q row %d: %w", c.d.url, c.col.Name, i, err)
	}
	return s, nil
}

// readCached reads the sample at fragment offset off from chunk refs[k]
// (or the split sample starting there) through the Dataset's in-memory
// chunk cache. Unless whole is set, a sample of a chunk worth reading by
// range (spanWorth) is read with its blocks alone.
func (d *Dataset) readCached(ctx context.Context, refs []manifest.ChunkRef, k int, off int64, whole bool) (Sample, error) {
	ref := refs[k]
	if ref.Parts > 0 {
		got := make([]*Fetched, ref.Parts)
		for p := range got {
			var err error
			if got[p], err = d.cachedChunk(ctx, refs[k+p]); err != nil {
				return Sample{}, err
			}
		}
		return assemble(refs[k:k+ref.Parts], got)
	}
	j := int(off - ref.First)
	if e := d.chunks.get(ref.Key); e != nil && e.chunk != nil {
		return (&Fetched{ch: e.chunk, key: ref.Key}).sample(ref, j)
	}
	if !whole && d.spanWorth(ref) {
		f, err := (&chunkReader{d: d}).span(ctx, ref, j, j+1)
		if err == nil {
			return f.sample(ref, j)
		}
		if !errors.Is(err, errWhole) {
			return Sample{}, err
		}
	}
	f, err := d.cachedChunk(ctx, ref)
	if err != nil {
		return Sample{}, err
	}
	return f.sample(ref, j)
}

// readSample reads sample j of chunk refs[k] (or the split sample starting
// there) as stored, into memory the caller owns.
func (d *Dataset) readSample(ctx context.Context, refs []manifest.ChunkRef, k int, j int64, whole bool) (Sample, error) {
	s, err := d.readCached(ctx, refs, k, refs[k].First+j, whole)
	if err == nil && !s.Null {
		s.Data = append([]byte{}, s.Data...)
	}
	return s, err
}

// cachedChunk reads a whole chunk through the Dataset's in-memory cache.
// A chunk with damaged blocks is not cached.
func (d *Dataset) cachedChunk(ctx context.Context, ref manifest.ChunkRef) (*Fetched, error) {
	if e := d.chunks.get(ref.Key); e != nil && e.chunk != nil {
		return &Fetched{ch: e.chunk, key: ref.Key}, nil
	}
	f, err := (&chunkReader{d: d}).whole(ctx, ref)
	if err != nil {
		return nil, err
	}
	if !f.ch.Salvaged {
		d.chunks.put(ref.Key, f.ch, nil)
	}
	return f, nil
}
