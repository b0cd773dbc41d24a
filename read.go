package loch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/chunk"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/schema"
)

// This file is the engine's one chunk reader: every read of chunk bytes
// (Column reads, Scan fetches, Verify) goes through readChunk,
// readSampleBlocks, assemble and Fetched.sample, which check what the
// fragment says against what the chunk says and name the chunk in every
// error (whose kind, from internal/base, callers test with errors.Is).

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
				s, err = s.DecodeInto(make([]byte, s.DecodedLen()))
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
// chunk cache.
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
		return (&Fetched{ch: e.chunk}).sample(ref, j)
	}
	if !whole && storedAsIs(ref) {
		f, err := d.readSampleBlocks(ctx, ref, j)
		if err == nil {
			return f.sample(ref, j)
		}
		if !errorsIsCompressed(err) {
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
func (d *Dataset) cachedChunk(ctx context.Context, ref manifest.ChunkRef) (*Fetched, error) {
	if e := d.chunks.get(ref.Key); e != nil && e.chunk != nil {
		return &Fetched{ch: e.chunk}, nil
	}
	f, err := d.readChunk(ctx, ref, nil)
	if err != nil {
		return nil, err
	}
	d.chunks.put(ref.Key, f.ch, nil)
	return f, nil
}

// Fetched is the result of Scan.Fetch: chunk data that has been verified
// and decoded. It is immutable and safe for concurrent use.
type Fetched struct {
	ch *chunk.Chunk // a whole chunk; nil for a sample read

	// A sample read: the chunk's header and sample index's bytes.
	hdr   *chunk.Header
	index int
	data  []byte

	// Bytes is the number of bytes read from the store (0 on a cache hit).
	Bytes int64
	// Cached reports that the bytes came from the scan's cache.
	Cached bool
	// ReadTime is the time spent reading bytes, DecodeTime the time spent
	// verifying and decoding them.
	ReadTime, DecodeTime time.Duration
	mem                  int64
}

// Whole reports whether the fetch read a whole chunk (a planned sample read
// falls back to one when the chunk's data turns out to be compressed).
func (f *Fetched) Whole() bool { return f.ch != nil }

// Len is the number of samples a whole chunk holds (1 for a sample read).
func (f *Fetched) Len() int {
	if f.ch == nil {
		return 1
	}
	return f.ch.N
}

// DataLen is the number of sample bytes the fetched data holds, after the
// chunk codec (images still encoded).
func (f *Fetched) DataLen() int64 {
	if f.ch == nil {
		return int64(len(f.data))
	}
	return int64(len(f.ch.Raw))
}

// At returns sample j (0 <= j < Len) of a whole chunk as stored, for
// readers that take every sample of a chunk in turn; Data aliases the
// fetched memory. A piece of a split sample has no samples of its own: use
// Scan.Sample.
func (f *Fetched) At(j int) (Sample, error) {
	if f.ch == nil || f.ch.Flags&chunk.FlagPartial != 0 {
		return Sample{}, fmt.Errorf("sample %d of a fetched read that is not a whole chunk: %w", j, ErrInvalidArgument)
	}
	if j < 0 || j >= f.ch.N {
		return Sample{}, fmt.Errorf("sample %d of a chunk of %d: %w", j, f.ch.N, ErrInvalidArgument)
	}
	return sampleFrom(f.ch.Header, j, f.ch.Sample(j)), nil
}

// Mem is the memory the fetched data holds.
func (f *Fetched) Mem() int64 { return f.mem }

// sample returns sample j of the fetched chunk as stored (Data aliases the
// fetched memory).
func (f *Fetched) sample(ref manifest.ChunkRef, j int) (Sample, error) {
	if f.ch == nil {
		if j != f.index {
			return Sample{}, fmt.Errorf("read chunk %s: fetched sample %d, want %d: %w", ref.Key, f.index, j, ErrInvalidArgument)
		}
		return sampleFrom(f.hdr, j, f.data), nil
	}
	if j < 0 || j >= f.ch.N {
		return Sample{}, fmt.Errorf("read chunk %s: sample %d outside its %d rows: %w", ref.Key, j, f.ch.N, ErrCorrupt)
	}
	return sampleFrom(f.ch.Header, j, f.ch.Sample(j)), nil
}

// assemble joins the pieces of a split sample, checking their order and
// total size.
func assemble(refs []manifest.ChunkRef, got []*Fetched) (Sample, error) {
	var data []byte
	first := got[0].ch
	for p, f := range got {
		if f.ch == nil {
			return Sample{}, fmt.Errorf("read chunk %s: piece %d of a split sample was read by range: %w", refs[p].Key, p, ErrInvalidArgument)
		}
		if f.ch.Partial.Offset != uint64(len(data)) || f.ch.Partial.Index != uint32(p) {
			return Sample{}, fmt.Errorf("read chunk %s: piece %d out of order: %w", refs[p].Key, p, ErrCorrupt)
		}
		data = append(data, f.ch.Raw...)
	}
	if uint64(len(data)) != first.Partial.Total {
		return Sample{}, fmt.Errorf("read chunk %s: split sample has %d bytes, want %d: %w", refs[0].Key, len(data), first.Partial.Total, ErrCorrupt)
	}
	return sampleFrom(first.Header, 0, data), nil
}

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

// DecodedLen is the number of bytes of the sample decoded: for an encoded
// image, its pixels (the product of Shape); otherwise len(Data).
func (s Sample) DecodedLen() int {
	if !s.encoded() {
		return len(s.Data)
	}
	return schema.NumElements(s.Shape)
}

func (s Sample) encoded() bool { return s.Encoding != schema.SampleNone && s.Encoding != "" }

// DecodeInto returns the sample decoded into dst, which must hold exactly
// DecodedLen bytes: png/jpeg images are decoded to HWC uint8 pixels with the
// channels Shape records, other samples are copied. The result's Data is
// dst. A sample that does not decode to its recorded shape is ErrCorrupt.
func (s Sample) DecodeInto(dst []byte) (Sample, error) {
	if len(dst) != s.DecodedLen() {
		return Sample{}, fmt.Errorf("decode sample of shape %v: buffer of %d bytes, want %d: %w", s.Shape, len(dst), s.DecodedLen(), ErrInvalidArgument)
	}
	out := Sample{Shape: s.Shape, Data: dst, Null: s.Null}
	if !s.encoded() {
		copy(dst, s.Data)
		return out, nil
	}
	if len(s.Shape) != 3 {
		return Sample{}, fmt.Errorf("image sample shape %v, want [height, width, channels]: %w", s.Shape, ErrCorrupt)
	}
	// The image must decode to the shape the chunk header records.
	if err := imaging.DecodeInto(dst, s.Data, s.Shape[0], s.Shape[1], s.Shape[2]); err != nil {
		return Sample{}, base.Mark(ErrCorrupt, fmt.Sprintf("decode image sample of shape %v", s.Shape), err)
	}
	return out, nil
}

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

// errCompressed is readSampleBlocks' answer for a chunk whose header says
// its data is compressed: the caller reads the whole chunk instead.
var errCompressed = errors.New("chunk data is compressed")

func errorsIsCompressed(err error) bool { return errors.Is(err, errCompressed) }

// sampleEstimate bounds the memory a sample read holds: the sample's
// share of the chunk plus a checksum block.
func sampleEstimate(ref manifest.ChunkRef) int64 {
	return ref.Raw/max(ref.Rows, 1) + chunk.BlockSize
}

// readSampleBlocks reads sample j of an uncompressed chunk: its header
// (cached) and the checksum blocks that hold the sample.
func (d *Dataset) readSampleBlocks(ctx context.Context, ref manifest.ChunkRef, j int) (*Fetched, error) {
	t0 := time.Now()
	h, n, err := d.header(ctx, ref)
	if err != nil {
		return nil, err
	}
	if h.Codec != chunk.CodecNone {
		return nil, errCompressed
	}
	if j < 0 || j >= h.N {
		return nil, fmt.Errorf("read chunk %s: sample %d outside its %d rows: %w", ref.Key, j, h.N, ErrCorrupt)
	}
	a, b := h.SpanBlocks(j, j+1)
	start, end := h.BlockRange(a, b)
	span := make([]byte, end-start)
	if len(span) > 0 {
		if err := d.store.ReadRange(ctx, ref.Key, start, span); err != nil {
			return nil, fmt.Errorf("read chunk %s: %w", ref.Key, err)
		}
	}
	t1 := time.Now()
	raw, err := h.DecodeBlocks(span, a, b, nil)
	if err != nil {
		return nil, fmt.Errorf("read chunk %s: %w", ref.Key, err)
	}
	var data []byte
	if s, e := h.Range(j); s < e {
		data = raw[s-h.BlockStart(a) : e-h.BlockStart(a)]
	}
	return &Fetched{hdr: h, index: j, data: data, Bytes: n + int64(len(span)), mem: int64(len(span)),
		ReadTime: t1.Sub(t0), DecodeTime: time.Since(t1)}, nil
}

// header returns a chunk's parsed header, with one range read unless the
// Dataset's cache has it; n is the number of bytes read.
func (d *Dataset) header(ctx context.Context, ref manifest.ChunkRef) (h *chunk.Header, n int64, err error) {
	if e := d.chunks.get(ref.Key); e != nil {
		return e.header, 0, nil
	}
	buf := make([]byte, ref.Header)
	if err := d.store.ReadRange(ctx, ref.Key, 0, buf); err != nil {
		return nil, 0, fmt.Errorf("read chunk %s header: %w", ref.Key, err)
	}
	h, err = chunk.ParseHeader(buf)
	if err != nil {
		return nil, 0, fmt.Errorf("read chunk %s: %w", ref.Key, err)
	}
	if err := checkHeader(h, ref); err != nil {
		return nil, 0, err
	}
	d.chunks.put(ref.Key, nil, h)
	return h, int64(len(buf)), nil
}

// readChunk reads a whole chunk (from cache when it is set and has it),
// verifies it and decodes it. Only verified chunks enter the cache; cache
// failures count as misses.
func (d *Dataset) readChunk(ctx context.Context, ref manifest.ChunkRef, cache chunkcache.Cache) (*Fetched, error) {
	t0 := time.Now()
	f := &Fetched{}
	var obj []byte
	if cache != nil {
		if o, ok, err := cache.Get(ctx, ref.Key); err == nil && ok {
			obj, f.Cached = o, true
		}
	}
	if !f.Cached {
		var err error
		if obj, err = d.store.Get(ctx, ref.Key); err != nil {
			return nil, fmt.Errorf("read chunk %s: %w", ref.Key, err)
		}
		f.Bytes = int64(len(obj))
	}
	t1 := time.Now()
	ch, err := decodeChunk(obj, ref)
	if err != nil {
		return nil, err
	}
	f.ch, f.ReadTime, f.DecodeTime = ch, t1.Sub(t0), time.Since(t1)
	f.mem = int64(len(obj))
	if ch.Codec != chunk.CodecNone {
		f.mem += int64(len(ch.Raw))
	}
	if cache != nil && !f.Cached {
		// A failed Put (a full disk) only costs a later fetch.
		_ = cache.Put(ctx, ref.Key, obj)
	}
	return f, nil
}

// decodeChunk verifies and decodes a chunk object against its reference.
func decodeChunk(obj []byte, ref manifest.ChunkRef) (*chunk.Chunk, error) {
	ch, err := chunk.Decode(obj, nil)
	if err != nil {
		return nil, fmt.Errorf("read chunk %s: %w", ref.Key, err)
	}
	if err := checkHeader(ch.Header, ref); err != nil {
		return nil, err
	}
	return ch, nil
}

// checkHeader verifies that a chunk agrees with the fragment's reference.
func checkHeader(h *chunk.Header, ref manifest.ChunkRef) error {
	if int64(h.N) != ref.Rows || h.Len != ref.Header || h.Size() != ref.Size || h.RawLen != ref.Raw {
		return fmt.Errorf("read chunk %s: header says %d samples, %d header bytes, %d bytes, %d raw; fragment says %d, %d, %d, %d: %w",
			ref.Key, h.N, h.Len, h.Size(), h.RawLen, ref.Rows, ref.Header, ref.Size, ref.Raw, ErrCorrupt)
	}
	return nil
}
