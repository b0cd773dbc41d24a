package loch

import (
	"fmt"
	"time"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/chunk"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/schema"
)

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
	// buf, a buffer from bufs (readbuf.go).
	hdr    *chunk.Header
	lo, hi int
	raw    []byte
	rawOff int64
	buf    []byte
	bufs   *BufferPool
	mapped *mapRef // a span read from a mapped chunk file (mapped.go), whose raw aliases it
	// unchecked, when set, records which blocks of raw have passed their
	// checksums: the others are checked as samples are taken (check).
	unchecked *chunk.Verified

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
// reuse (for a span read from a mapped chunk file, it releases the
// mapping: see Scan.Mapped). It is for the one owner of f once nobody
// uses f, nor any sample taken from it, any more: after it, f and its
// samples must not be used.
// Whole chunks are left to the garbage collector (a cache may share them).
func (f *Fetched) Recycle() {
	if f.buf != nil {
		f.bufs.put(f.buf)
		f.buf, f.raw = nil, nil
	}
	if f.mapped != nil {
		f.mapped.done()
		f.raw = nil
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
			if err := f.check(s, e); err != nil {
				return Sample{}, fmt.Errorf("read chunk %s: sample %d: %w", f.key, j, err)
			}
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

// plain returns sample j's bytes (aliasing the fetched memory) when the
// chunk stores it as is with this shape: not null, not compressed as an
// image, video or audio, not a dictionary's, within the fetched samples
// and, in a whole chunk, in sound blocks. Otherwise ok is false, and
// sample gives it (or the error).
func (f *Fetched) plain(j int, shape []int) (data []byte, ok bool) {
	h := f.hdr
	if f.ch != nil {
		h = f.ch.Header
		if j < 0 || j >= f.ch.N || f.damaged(j) != nil {
			return nil, false
		}
	} else if j < f.lo || j >= f.hi {
		return nil, false
	}
	if h.SampleCompression != chunk.SampleNone || h.Dict() || h.Null(j) || !h.ShapeIs(j, shape) {
		return nil, false
	}
	if f.ch != nil {
		return f.ch.Sample(j), true
	}
	if s, e := h.Range(j); f.check(s, e) != nil {
		return nil, false
	}
	return h.Value(f.raw, f.rawOff, j), true
}

// check checks the checksums of the blocks under raw data [s, e) of a
// span whose blocks were not checked when it was read (unchecked), those
// not checked yet.
func (f *Fetched) check(s, e int64) error {
	if f.unchecked == nil {
		return nil
	}
	return f.hdr.VerifyRange(f.raw, f.rawOff, s, e, f.unchecked)
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
