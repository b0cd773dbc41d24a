package chunk

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"sync"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/schema"
)

// Format version read by this package. Blocked chunks are written with
// minor version 1, the others with minor version 0 (docs/format.md,
// section 3.1).
const (
	Major = 1
	Minor = EncodedMinor
)

// Magic starts every chunk object.
const Magic = "LCHK"

// BlockSize is the size of the raw-data blocks covered by block checksums
// of compressed chunks (each compressed alone), and the largest a writer
// uses.
const BlockSize = 64 << 10

// PlainBlockSize is the block size of codec none chunks: small, so that a
// range read of a few samples reads few bytes it does not need: the loader
// reads segments of about 1 MiB by range and, in a full shuffle, single
// samples (docs/format.md §3.1 has the figures). A block's checksum costs 4
// header bytes, 0.1% of the data.
const PlainBlockSize = 4 << 10

// SampleBlockSize is the block size of an lz4 chunk of n samples of raw
// bytes in all: the smallest power of two that holds the mean sample,
// within [PlainBlockSize, BlockSize]. A range read of one sample then
// decodes the sample and at most about one block more (a 12 KiB image: 16
// KiB blocks, 28 KiB decoded on average instead of 76 KiB with 64 KiB
// blocks), at some cost in compression (docs/format.md §3.1 has both).
// zstd chunks keep BlockSize: a zstd frame's own overhead and its slower
// decoding per call make small frames cost more.
func SampleBlockSize(raw, n int) int {
	bs := PlainBlockSize
	for n > 0 && bs < BlockSize && bs*n < raw {
		bs *= 2
	}
	return bs
}

// fixedHeaderLen is the length of the fixed part of the header.
const fixedHeaderLen = 40

// corruptf is the error for a chunk whose bytes disagree with its
// checksums or with themselves: loch's ErrCorrupt (internal/base), saying
// what was found and what was expected.
func corruptf(format string, a ...any) error {
	return base.Markf(base.ErrCorrupt, "corrupt chunk: "+format, a...)
}

// Header flags.
const (
	FlagFixedShape uint16 = 1 << iota
	FlagNulls
	FlagImplicitOffsets
	FlagPartial
	// FlagBlocked (format 1.1): the data of an lz4 or zstd chunk is stored
	// as blocks of BlockSize raw bytes, each compressed alone.
	FlagBlocked
	// FlagDict (format 1.8): a text or json chunk whose raw data is one
	// index per sample into a dictionary in the header (dict.go).
	FlagDict
	// FlagEncoded (format 1.14): blocks transformed and compressed as
	// measured, shapes and offsets as encoded sequences (encoded.go).
	FlagEncoded

	knownFlags = FlagFixedShape | FlagNulls | FlagImplicitOffsets | FlagPartial | FlagBlocked | FlagDict | FlagEncoded
)

// Sample compression codes.
const (
	SampleNone uint8 = 0
	SamplePNG  uint8 = 1
	SampleJPEG uint8 = 2
)

// Chunk codec codes.
const (
	CodecNone uint8 = 0
	CodecLZ4  uint8 = 1
	CodecZstd uint8 = 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC-32C used throughout the format.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// combineChecksums returns the Checksum of n bytes from the checksums of
// their consecutive blocks of blockSize bytes (the last one shorter), as
// zlib's crc32_combine does: the checksum so far times x^(8·len) mod the
// polynomial, plus the block's. It spares a second pass over the data.
func combineChecksums(sums []uint32, blockSize, n int) uint32 {
	if len(sums) == 0 {
		return Checksum(nil)
	}
	crc, rest := sums[0], sums[1:]
	partial := len(rest) > 0 && n%blockSize != 0 // the last block is short
	if partial {
		rest = rest[:len(rest)-1]
	}
	if len(rest) > 0 {
		shift := shiftBy(blockSize)
		for _, s := range rest {
			crc = shift(crc) ^ s
		}
	}
	if partial {
		crc = multModP(x8nModP(n%blockSize), crc) ^ sums[len(sums)-1]
	}
	return crc
}

// shiftTable multiplies by one constant modulo CRC-32C's polynomial, a
// linear map, as the sum of the products of each byte of its argument
// looked up in a table: four lookups instead of multModP's 32 steps.
type shiftTable [4][256]uint32

// newShiftTable returns the table of the product by a.
func newShiftTable(a uint32) *shiftTable {
	t := new(shiftTable)
	for k := range t {
		for v := range 256 {
			t[k][v] = multModP(a, uint32(v)<<(8*k))
		}
	}
	return t
}

// mult returns a·b modulo the polynomial, a being the table's constant.
func (t *shiftTable) mult(b uint32) uint32 {
	return t[0][byte(b)] ^ t[1][byte(b>>8)] ^ t[2][byte(b>>16)] ^ t[3][byte(b>>24)]
}

// The shifts past the block sizes that builders combine checksums of.
var (
	plainShift = sync.OnceValue(func() *shiftTable { return newShiftTable(x8nModP(PlainBlockSize)) })
	blockShift = sync.OnceValue(func() *shiftTable { return newShiftTable(x8nModP(BlockSize)) })
)

// shiftBy returns the product by the shift past n bytes: a shared
// table's for the block sizes builders use, else multModP's 32 steps (a
// table of its own would cost 1,024 of them to build).
func shiftBy(n int) func(uint32) uint32 {
	switch n {
	case PlainBlockSize:
		return plainShift().mult
	case BlockSize:
		return blockShift().mult
	}
	x := x8nModP(n)
	return func(b uint32) uint32 { return multModP(x, b) }
}

// castagnoliPoly is CRC-32C's polynomial, bit-reversed.
const castagnoliPoly = 0x82f63b78

// multModP returns a·b modulo CRC-32C's polynomial, in the bit-reversed
// representation of its checksums (zlib's multmodp).
func multModP(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		if b&1 != 0 {
			b = b>>1 ^ castagnoliPoly
		} else {
			b >>= 1
		}
	}
	return p
}

// x8nModP returns x^(8n) modulo CRC-32C's polynomial: the factor that
// moves a checksum past n zero bytes.
func x8nModP(n int) uint32 {
	p, sq := uint32(1)<<31, uint32(1)<<23 // x^0, and x^8 squared as n's bits go
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			p = multModP(sq, p)
		}
		sq = multModP(sq, sq)
	}
	return p
}

// SampleCode returns the header code of a sample compression.
func SampleCode(c schema.SampleCompression) uint8 {
	switch c {
	case schema.PNG:
		return SamplePNG
	case schema.JPEG:
		return SampleJPEG
	case schema.VideoCompression:
		return SampleVideo
	case schema.AudioCompression:
		return SampleAudio
	}
	return SampleNone
}

// CodecCode returns the header code of a chunk codec.
func CodecCode(c schema.ChunkCodec) uint8 {
	switch c {
	case schema.LZ4:
		return CodecLZ4
	case schema.Zstd:
		return CodecZstd
	}
	return CodecNone
}

// Partial describes the piece of a sample that a partial chunk holds.
type Partial struct {
	Total  uint64 // bytes of the whole sample
	Offset uint64 // offset of this piece in the sample
	Index  uint32 // piece number, from 0
	Count  uint32 // number of pieces
}

// Header is a parsed chunk header. Its slices are owned by the Header.
type Header struct {
	DType             schema.DType
	SampleCompression uint8
	Codec             uint8
	NDim              int
	Flags             uint16
	N                 int   // samples
	Len               int   // header length H, checksum included
	BlockSize         int   // 0 when there are no block checksums
	DataLen           int64 // D, stored data bytes
	RawLen            int64 // R, data bytes after the codec
	// CRC is the header's own checksum (its last four bytes), which a
	// fragment records as the chunk's `hcrc` (docs/format.md §2.5).
	CRC         uint32
	shapes      []uint32
	nulls       []byte
	offsets     []uint64
	Partial     Partial
	BlockCRCs   []uint32 // CRC-32C of each raw block; nil when BlockSize is 0
	media       []Media  // media chunks: one entry per sample
	blockEnds   []int64  // blocked: end of block b's stored bytes in the data
	sampleBytes int64    // for implicit offsets
	dictOff     []uint32 // dictionary chunks: K+1 entry offsets in dict
	dict        []byte   // dictionary chunks: the entries' bytes
	dictW       int      // dictionary chunks: bytes per index
}

// Size is the size of the whole chunk object: header, data and data checksum.
func (h *Header) Size() int64 { return int64(h.Len) + h.DataLen + 4 }

// Shape returns sample i's shape (a new slice). A dictionary chunk's
// header holds no shapes (a sample's is its value's length): Shape is nil
// there, and Chunk.Shape gives it from the data.
func (h *Header) Shape(i int) []int {
	if h.Flags&FlagDict != 0 {
		return nil
	}
	out := make([]int, h.NDim)
	base := 0
	if h.Flags&FlagFixedShape == 0 {
		base = i * h.NDim
	}
	for k := range out {
		out[k] = int(h.shapes[base+k])
	}
	return out
}

// ShapeIs reports whether sample i's shape is shape (Shape without the
// allocation).
func (h *Header) ShapeIs(i int, shape []int) bool {
	if h.Flags&FlagDict != 0 || len(shape) != h.NDim {
		return false
	}
	base := 0
	if h.Flags&FlagFixedShape == 0 {
		base = i * h.NDim
	}
	for k, d := range shape {
		if int(h.shapes[base+k]) != d {
			return false
		}
	}
	return true
}

// Null reports whether sample i is empty (the row left the column empty).
func (h *Header) Null(i int) bool {
	return h.Flags&FlagNulls != 0 && h.nulls[i/8]&(1<<(i%8)) != 0
}

// Range returns the raw-data byte range [start, end) of sample i: for a
// dictionary chunk, that of its index (Value gives its bytes).
func (h *Header) Range(i int) (start, end int64) {
	if h.Flags&FlagDict != 0 {
		return int64(i) * int64(h.dictW), int64(i+1) * int64(h.dictW)
	}
	if h.Flags&FlagImplicitOffsets != 0 {
		return int64(i) * h.sampleBytes, int64(i+1) * h.sampleBytes
	}
	return int64(h.offsets[i]), int64(h.offsets[i+1])
}

// prefix parses the fixed part of a header.
func parsePrefix(b []byte) (*Header, error) {
	if len(b) < fixedHeaderLen {
		return nil, corruptf("%d bytes, shorter than a chunk header", len(b))
	}
	if string(b[0:4]) != Magic {
		return nil, corruptf("magic %q, want %q", b[0:4], Magic)
	}
	if b[4] > Major {
		return nil, base.Markf(base.ErrNewerFormat, "chunk format %d.%d is newer than this loch supports (%d.%d); upgrade loch", b[4], b[5], Major, Minor)
	}
	h := &Header{
		DType:             schema.DType(b[6]),
		SampleCompression: b[7],
		Codec:             b[8],
		NDim:              int(b[9]),
		Flags:             binary.LittleEndian.Uint16(b[10:]),
		N:                 int(binary.LittleEndian.Uint32(b[12:])),
		Len:               int(binary.LittleEndian.Uint32(b[16:])),
		BlockSize:         int(binary.LittleEndian.Uint32(b[20:])),
		DataLen:           int64(binary.LittleEndian.Uint64(b[24:])),
		RawLen:            int64(binary.LittleEndian.Uint64(b[32:])),
	}
	if h.SampleCompression > SampleAudio && b[5] > Minor {
		return nil, base.Markf(base.ErrNewerFormat, "chunk format %d.%d has sample compression %d that this loch (%d.%d) does not know; upgrade loch", b[4], b[5], b[7], Major, Minor)
	}
	if !h.DType.Valid() || h.SampleCompression > SampleAudio || h.Codec > CodecZstd {
		return nil, corruptf("unknown dtype %d, sample compression %d or codec %d", b[6], b[7], b[8])
	}
	if h.Len < fixedHeaderLen+4 || h.Len > 1<<30 || h.DataLen < 0 || h.RawLen < 0 || h.DataLen > 1<<40 || h.RawLen > 1<<40 {
		return nil, corruptf("implausible header length %d or data lengths %d/%d", h.Len, h.DataLen, h.RawLen)
	}
	if h.Codec == CodecNone && h.DataLen != h.RawLen {
		return nil, corruptf("uncompressed chunk with stored length %d != raw length %d", h.DataLen, h.RawLen)
	}
	if unknown := h.Flags &^ knownFlags; unknown != 0 {
		if b[5] > Minor {
			return nil, base.Markf(base.ErrNewerFormat, "chunk format %d.%d has flags %#x that this loch (%d.%d) does not know; upgrade loch", b[4], b[5], unknown, Major, Minor)
		}
		return nil, corruptf("unknown flags %#x", unknown)
	}
	if h.Flags&FlagEncoded != 0 && (h.N > MaxEncodedSamples || h.NDim > 1) {
		return nil, corruptf("encoded chunk of %d samples of %d dimensions, at most %d of 1", h.N, h.NDim, MaxEncodedSamples)
	}
	if h.BlockSize > 1<<30 {
		return nil, corruptf("implausible block size %d", h.BlockSize)
	}
	if h.Flags&FlagBlocked != 0 && (h.Codec == CodecNone || h.BlockSize == 0) {
		return nil, corruptf("blocked data needs a codec and a block size, have codec %d and block size %d", h.Codec, h.BlockSize)
	}
	return h, nil
}

// ParseSizes parses and verifies the fixed part of a chunk header and
// the header's checksum, and returns them (lengths, CRC) without the
// header's sequences (shapes, offsets, dictionary, block checksums): what
// a writer needs of a chunk it encoded, without a copy of its offsets. b
// must hold at least the whole header.
func ParseSizes(b []byte) (*Header, error) {
	h, err := parsePrefix(b)
	if err != nil {
		return nil, err
	}
	if len(b) < h.Len {
		return nil, corruptf("header needs %d bytes, have %d", h.Len, len(b))
	}
	if got, want := Checksum(b[:h.Len-4]), binary.LittleEndian.Uint32(b[h.Len-4:]); got != want {
		return nil, corruptf("header checksum %08x, want %08x", got, want)
	}
	h.CRC = binary.LittleEndian.Uint32(b[h.Len-4:])
	return h, nil
}

// ParseHeader parses and verifies a chunk header. b must hold at least the
// whole header (it may hold the whole chunk). The returned Header does not
// retain b.
func ParseHeader(b []byte) (*Header, error) {
	h, err := ParseSizes(b)
	if err != nil {
		return nil, err
	}
	r := reader{b: b[:h.Len-4], off: fixedHeaderLen}
	nShapes := h.NDim
	switch {
	case h.Flags&FlagDict != 0:
		nShapes = 0 // a sample's shape is its value's length
	case h.Flags&FlagFixedShape == 0:
		nShapes = h.N * h.NDim
	}
	if h.Encoded() && h.Flags&(FlagFixedShape|FlagDict) == 0 {
		h.shapes = seqOf[uint32](&r, nShapes)
	} else {
		h.shapes = r.u32s(nShapes)
	}
	if h.Flags&FlagNulls != 0 {
		h.nulls = r.bytes((h.N + 7) / 8)
	}
	switch {
	case h.Flags&FlagDict != 0:
		if err := h.parseDict(&r); err != nil {
			return nil, err
		}
	case h.Flags&FlagImplicitOffsets == 0 && h.Encoded():
		h.offsets = seqOf[uint64](&r, h.N+1)
	case h.Flags&FlagImplicitOffsets == 0:
		h.offsets = r.u64s(h.N + 1)
	}
	if IsMedia(h.SampleCompression) {
		if b := r.bytes(h.N * mediaEntryLen); len(b) == h.N*mediaEntryLen {
			h.media = parseMedia(b, h.N)
		}
	}
	if h.Flags&FlagPartial != 0 {
		h.Partial.Total = r.u64()
		h.Partial.Offset = r.u64()
		h.Partial.Index = r.u32()
		h.Partial.Count = r.u32()
	}
	if h.BlockSize > 0 {
		h.BlockCRCs = r.u32s(blockCount(h.RawLen, h.BlockSize))
	}
	var lens []uint32
	if h.Flags&FlagBlocked != 0 {
		lens = r.u32s(len(h.BlockCRCs))
	}
	if r.err != nil {
		return nil, corruptf("header: %v", r.err)
	}
	if r.off != len(r.b) {
		return nil, corruptf("header has %d unexplained bytes", len(r.b)-r.off)
	}
	if err := h.check(); err != nil {
		return nil, err
	}
	if lens != nil {
		if err := h.setBlockLens(lens); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// blockCount is the number of blocks of bs bytes that hold n bytes.
func blockCount(n int64, bs int) int {
	return int((n + int64(bs) - 1) / int64(bs))
}

// setBlockLens records where each block of a blocked chunk is stored,
// checking that the lengths are positive and add up to the data length.
func (h *Header) setBlockLens(lens []uint32) error {
	h.blockEnds = make([]int64, len(lens))
	var end int64
	for b, n := range lens {
		if n == 0 {
			return corruptf("block %d has a stored length of 0", b)
		}
		end += int64(n)
		h.blockEnds[b] = end
	}
	if end != h.DataLen {
		return corruptf("block lengths add up to %d, data length %d", end, h.DataLen)
	}
	return nil
}

// check verifies the header's internal consistency.
func (h *Header) check() error {
	if h.Encoded() {
		if err := h.checkEncoded(); err != nil {
			return err
		}
	}
	if h.Flags&FlagDict != 0 {
		return h.checkDict()
	}
	if h.Flags&FlagImplicitOffsets != 0 {
		if h.Flags&FlagFixedShape == 0 || h.Flags&FlagNulls != 0 || h.DType.Variable() || h.SampleCompression != SampleNone {
			return corruptf("implicit offsets need a fixed shape, no nulls, a fixed-size dtype and no sample compression")
		}
		n := int64(1)
		for _, d := range h.shapes {
			n *= int64(d)
			if n > 1<<40 {
				return corruptf("sample shape too large")
			}
		}
		h.sampleBytes = n * int64(h.DType.Size())
		if h.sampleBytes*int64(h.N) != h.RawLen {
			return corruptf("%d samples of %d bytes but raw length %d", h.N, h.sampleBytes, h.RawLen)
		}
		return nil
	}
	if h.offsets[0] != 0 || h.offsets[h.N] != uint64(h.RawLen) {
		return corruptf("offsets span [%d, %d), raw length %d", h.offsets[0], h.offsets[h.N], h.RawLen)
	}
	for i := 0; i < h.N; i++ {
		if h.offsets[i+1] < h.offsets[i] {
			return corruptf("offsets decrease at sample %d", i)
		}
	}
	if h.Flags&FlagPartial != 0 {
		if h.N != 1 || h.Partial.Count == 0 || h.Partial.Index >= h.Partial.Count || h.Partial.Offset+uint64(h.RawLen) > h.Partial.Total {
			return corruptf("inconsistent partial-sample fields")
		}
		return nil
	}
	if h.SampleCompression == SampleNone && !h.DType.Variable() {
		for i := 0; i < h.N; i++ {
			if h.Null(i) {
				continue
			}
			n := uint64(h.DType.Size())
			for _, d := range h.Shape(i) {
				n *= uint64(d)
			}
			if h.offsets[i+1]-h.offsets[i] != n {
				return corruptf("sample %d has %d bytes, its shape needs %d", i, h.offsets[i+1]-h.offsets[i], n)
			}
		}
	}
	return nil
}

type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.err = fmt.Errorf("needs %d more bytes at offset %d, header has %d", n, r.off, len(r.b))
		return nil
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s
}

func (r *reader) u32() uint32 {
	s := r.take(4)
	if s == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(s)
}

func (r *reader) u64() uint64 {
	s := r.take(8)
	if s == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(s)
}

func (r *reader) bytes(n int) []byte {
	s := r.take(n)
	return append([]byte(nil), s...)
}

func (r *reader) u32s(n int) []uint32 { return fixedLE(r, n, 4, binary.LittleEndian.Uint32) }

func (r *reader) u64s(n int) []uint64 { return fixedLE(r, n, 8, binary.LittleEndian.Uint64) }

// fixedLE reads n little-endian values of size bytes each, decoding each
// with get.
func fixedLE[T uint32 | uint64](r *reader, n, size int, get func([]byte) T) []T {
	if n > math.MaxInt32/size {
		r.err = fmt.Errorf("count %d too large", n)
		return nil
	}
	s := r.take(size * n)
	if s == nil {
		return nil
	}
	out := make([]T, n)
	for i := range out {
		out[i] = get(s[size*i:])
	}
	return out
}
