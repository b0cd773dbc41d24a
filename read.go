package loch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/chunk"
	"github.com/lochdata/loch/internal/decodelimit"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/schema"
)

// This file is the engine's one chunk reader: every read of chunk bytes
// (Column reads, Scan fetches, Verify) goes through chunkReader (whole
// chunks and spans of samples, through a chunk cache or not),
// decodeChunk, assemble and Fetched.sample, which check what the fragment
// says against what the chunk says and name the chunk in every error
// (whose kind, from internal/base, callers test with errors.Is).

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

// Fetched is the result of Scan.Fetch: chunk data that has been verified
// and decoded, a whole chunk or a span of its samples. It is immutable and
// safe for concurrent use.
//
// A whole chunk whose data failed its checksum may still be fetched when
// its blocks have checksums: the samples that lie in sound blocks read
// normally, and those that overlap a damaged block are ErrCorrupt errors
// from Scan.Sample and At, naming the chunk and the sample.
type Fetched struct {
	ch  *chunk.Chunk // a whole chunk; nil for a span
	key string       // the chunk's key, for errors

	// A span: samples [lo, hi) of the chunk whose header is hdr; raw holds
	// the decoded blocks that hold them, from raw-data offset rawOff, in
	// buf, a buffer from the read pools (readbuf.go).
	hdr    *chunk.Header
	lo, hi int
	raw    []byte
	rawOff int64
	buf    []byte

	// Bytes is the number of bytes read from the store (0 on a cache hit,
	// and for a fetch that waited for another's read of the same chunk).
	Bytes int64
	// Cached reports that the bytes came from the scan's cache.
	Cached bool
	// ReadTime is the time spent reading bytes, DecodeTime the time spent
	// verifying and decoding them.
	ReadTime, DecodeTime time.Duration
	mem                  int64
}

// Whole reports whether the fetch read a whole chunk (a planned span read
// falls back to one when the chunk turns out not to be range-readable).
func (f *Fetched) Whole() bool { return f.ch != nil }

// Len is the number of samples fetched: all of a whole chunk's, hi-lo of a
// span's.
func (f *Fetched) Len() int {
	if f.ch == nil {
		return f.hi - f.lo
	}
	return f.ch.N
}

// DataLen is the number of data bytes the fetched data holds, after the
// chunk codec (images still encoded): a whole chunk's, or for a span those
// of the blocks that hold it.
func (f *Fetched) DataLen() int64 {
	if f.ch == nil {
		return int64(len(f.raw))
	}
	return int64(len(f.ch.Raw))
}

// At returns sample j (0 <= j < Len) of a whole chunk as stored, for
// readers that take every sample of a chunk in turn; Data aliases the
// fetched memory. A piece of a split sample has no samples of its own: use
// Scan.Sample. A sample that overlaps a damaged block is ErrCorrupt.
func (f *Fetched) At(j int) (Sample, error) {
	if f.ch == nil || f.ch.Flags&chunk.FlagPartial != 0 {
		return Sample{}, fmt.Errorf("sample %d of a fetched read that is not a whole chunk: %w", j, ErrInvalidArgument)
	}
	if j < 0 || j >= f.ch.N {
		return Sample{}, fmt.Errorf("sample %d of a chunk of %d: %w", j, f.ch.N, ErrInvalidArgument)
	}
	if err := f.damaged(j); err != nil {
		return Sample{}, err
	}
	return sampleFrom(f.ch.Header, j, f.ch.Sample(j)), nil
}

// Data returns sample j of a whole chunk as stored, as At does, without
// its shape (for readers that know it from the column: scalars, text,
// json), and whether it is null. Data aliases the fetched memory.
func (f *Fetched) Data(j int) (data []byte, null bool, err error) {
	if f.ch == nil || f.ch.Flags&chunk.FlagPartial != 0 {
		return nil, false, fmt.Errorf("sample %d of a fetched read that is not a whole chunk: %w", j, ErrInvalidArgument)
	}
	if j < 0 || j >= f.ch.N {
		return nil, false, fmt.Errorf("sample %d of a chunk of %d: %w", j, f.ch.N, ErrInvalidArgument)
	}
	if err := f.damaged(j); err != nil {
		return nil, false, err
	}
	if f.ch.Header.Null(j) {
		return nil, true, nil
	}
	return f.ch.Sample(j), false, nil
}

// Fixed returns samples [lo, hi) of a whole chunk as stored, one after
// the other, when each is exactly size bytes and none is null or in a
// damaged block: a run of scalars that a reader takes at once instead of
// calling Data for each. ok is false otherwise (the caller falls back to
// Data). data aliases the fetched memory and must not be modified.
func (f *Fetched) Fixed(lo, hi, size int) (data []byte, ok bool) {
	c := f.ch
	if c == nil || c.Flags&chunk.FlagPartial != 0 || c.Dict() || len(c.Bad) > 0 || lo < 0 || hi > c.N || lo >= hi || size <= 0 {
		return nil, false
	}
	s, _ := c.Range(lo)
	_, e := c.Range(hi - 1)
	if e-s != int64(hi-lo)*int64(size) {
		return nil, false
	}
	if c.Flags&chunk.FlagImplicitOffsets == 0 || c.Flags&chunk.FlagNulls != 0 {
		for j := lo; j < hi; j++ {
			if a, b := c.Range(j); b-a != int64(size) || c.Null(j) {
				return nil, false
			}
		}
	}
	return c.Raw[s:e:e], true
}

// DictLen is the number of dictionary entries of a whole fetched chunk
// of a text or json column written with a dictionary (docs/format.md
// §3.3): its distinct values, each stored once. It is 0 for any other
// fetch, whose samples come from Data alone.
func (f *Fetched) DictLen() int {
	if f.ch == nil {
		return 0
	}
	return f.ch.DictLen()
}

// Entry returns dictionary entry k, 0 <= k < DictLen, as stored: the
// bytes of every sample whose index DictRun gives as k. It aliases the
// fetched memory and must not be modified.
func (f *Fetched) Entry(k int) []byte { return f.ch.Entry(k) }

// DictRun appends the dictionary indices of samples [lo, hi) of a whole
// fetched dictionary chunk to dst, -1 for a null sample: a reader judges
// or converts each entry once, and each sample by its index. ok is false
// when the chunk has no dictionary, the run is out of range or the chunk
// has damaged blocks (the caller falls back to Data).
func (f *Fetched) DictRun(lo, hi int, dst []int32) (idx []int32, ok bool) {
	c := f.ch
	if c == nil || !c.Dict() || len(c.Bad) > 0 || lo < 0 || hi > c.N || lo > hi {
		return dst, false
	}
	return c.AppendIndices(c.Raw, 0, lo, hi, dst)
}

// Mem is the memory the fetched data holds.
func (f *Fetched) Mem() int64 { return f.mem }

// Recycle hands the memory of a fetched span back for later reads to
// reuse. It is for the one owner of f once nobody uses f, nor any sample
// taken from it, any more: after it, f and its samples must not be used.
// Whole chunks are left to the garbage collector (a cache may share them).
func (f *Fetched) Recycle() {
	if f.buf != nil {
		putBuf(f.buf)
		f.buf, f.raw = nil, nil
	}
}

// damaged returns the error for sample j of a whole chunk when its bytes
// overlap a damaged block.
func (f *Fetched) damaged(j int) error {
	if blk, bad := f.ch.BadSample(j); bad {
		return fmt.Errorf("read chunk %s: sample %d: %w", f.key, j, base.Markf(ErrCorrupt, "its block %d fails its checksum", blk))
	}
	return nil
}

// sample returns sample j of the fetched chunk as stored (Data aliases the
// fetched memory).
func (f *Fetched) sample(ref manifest.ChunkRef, j int) (Sample, error) {
	if f.key != ref.Key {
		return Sample{}, fmt.Errorf("read chunk %s: fetched chunk %s instead: %w", ref.Key, f.key, ErrInvalidArgument)
	}
	if f.ch == nil {
		if j < f.lo || j >= f.hi {
			return Sample{}, fmt.Errorf("read chunk %s: fetched samples [%d, %d), want %d: %w", ref.Key, f.lo, f.hi, j, ErrInvalidArgument)
		}
		var data []byte
		if s, e := f.hdr.Range(j); s < e {
			data = f.hdr.Value(f.raw, f.rawOff, j)
		}
		return sampleFrom(f.hdr, j, data), nil
	}
	if j < 0 || j >= f.ch.N {
		return Sample{}, fmt.Errorf("read chunk %s: sample %d outside its %d rows: %w", ref.Key, j, f.ch.N, ErrCorrupt)
	}
	if err := f.damaged(j); err != nil {
		return Sample{}, err
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
		if err := f.damaged(0); err != nil {
			return Sample{}, fmt.Errorf("piece %d of a split sample: %w", p, err)
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
	if h.Dict() { // no shapes in the header: a value's is its length
		s.Shape = []int{len(data)}
	}
	switch h.SampleCompression {
	case chunk.SamplePNG:
		s.Encoding = schema.PNG
	case chunk.SampleJPEG:
		s.Encoding = schema.JPEG
	case chunk.SampleVideo:
		s.Encoding = schema.VideoCompression
	case chunk.SampleAudio:
		s.Encoding = schema.AudioCompression
	}
	return s
}

// DecodedLen is the number of bytes of the sample decoded: for an encoded
// image, its pixels (the product of Shape); otherwise len(Data).
func (s Sample) DecodedLen() int {
	if !s.encoded() {
		return len(s.Data)
	}
	if s.Encoding == schema.AudioCompression {
		return 4 * schema.NumElements(s.Shape) // float32
	}
	return schema.NumElements(s.Shape)
}

func (s Sample) encoded() bool { return s.Encoding != schema.SampleNone && s.Encoding != "" }

// MaxDecodeBytes returns the decode limit: the most bytes that one decode
// may produce (an image's height x width x channels, video frames' count x
// height x width x 3, audio's samples x channels x 4), 0 for none. Every
// decoder of loch checks the size a sample or file declares against it
// before allocating, and refuses a larger one with ErrTooLarge. It is
// process-wide: $LOCH_MAX_DECODE_BYTES (a size such as 512MiB; 0 for no
// limit), else 512 MiB (Pillow's decompression-bomb threshold for RGB
// images), unless SetMaxDecodeBytes changed it.
func MaxDecodeBytes() int64 { return decodelimit.Max() }

// SetMaxDecodeBytes sets the decode limit (see MaxDecodeBytes) to n bytes,
// 0 for none, for the whole process, and returns the previous limit. A
// negative n is ErrInvalidArgument. Safe for concurrent use; decodes
// already past their check keep the limit they were checked against.
func SetMaxDecodeBytes(n int64) (old int64, err error) { return decodelimit.Set(n) }

// CheckDecode checks the sample's decoded size (DecodedLen, from the shape
// its chunk header records) against the decode limit: an ErrTooLarge error
// naming both sizes when it is more. Decode and DecodeInto check it first;
// a caller that sizes a buffer from DecodedLen checks it before
// allocating.
func (s Sample) CheckDecode() error {
	if !s.encoded() {
		return nil // as stored: nothing to decode
	}
	var what string
	switch s.Encoding {
	case schema.VideoCompression:
		what = "video"
	case schema.AudioCompression:
		what = "audio"
	default:
		what = string(s.Encoding) + " image"
	}
	n := decodelimit.Size(1, s.Shape...)
	if s.Encoding == schema.AudioCompression {
		n = decodelimit.Size(4, s.Shape...)
	}
	return decodelimit.Check(fmt.Sprintf("%s sample of shape %v", what, s.Shape), n)
}

// Decode returns the sample decoded into a new buffer of DecodedLen bytes
// (see DecodeInto), after CheckDecode.
func (s Sample) Decode() (Sample, error) {
	if err := s.CheckDecode(); err != nil {
		return Sample{}, err
	}
	return s.DecodeInto(make([]byte, s.DecodedLen()))
}

// DecodeInto returns the sample decoded into dst, which must hold exactly
// DecodedLen bytes: png/jpeg images are decoded to HWC uint8 pixels with the
// channels Shape records, other samples are copied. The result's Data is
// dst. A sample that does not decode to its recorded shape is ErrCorrupt.
func (s Sample) DecodeInto(dst []byte) (Sample, error) {
	if err := s.CheckDecode(); err != nil {
		return Sample{}, err
	}
	if len(dst) != s.DecodedLen() {
		return Sample{}, fmt.Errorf("decode sample of shape %v: buffer of %d bytes, want %d: %w", s.Shape, len(dst), s.DecodedLen(), ErrInvalidArgument)
	}
	out := Sample{Shape: s.Shape, Data: dst, Null: s.Null}
	if !s.encoded() {
		copy(dst, s.Data)
		return out, nil
	}
	if s.Encoding.Media() {
		if err := decodeMedia(s, dst); err != nil {
			return Sample{}, base.Mark(ErrCorrupt, fmt.Sprintf("decode %s sample of shape %v", s.Encoding, s.Shape), err)
		}
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

// errWhole is chunkReader.span's answer for a chunk whose header says it
// cannot be read by range (a format 1.0 compressed chunk): the caller
// reads it whole instead.
var errWhole = errors.New("chunk cannot be read by range")

// spanWorth reports whether reading some samples of a chunk by range is
// worth planning: not for a piece of a split sample (assembled from whole
// pieces), not for a chunk of at most two checksum blocks (the header read
// and the blocks would cost as much as the whole), and not for a chunk
// whose header the Dataset knows to be not range-readable.
func (d *Dataset) spanWorth(ref manifest.ChunkRef) bool {
	if ref.Parts > 0 || ref.Size <= 2*chunk.BlockSize {
		return false
	}
	if e := d.chunks.get(ref.Key); e != nil && !e.header.RangeReadable() {
		return false
	}
	return true
}

// spanEstimate bounds the memory a fetched span of samples [lo, hi) holds
// (the raw bytes of the blocks that hold it): exactly, from the header,
// when the Dataset knows it; else, when maxSample (the column's largest
// sample in bytes; negative if unknown) is known, the span's largest size
// plus the two partial blocks at its ends, at most the chunk's raw size;
// else the span's share of the chunk plus two blocks. A span that Fetch
// reads whole after all holds more: the whole chunk.
func (d *Dataset) spanEstimate(ref manifest.ChunkRef, lo, hi int, maxSample int64) int64 {
	if e := d.chunks.get(ref.Key); e != nil && e.header.RangeReadable() {
		h := e.header
		a, b := h.SpanBlocks(lo, hi)
		if a == b {
			return 0
		}
		return min(h.BlockStart(b), h.RawLen) - h.BlockStart(a)
	}
	if maxSample >= 0 {
		return min(int64(hi-lo)*maxSample+2*chunk.BlockSize, ref.Raw)
	}
	rows := max(ref.Rows, 1)
	share := (int64(hi-lo)*ref.Raw + rows - 1) / rows
	return min(share+2*chunk.BlockSize, ref.Raw+ref.Size)
}

// chunkReader reads chunks for a Scan or a ColumnReader: whole chunk
// objects from the store, or from cache when one is set; spans of samples
// by range. With a cache, concurrent reads of one chunk object wait for
// one fetch (flight), as do those of other processes sharing the cache
// when it takes turns (chunkcache.Filler), and a fetched object that
// passes its checks is put in the cache. It is safe for concurrent use; a
// chunkReader without a cache is free to make.
type chunkReader struct {
	d      *Dataset
	cache  chunkcache.Cache // nil: none
	flight singleflight.Group
}

// fetchedObject is one whole chunk object and where it came from.
type fetchedObject struct {
	obj    []byte
	cached bool
}

// object returns a chunk object's bytes, read-only: from the cache when it
// has them, else from the store, putting it in the cache when it passes
// its checks (a damaged chunk is never cached). n is the number of bytes
// this call read from the store.
func (r *chunkReader) object(ctx context.Context, ref manifest.ChunkRef) (o fetchedObject, n int64, err error) {
	if r.cache == nil {
		obj, err := r.d.store.Get(ctx, ref.Key)
		if err != nil {
			return fetchedObject{}, 0, fmt.Errorf("read chunk %s: %w", ref.Key, err)
		}
		return fetchedObject{obj: obj}, int64(len(obj)), nil
	}
	for {
		ran := false
		v, err, _ := r.flight.Do(ref.Key, func() (any, error) {
			ran = true
			if obj, ok, err := r.cache.Get(ctx, ref.Key); err == nil && ok {
				return fetchedObject{obj: obj, cached: true}, nil
			}
			// Another process sharing the cache may be fetching it: wait
			// for its turn to end, then look again. A turn that cannot be
			// taken (an unwritable cache) only costs a fetch of our own.
			if f, ok := r.cache.(chunkcache.Filler); ok {
				done, err := f.FillTurn(ctx, ref.Key)
				if err != nil && ctx.Err() != nil {
					return nil, fmt.Errorf("read chunk %s: %w", ref.Key, ctx.Err())
				}
				if err == nil {
					defer done()
					if obj, ok, err := r.cache.Get(ctx, ref.Key); err == nil && ok {
						return fetchedObject{obj: obj, cached: true}, nil
					}
				}
			}
			obj, err := r.d.store.Get(ctx, ref.Key)
			if err != nil {
				return nil, fmt.Errorf("read chunk %s: %w", ref.Key, err)
			}
			if h, err := chunk.Check(obj); err == nil && checkHeader(h, ref) == nil {
				// A failed Put (a full disk) only costs a later fetch.
				_ = r.cache.Put(ctx, ref.Key, obj)
			}
			return fetchedObject{obj: obj}, nil
		})
		if err != nil {
			if !ran && ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				continue // the fetch we waited for was cancelled by its caller
			}
			return fetchedObject{}, 0, err
		}
		o = v.(fetchedObject)
		if ran && !o.cached {
			n = int64(len(o.obj))
		}
		return o, n, nil
	}
}

// whole reads a whole chunk, verifies it and decodes it. A chunk whose
// data fails its checksum but whose blocks have checksums comes back
// salvaged (Fetched.damaged tells its bad samples).
func (r *chunkReader) whole(ctx context.Context, ref manifest.ChunkRef) (*Fetched, error) {
	t0 := time.Now()
	o, n, err := r.object(ctx, ref)
	if err != nil {
		return nil, err
	}
	return r.wholeFrom(ref, o, n, time.Since(t0))
}

// wholeFrom decodes a whole chunk object.
func (r *chunkReader) wholeFrom(ref manifest.ChunkRef, o fetchedObject, n int64, readTime time.Duration) (*Fetched, error) {
	t1 := time.Now()
	ch, err := decodeChunk(o.obj, ref, true)
	if err != nil {
		return nil, err
	}
	f := &Fetched{ch: ch, key: ref.Key, Bytes: n, Cached: o.cached, ReadTime: readTime, DecodeTime: time.Since(t1)}
	f.mem = int64(len(o.obj))
	if ch.Codec != chunk.CodecNone {
		f.mem += int64(len(ch.Raw))
	}
	return f, nil
}

// span reads samples [lo, hi) of a chunk by range: its header (known to the
// Dataset, or one range read) and the blocks that hold the samples, each
// decoded alone and checked against its checksum. A block that fails is an
// error for the span. errWhole: the chunk is not range-readable. With a
// cache, the range comes from the cached object, or the whole object is
// fetched once, put in the cache and the span served from it.
func (r *chunkReader) span(ctx context.Context, ref manifest.ChunkRef, lo, hi int) (*Fetched, error) {
	if lo < 0 || hi > int(ref.Rows) || lo >= hi {
		return nil, fmt.Errorf("read chunk %s: samples [%d, %d) of %d: %w", ref.Key, lo, hi, ref.Rows, ErrInvalidArgument)
	}
	if r.cache != nil {
		return r.spanCached(ctx, ref, lo, hi)
	}
	t0 := time.Now()
	h, n, err := r.d.header(ctx, ref)
	if err != nil {
		return nil, err
	}
	if !h.RangeReadable() {
		return nil, errWhole
	}
	a, b := h.SpanBlocks(lo, hi)
	start, end := h.BlockRange(a, b)
	stored := getBuf(int(end - start))
	if len(stored) > 0 {
		if err := r.d.store.ReadRange(ctx, ref.Key, start, stored); err != nil {
			putBuf(stored)
			return nil, fmt.Errorf("read chunk %s: %w", ref.Key, err)
		}
	}
	f, err := spanFrom(ref, h, lo, hi, stored)
	if err != nil {
		return nil, err
	}
	f.Bytes, f.ReadTime = n+int64(len(stored)), time.Since(t0)-f.DecodeTime
	return f, nil
}

// spanCached is span through the cache: a range read of the cached object
// when the cache can (a chunkcache.RangeReader) and has it, else the whole
// object, fetched once for all concurrent readers and cached.
func (r *chunkReader) spanCached(ctx context.Context, ref manifest.ChunkRef, lo, hi int) (*Fetched, error) {
	if rr, ok := r.cache.(chunkcache.RangeReader); ok {
		if f, err := r.spanFromCache(ctx, rr, ref, lo, hi); f != nil || err != nil {
			return f, err
		}
	}
	t0 := time.Now()
	o, n, err := r.object(ctx, ref)
	if err != nil {
		return nil, err
	}
	readTime := time.Since(t0)
	h, err := chunk.ParseHeader(o.obj)
	if err != nil {
		return nil, fmt.Errorf("read chunk %s: %w", ref.Key, err)
	}
	if err := checkHeader(h, ref); err != nil {
		return nil, err
	}
	r.d.chunks.put(ref.Key, nil, h)
	if !h.RangeReadable() {
		return r.wholeFrom(ref, o, n, readTime)
	}
	a, b := h.SpanBlocks(lo, hi)
	start, end := h.BlockRange(a, b)
	if end > int64(len(o.obj)) {
		return nil, fmt.Errorf("read chunk %s: object is %d bytes, header says %d: %w", ref.Key, len(o.obj), h.Size(), ErrCorrupt)
	}
	// A copy: the span must not keep the whole object alive.
	stored := getBuf(int(end - start))
	copy(stored, o.obj[start:end])
	f, err := spanFrom(ref, h, lo, hi, stored)
	if err != nil {
		return nil, err
	}
	f.Bytes, f.Cached, f.ReadTime = n, o.cached, readTime
	return f, nil
}

// spanFromCache reads a span from the cached object by range: the header
// (unless the Dataset knows it) and the blocks. It returns nil and no error
// on a miss, including a cached object that fails its checks (then Get,
// which verifies it whole, drops it if it is damaged), and errWhole for a
// chunk that is not range-readable.
func (r *chunkReader) spanFromCache(ctx context.Context, rr chunkcache.RangeReader, ref manifest.ChunkRef, lo, hi int) (*Fetched, error) {
	t0 := time.Now()
	var h *chunk.Header
	if e := r.d.chunks.get(ref.Key); e != nil {
		h = e.header
	} else {
		buf := make([]byte, ref.Header)
		if ok, err := rr.ReadRange(ctx, ref.Key, 0, buf); err != nil || !ok {
			return nil, nil
		}
		var err error
		if h, err = chunk.ParseHeader(buf); err != nil || checkHeader(h, ref) != nil {
			r.dropIfDamaged(ctx, ref)
			return nil, nil
		}
		r.d.chunks.put(ref.Key, nil, h)
	}
	if !h.RangeReadable() {
		return nil, errWhole
	}
	a, b := h.SpanBlocks(lo, hi)
	start, end := h.BlockRange(a, b)
	stored := getBuf(int(end - start))
	if ok, err := rr.ReadRange(ctx, ref.Key, start, stored); err != nil || !ok {
		putBuf(stored)
		return nil, nil
	}
	readTime := time.Since(t0)
	f, err := spanFrom(ref, h, lo, hi, stored)
	if err != nil {
		r.dropIfDamaged(ctx, ref)
		return nil, nil
	}
	f.Cached, f.ReadTime = true, readTime
	return f, nil
}

// dropIfDamaged has the cache verify its copy of a chunk whole (Get drops
// an object that fails its content hash), after a range of it failed its
// checksums.
func (r *chunkReader) dropIfDamaged(ctx context.Context, ref manifest.ChunkRef) {
	_, _, _ = r.cache.Get(ctx, ref.Key)
}

// spanFrom decodes samples [lo, hi) of a range-readable chunk from stored,
// the bytes of the blocks that hold them in a buffer from getBuf, which it
// takes over: the span's raw data is stored itself (codec none) or a
// buffer from getBuf it is decoded into, stored then handed back.
func spanFrom(ref manifest.ChunkRef, h *chunk.Header, lo, hi int, stored []byte) (*Fetched, error) {
	t0 := time.Now()
	a, b := h.SpanBlocks(lo, hi)
	buf, decompress := stored, h.Codec != chunk.CodecNone && a < b
	if decompress {
		buf = getBuf(int(min(h.BlockStart(b), h.RawLen) - h.BlockStart(a)))
	}
	raw, err := h.DecodeBlocks(stored, a, b, buf)
	if decompress {
		putBuf(stored)
	}
	if err != nil {
		putBuf(buf)
		return nil, fmt.Errorf("read chunk %s: samples [%d, %d): %w", ref.Key, lo, hi, err)
	}
	return &Fetched{hdr: h, key: ref.Key, lo: lo, hi: hi, raw: raw, rawOff: h.BlockStart(a), buf: buf,
		mem: int64(len(raw)), DecodeTime: time.Since(t0)}, nil
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

// decodeChunk verifies and decodes a chunk object against its reference.
// With salvage, a chunk whose data is damaged but whose blocks have
// checksums is returned with its bad blocks (chunk.DecodeDamaged).
func decodeChunk(obj []byte, ref manifest.ChunkRef, salvage bool) (*chunk.Chunk, error) {
	dec := chunk.Decode
	if salvage {
		dec = chunk.DecodeDamaged
	}
	ch, err := dec(obj, nil)
	if err != nil {
		return nil, fmt.Errorf("read chunk %s: %w", ref.Key, err)
	}
	if err := checkHeader(ch.Header, ref); err != nil {
		return nil, err
	}
	return ch, nil
}

// checkHeader verifies that a chunk agrees with the fragment's reference:
// its counts and, for fragments of format 1.10, its header checksum, which
// tells a sound chunk stored under another chunk's name (docs/format.md
// §2.5 `hcrc`). Every header a reader parses passes through it.
func checkHeader(h *chunk.Header, ref manifest.ChunkRef) error {
	if int64(h.N) != ref.Rows || h.Len != ref.Header || h.Size() != ref.Size || h.RawLen != ref.Raw {
		return fmt.Errorf("read chunk %s: header says %d samples, %d header bytes, %d bytes, %d raw; fragment says %d, %d, %d, %d: %w",
			ref.Key, h.N, h.Len, h.Size(), h.RawLen, ref.Rows, ref.Header, ref.Size, ref.Raw, ErrCorrupt)
	}
	if ref.HCRC != 0 && h.CRC != ref.HCRC {
		return fmt.Errorf("read chunk %s: the object is another chunk (header checksum %08x, fragment says %08x): %w",
			ref.Key, h.CRC, ref.HCRC, ErrCorrupt)
	}
	return nil
}
