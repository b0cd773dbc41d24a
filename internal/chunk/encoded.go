package chunk

import (
	"encoding/binary"
	"fmt"
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
// nothing, and the chunk is written as it would be without encoding.
func (b *Builder) encodeEncoded(dst []byte, flags uint16, d *dictData) (out []byte, ok bool, err error) {
	if !b.encodable() {
		return nil, false, nil
	}
	e := &encoding{codec: b.codec}
	if e.codec == CodecNone {
		e.codec = CodecLZ4
	}
	gain := false
	if flags&(FlagFixedShape|FlagDict) == 0 {
		e.shapes = encodeSeq(appendU32s(nil, b.shapes), 4)
		gain = gain || e.shapes[0] != transformPlain
	}
	if flags&(FlagImplicitOffsets|FlagDict) == 0 {
		e.offsets = encodeSeq(b.appendOffsets(make([]byte, 0, 8*(b.n+1))), 8)
		gain = gain || e.offsets[0] != transformPlain
	}
	s, plainOnly := b.dtype.Size(), b.dtype.Variable()
	if d.ok {
		s, plainOnly = dictWidth(len(d.offs)-1), false
	} else if plainOnly {
		s = 1
	}
	var tmp []byte
	for k := range blockCount(int64(len(d.raw)), BlockSize) {
		start := len(e.blocks)
		var g bool
		if e.blocks, tmp, g, err = appendEncodedBlock(e.blocks, tmp, d.raw[k*BlockSize:min((k+1)*BlockSize, len(d.raw))], s, e.codec, plainOnly); err != nil {
			return nil, false, fmt.Errorf("block %d: %w", k, err)
		}
		gain = gain || g
		e.lens = append(e.lens, uint32(len(e.blocks)-start))
	}
	if !gain {
		return nil, false, nil
	}
	flags |= FlagEncoded | FlagBlocked
	hdr, _ := b.header(flags, BlockSize, d, e)
	binary.LittleEndian.PutUint64(hdr[24:], uint64(len(e.blocks)))
	out = append(dst[:0], hdr...)
	out = binary.LittleEndian.AppendUint32(out, Checksum(hdr))
	out = append(out, e.blocks...)
	return binary.LittleEndian.AppendUint32(out, Checksum(e.blocks)), true, nil
}

// encodeSeq returns the encoded sequence [t, W, transformed values] of
// raw, values of s bytes, with the smallest transform.
func encodeSeq(raw []byte, s int) []byte {
	p := choose(raw, s)
	return appendTransformed([]byte{p.t, byte(p.w)}, raw, s, p)
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
