package chunk

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
)

// Encoded chunks (format 1.14, docs/format.md §3.4): a scalar chunk, a
// chunk of text, json or bytes, or a dictionary chunk whose blocks are
// each stored as [t, c, W, payload]: transformed by t (transform.go) with
// bit width W, then compressed with the chunk codec (c = 1) or stored
// (c = 0), whichever the writer measured to be smaller; and whose
// per-sample shapes and offsets are encoded sequences [uint32 L, t, W,
// transformed values] in the header. The raw data and its blocks are
// those of the chunk without encoding, so everything but a block's
// decoding is unchanged.

// EncodedMinor is the chunk minor version of encoded chunks.
const EncodedMinor = 14

// MaxEncodedSamples bounds the samples of an encoded chunk, so that its
// header's few bytes of offsets never decode into more than 128 MiB.
const MaxEncodedSamples = 1 << 24

// blockPrefix is the bytes before an encoded block's payload: t, c, W.
const blockPrefix = 3

// Encoded reports whether the chunk is encoded (flag bit 6).
func (h *Header) Encoded() bool { return h.Flags&FlagEncoded != 0 }

// valueSize is the s of an encoded chunk's blocks: the bytes of one value
// that the transforms see.
func (h *Header) valueSize() int {
	switch {
	case h.Flags&FlagDict != 0:
		return h.dictW
	case h.DType.Variable():
		return 1
	}
	return h.DType.Size()
}

// checkEncoded verifies the parts of an encoded chunk's header that do not
// depend on its data (after the dictionary, if any, was parsed).
func (h *Header) checkEncoded() error {
	ndim := 0
	if h.DType.Variable() {
		ndim = 1
	}
	if h.SampleCompression != SampleNone || h.Flags&(FlagPartial|FlagBlocked) != FlagBlocked || h.Codec == CodecNone || h.NDim != ndim || h.BlockSize == 0 {
		return corruptf("encoded chunk of sample compression %d, codec %d, %d dimensions, block size %d and flags %#x; want none, lz4 or zstd, %d, a block size and blocked data that is not a partial sample",
			h.SampleCompression, h.Codec, h.NDim, h.BlockSize, h.Flags, ndim)
	}
	if s := h.valueSize(); h.BlockSize%s != 0 || h.RawLen%int64(s) != 0 {
		return corruptf("encoded chunk of %d-byte values with block size %d and raw length %d", s, h.BlockSize, h.RawLen)
	}
	return nil
}

// seq reads an encoded sequence of m values of s bytes (4 or 8) from the
// header, or sets r.err. m has been bounded by MaxEncodedSamples.
func (r *reader) seq(m, s int) []byte {
	l := int(r.u32())
	b := r.take(l)
	if r.err != nil {
		return nil
	}
	if len(b) < 2 {
		r.err = fmt.Errorf("encoded sequence of %d bytes, want at least 2", len(b))
		return nil
	}
	out := make([]byte, m*s)
	if err := untransform(out, b[2:], b[0], int(b[1]), s); err != nil {
		r.err = fmt.Errorf("encoded sequence: %w", err)
		return nil
	}
	return out
}

// seqOf reads an encoded sequence of m values of T: the shapes (uint32)
// and the offsets (uint64).
func seqOf[T uint32 | uint64](r *reader, m int) []T {
	size := binary.Size(T(0))
	b := r.seq(m, size)
	if b == nil {
		return nil
	}
	out := make([]T, m)
	for i := range out {
		if size == 4 {
			out[i] = T(binary.LittleEndian.Uint32(b[4*i:]))
		} else {
			out[i] = T(binary.LittleEndian.Uint64(b[8*i:]))
		}
	}
	return out
}

// scratch holds an encoded block's transformed bytes between the codec
// and the transform: at most a block and a transform's 16 bytes.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, BlockSize+64); return &b }}

// decodeEncodedBlock decodes one encoded block's stored bytes into dst,
// which has exactly the block's raw length.
func (h *Header) decodeEncodedBlock(dst, stored []byte) error {
	if len(stored) < blockPrefix {
		return fmt.Errorf("encoded block of %d bytes", len(stored))
	}
	t, c, w, payload := stored[0], stored[1], int(stored[2]), stored[blockPrefix:]
	s := h.valueSize()
	if t != transformPlain && h.DType.Variable() && h.Flags&FlagDict == 0 {
		return fmt.Errorf("transform %d in a chunk of variable-size values", t)
	}
	n := transformedLen(t, w, len(dst)/s, s)
	if n < 0 {
		return fmt.Errorf("unknown transform %d or width %d for %d-byte values", t, w, s)
	}
	switch c {
	case 0:
		return untransform(dst, payload, t, w, s)
	case 1:
		if t == transformPlain {
			return decompress(h.Codec, dst, payload)
		}
		p := scratch.Get().(*[]byte)
		defer scratch.Put(p)
		if cap(*p) < n {
			*p = make([]byte, n)
		}
		tr := (*p)[:n]
		if err := decompress(h.Codec, tr, payload); err != nil {
			return err
		}
		return untransform(dst, tr, t, w, s)
	}
	return fmt.Errorf("unknown block compression %d", c)
}

// decodeStored decodes the stored bytes of one block of a blocked chunk
// into dst, which has the block's raw length.
func (h *Header) decodeStored(dst, stored []byte) error {
	if h.Encoded() {
		return h.decodeEncodedBlock(dst, stored)
	}
	return decompress(h.Codec, dst, stored)
}

// encoding is what the writer measured for an encoded chunk: its codec,
// its header sequences, its stored blocks and their lengths.
type encoding struct {
	codec           uint8
	shapes, offsets []byte // encoded sequences [t, W, values]
	blocks          []byte
	lens            []uint32
}

// encodable reports whether the samples added can make an encoded chunk
// (docs/format.md §3.4).
func (b *Builder) encodable() bool {
	if b.sample != SampleNone || b.partial != nil || b.Len() > MaxEncodedSamples {
		return false
	}
	if b.dtype.Variable() {
		return b.ndim == 1
	}
	switch b.dtype.Size() {
	case 1, 2, 4, 8:
		return b.ndim == 0
	}
	return false
}

// encodeEncoded encodes the chunk as an encoded chunk when it can be one
// and the encoding measured gains anything (ok); otherwise it returns
// nothing but dst's memory (out[:0], used as scratch; nil when none), and
// the chunk is written as it would be without encoding. The blocks are
// stored straight after the header in dst's memory, their lengths filled
// in after.
func (b *Builder) encodeEncoded(dst []byte, flags uint16, d *dictData, s *encScratch) (out []byte, ok bool, err error) {
	if !b.encodable() {
		return nil, false, nil
	}
	nb := int(blockCount(int64(len(d.raw)), BlockSize))
	e := &encoding{codec: b.codec, lens: slices.Grow(s.lens[:0], nb)[:nb]}
	s.lens = e.lens
	if e.codec == CodecNone {
		e.codec = CodecLZ4
	}
	gain := false
	if flags&(FlagFixedShape|FlagDict) == 0 {
		s.seq = appendU32s(s.seq[:0], b.shapes)
		s.shapes = encodeSeq(s.shapes[:0], s.seq, 4)
		e.shapes = s.shapes
		gain = gain || e.shapes[0] != transformPlain
	}
	if flags&(FlagImplicitOffsets|FlagDict) == 0 {
		s.seq = b.appendOffsets(s.seq[:0])
		s.offsets = encodeSeq(s.offsets[:0], s.seq, 8)
		e.offsets = s.offsets
		gain = gain || e.offsets[0] != transformPlain
	}
	size, plainOnly := b.dtype.Size(), b.dtype.Variable()
	if d.ok {
		size, plainOnly = dictWidth(len(d.offs)-1), false
	} else if plainOnly {
		size = 1
	}
	flags |= FlagEncoded | FlagBlocked
	clear(e.lens) // filled in below
	hdr, _ := b.header(flags, BlockSize, d, e)
	out = append(dst[:0], hdr...)
	hlen := len(out) + 4
	out = append(out, 0, 0, 0, 0) // the header's checksum
	for k := range nb {
		start := len(out)
		var g bool
		if out, s.tmp, g, err = appendEncodedBlock(out, s.tmp, d.raw[k*BlockSize:min((k+1)*BlockSize, len(d.raw))], size, e.codec, plainOnly); err != nil {
			return nil, false, fmt.Errorf("block %d: %w", k, err)
		}
		gain = gain || g
		e.lens[k] = uint32(len(out) - start)
	}
	if !gain {
		return out[:0], false, nil
	}
	lens := out[hlen-4-4*nb : hlen-4] // the header ends with them
	for k, l := range e.lens {
		binary.LittleEndian.PutUint32(lens[4*k:], l)
	}
	binary.LittleEndian.PutUint64(out[24:], uint64(len(out)-hlen))
	binary.LittleEndian.PutUint32(out[hlen-4:], Checksum(out[:hlen-4]))
	return binary.LittleEndian.AppendUint32(out, Checksum(out[hlen:])), true, nil
}

// encodeSeq appends the encoded sequence [t, W, transformed values] of
// raw, values of s bytes, with the smallest transform, to dst.
func encodeSeq(dst, raw []byte, s int) []byte {
	p := choose(raw, s)
	return appendTransformed(append(dst, p.t, byte(p.w)), raw, s, p)
}

// encScratch is the working memory of one chunk encoding: the header's
// sequences, one block transformed, and the dictionary's. None of it is
// in the chunk returned, so it is recycled (encScratchPool) rather than
// allocated, and collected, again for every chunk of an ingest.
type encScratch struct {
	seq, shapes, offsets []byte // a header sequence raw, then encoded
	tmp                  []byte // one block transformed
	lens                 []uint32
	ids                  map[string]uint32 // dictionary: value -> index
	offs                 []uint32          // dictionary: entry offsets
	entries, idx         []byte            // dictionary: entries; indices
}

var encScratchPool = sync.Pool{New: func() any { return &encScratch{ids: map[string]uint32{}} }}

// put returns s to encScratchPool, its dictionary emptied: its keys alias a
// Builder's data.
func (s *encScratch) put() {
	clear(s.ids)
	encScratchPool.Put(s)
}

// appendSeq appends an encoded sequence to a header: its length, then it.
func appendSeq(hdr, seq []byte) []byte {
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(len(seq)))
	return append(hdr, seq...)
}

// appendEncodedBlock appends the stored form of one block of raw data,
// values of s bytes, to dst: the smallest transform (plain only for
// plainOnly), compressed with codec when that measured smaller (by at
// least an eighth for lz4, whose decoding costs a copy). gain reports a
// form other than plain and stored. tmp is scratch memory, returned for
// reuse.
func appendEncodedBlock(dst, tmp, blk []byte, s int, codec uint8, plainOnly bool) (out, tmpOut []byte, gain bool, err error) {
	p := plan{t: transformPlain}
	if !plainOnly {
		p = choose(blk, s)
	}
	tmp = appendTransformed(tmp[:0], blk, s, p)
	start := len(dst)
	dst = append(dst, p.t, 1, byte(p.w))
	if dst, err = compress(codec, dst, tmp); err != nil {
		return nil, tmp, false, err
	}
	n := len(dst) - start - blockPrefix
	keep := n < len(tmp) && (codec != CodecLZ4 || n <= len(tmp)-len(tmp)/8)
	if !keep {
		dst = append(dst[:start], p.t, 0, byte(p.w))
		dst = append(dst, tmp...)
	}
	return dst, tmp, keep || p.t != transformPlain, nil
}
