package loch

import (
	"context"
	"fmt"
	"sort"

	"github.com/lochdata/loch/chunk"
	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/manifest"
	"github.com/lochdata/loch/schema"
)

// Column reads one column of a Dataset's snapshot. It is safe for
// concurrent use and stays bound to the snapshot it was made from, even if
// the Dataset later commits or refreshes.
type Column struct {
	d    *Dataset
	snap *snapshot
	col  schema.Column
}

// Column returns a reader of the named column at the handle's snapshot.
func (d *Dataset) Column(name string) (*Column, error) {
	s := d.current()
	c, err := s.column(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.url, err)
	}
	return &Column{d: d, snap: s, col: *c}, nil
}

// Info returns the column's schema entry with its statistics.
func (c *Column) Info() schema.Column { return c.col }

// Len is the number of rows.
func (c *Column) Len() int64 { return c.snap.man.Rows }

// Read returns the sample at row position i, decoded: png/jpeg images as
// HWC uint8 pixels. If buf has room, the sample's Data aliases buf;
// otherwise Data is newly allocated. Either way the caller owns it.
func (c *Column) Read(ctx context.Context, i int64, buf []byte) (Sample, error) {
	s, err := c.read(ctx, i, false)
	if err != nil || s.Null {
		return s, err
	}
	if s.Encoding != schema.SampleNone && s.Encoding != "" {
		pix, shape, err := decodeImage(s)
		if err != nil {
			return Sample{}, fmt.Errorf("%s: column %q row %d: %w", c.d.url, c.col.Name, i, joinCorrupt(err))
		}
		if !equalShape(shape, s.Shape) {
			return Sample{}, fmt.Errorf("%s: column %q row %d: decoded image shape %v, header says %v: %w", c.d.url, c.col.Name, i, shape, s.Shape, ErrCorrupt)
		}
		s.Data, s.Encoding = pix, schema.SampleNone
	}
	if cap(buf) >= len(s.Data) {
		buf = buf[:len(s.Data)]
		copy(buf, s.Data)
		s.Data = buf
	}
	return s, nil
}

// ReadEncoded returns the sample at row position i as stored: for png/jpeg
// columns the encoded image (Encoding set, Shape the decoded shape). The
// caller owns Data.
func (c *Column) ReadEncoded(ctx context.Context, i int64) (Sample, error) {
	return c.read(ctx, i, false)
}

// ReadRange returns the samples at positions [start, end), decoded as by
// Read. Whole chunks are fetched, once each.
func (c *Column) ReadRange(ctx context.Context, start, end int64) ([]Sample, error) {
	out, err := c.ReadEncodedRange(ctx, start, end)
	if err != nil {
		return nil, err
	}
	for k, s := range out {
		if !s.Null && s.Encoding != schema.SampleNone && s.Encoding != "" {
			pix, _, err := decodeImage(s)
			if err != nil {
				return nil, fmt.Errorf("%s: column %q row %d: %w", c.d.url, c.col.Name, start+int64(k), joinCorrupt(err))
			}
			out[k].Data, out[k].Encoding = pix, schema.SampleNone
		}
	}
	return out, nil
}

// ReadEncodedRange returns the samples at positions [start, end) as stored
// (see ReadEncoded), fetching whole chunks once each.
func (c *Column) ReadEncodedRange(ctx context.Context, start, end int64) ([]Sample, error) {
	if start < 0 || end > c.Len() || start > end {
		return nil, fmt.Errorf("%s: column %q: range [%d, %d) outside [0, %d): %w", c.d.url, c.col.Name, start, end, c.Len(), ErrInvalidArgument)
	}
	out := make([]Sample, 0, end-start)
	for i := start; i < end; i++ {
		s, err := c.read(ctx, i, true)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// decodeImage decodes a stored png/jpeg sample to the channels its shape
// records.
func decodeImage(s Sample) ([]byte, []int, error) {
	if len(s.Shape) != 3 {
		return nil, nil, fmt.Errorf("image sample shape %v, want [height, width, channels]", s.Shape)
	}
	return imaging.DecodeAs(s.Data, s.Shape[2])
}

func joinCorrupt(err error) error { return fmt.Errorf("%w: %w", ErrCorrupt, err) }

func equalShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// read fetches sample i as stored. whole prefers reading (and caching) whole
// chunks over single-sample range reads.
func (c *Column) read(ctx context.Context, i int64, whole bool) (Sample, error) {
	f, off, err := c.d.position(ctx, c.snap, i)
	if err != nil {
		return Sample{}, err
	}
	refs := f.cols[c.col.UID]
	if len(refs) == 0 {
		return Sample{Null: true}, nil
	}
	k := sort.Search(len(refs), func(k int) bool { return refs[k].First > off }) - 1
	for k > 0 && refs[k].Parts > 0 && refs[k].Part > 0 {
		k--
	}
	ref := refs[k]
	s, err := c.d.readSample(ctx, refs, k, off-ref.First, whole)
	if err != nil {
		return Sample{}, fmt.Errorf("%s: column %q row %d: %w", c.d.url, c.col.Name, i, err)
	}
	return s, nil
}

// readSample reads sample j of chunk refs[k] (or the split sample starting
// at refs[k]) as stored.
func (d *Dataset) readSample(ctx context.Context, refs []manifest.ChunkRef, k int, j int64, whole bool) (Sample, error) {
	ref := refs[k]
	if ref.Parts > 0 {
		var data []byte
		var first *chunk.Chunk
		for p := 0; p < ref.Parts; p++ {
			ch, err := d.fetchChunk(ctx, refs[k+p])
			if err != nil {
				return Sample{}, err
			}
			if first == nil {
				first = ch
			}
			if ch.Partial.Offset != uint64(len(data)) || ch.Partial.Index != uint32(p) {
				return Sample{}, fmt.Errorf("chunk %s: piece %d out of order: %w", refs[k+p].Key, p, ErrCorrupt)
			}
			data = append(data, ch.Raw...)
		}
		if uint64(len(data)) != first.Partial.Total {
			return Sample{}, fmt.Errorf("chunk %s: split sample has %d bytes, want %d: %w", ref.Key, len(data), first.Partial.Total, ErrCorrupt)
		}
		return sampleFrom(first.Header, 0, data), nil
	}
	if j < 0 || j >= ref.Rows {
		return Sample{}, fmt.Errorf("chunk %s: sample %d outside its %d rows: %w", ref.Key, j, ref.Rows, ErrCorrupt)
	}
	if e := d.chunks.get(ref.Key); e != nil && e.chunk != nil {
		return sampleFrom(e.chunk.Header, int(j), cloneBytes(e.chunk.Sample(int(j)))), nil
	}
	if !whole {
		h, err := d.fetchHeader(ctx, ref)
		if err != nil {
			return Sample{}, err
		}
		if h.Codec == chunk.CodecNone {
			s, e := h.Range(int(j))
			a, b := h.BlockSpan(s, e)
			span := make([]byte, b-a)
			if len(span) > 0 {
				if err := d.store.ReadRange(ctx, ref.Key, a, span); err != nil {
					return Sample{}, classify(err, "read chunk %s", ref.Key)
				}
			}
			data, err := h.VerifyBlocks(span, s, e)
			if err != nil {
				return Sample{}, classify(err, "read chunk %s", ref.Key)
			}
			return sampleFrom(h, int(j), data), nil
		}
	}
	ch, err := d.fetchChunk(ctx, ref)
	if err != nil {
		return Sample{}, err
	}
	return sampleFrom(ch.Header, int(j), cloneBytes(ch.Sample(int(j)))), nil
}

func cloneBytes(b []byte) []byte { return append([]byte(nil), b...) }

func sampleFrom(h *chunk.Header, j int, data []byte) Sample {
	if h.Null(j) {
		return Sample{Null: true}
	}
	if data == nil {
		data = []byte{}
	}
	s := Sample{Shape: h.Shape(j), Data: data}
	switch h.SampleCompression {
	case chunk.SamplePNG:
		s.Encoding = schema.PNG
	case chunk.SampleJPEG:
		s.Encoding = schema.JPEG
	}
	return s
}

// fetchHeader returns a chunk's parsed header with one range read (cached).
func (d *Dataset) fetchHeader(ctx context.Context, ref manifest.ChunkRef) (*chunk.Header, error) {
	if e := d.chunks.get(ref.Key); e != nil {
		return e.header, nil
	}
	buf := make([]byte, ref.Header)
	if err := d.store.ReadRange(ctx, ref.Key, 0, buf); err != nil {
		return nil, classify(err, "read chunk %s header", ref.Key)
	}
	h, err := chunk.ParseHeader(buf)
	if err != nil {
		return nil, classify(err, "read chunk %s", ref.Key)
	}
	if err := checkHeader(h, ref); err != nil {
		return nil, err
	}
	d.chunks.put(ref.Key, nil, h)
	return h, nil
}

// fetchChunk reads, verifies and decodes a whole chunk (cached).
func (d *Dataset) fetchChunk(ctx context.Context, ref manifest.ChunkRef) (*chunk.Chunk, error) {
	if e := d.chunks.get(ref.Key); e != nil && e.chunk != nil {
		return e.chunk, nil
	}
	ch, err := d.ReadChunk(ctx, ref)
	if err != nil {
		return nil, err
	}
	d.chunks.put(ref.Key, ch, nil)
	return ch, nil
}

// ReadChunk reads, verifies and decodes one whole chunk, bypassing the cache.
func (d *Dataset) ReadChunk(ctx context.Context, ref manifest.ChunkRef) (*chunk.Chunk, error) {
	obj, err := d.store.Get(ctx, ref.Key)
	if err != nil {
		return nil, classify(err, "read chunk %s", ref.Key)
	}
	return DecodeChunk(obj, ref)
}

// checkHeader verifies that a chunk agrees with the fragment's reference.
func checkHeader(h *chunk.Header, ref manifest.ChunkRef) error {
	if int64(h.N) != ref.Rows || h.Len != ref.Header || h.Size() != ref.Size || h.RawLen != ref.Raw {
		return fmt.Errorf("read chunk %s: header says %d samples, %d header bytes, %d bytes, %d raw; fragment says %d, %d, %d, %d: %w",
			ref.Key, h.N, h.Len, h.Size(), h.RawLen, ref.Rows, ref.Header, ref.Size, ref.Raw, ErrCorrupt)
	}
	return nil
}
