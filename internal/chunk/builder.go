package chunk

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"github.com/lochdata/loch/schema"
)

// Builder collects the samples of one chunk. A Builder is not safe for
// concurrent use. Add copies the sample bytes; the caller may reuse them.
//
// The raw data lies in buf after room bytes kept free for the header, so
// that EncodeInPlace can put a codec none chunk's header before its data
// instead of copying the data after a header.
type Builder struct {
	dtype    schema.DType
	sample   uint8
	codec    uint8
	ndim     int
	shapes   []uint32
	offsets  []uint64
	nulls    []bool
	anyNull  bool
	raw      []byte // buf[room : room+len(raw)]
	buf      []byte
	room     int // bytes before raw in buf, for the header (EncodeInPlace)
	wantRoom int // room the last header in place needed, taken at Reset
	// sums are the checksums of raw's complete blocks of sumBlock bytes
	// (the chunk's block size), computed as samples are added, while
	// their bytes are in the processor's cache.
	sums     []uint32
	sumBlock int
	partial  *Partial
	ndimSet  bool
	fixed    bool
	firstDim []uint32
	media    []Media // media chunks: one entry per sample (media.go)
}

// NewBuilder returns a Builder for a column with the given dtype, sample
// compression and chunk codec codes. sizeHint, if positive, is the expected
// number of data bytes, allocated up front.
func NewBuilder(dtype schema.DType, sampleCompression, codec uint8, sizeHint int) *Builder {
	b := &Builder{dtype: dtype, sample: sampleCompression, codec: codec, offsets: []uint64{0}, fixed: true, sumBlock: sumBlock(codec)}
	if sizeHint > 0 {
		// A first guess at the header: block checksums of 4 KiB blocks
		// (0.1% of the data) and the offsets of samples of 4 KiB and up;
		// a larger header raises the room for the Builder's next chunk.
		b.room = 4<<10 + sizeHint/256
		b.buf = make([]byte, b.room+sizeHint+4) // 4: the data checksum
		b.raw = b.buf[b.room:b.room]
	}
	return b
}

// Len is the number of samples added.
func (b *Builder) Len() int { return len(b.nulls) }

// NDim is the number of dimensions of the samples added (0 before the first).
func (b *Builder) NDim() int { return b.ndim }

// RawBytes is the number of data bytes added (encoded bytes for png/jpeg).
func (b *Builder) RawBytes() int { return len(b.raw) }

// Add appends one sample with its shape and bytes (for png/jpeg columns, the
// encoded image and its decoded shape). All samples of a chunk have the same
// number of dimensions. A null sample has no bytes.
func (b *Builder) Add(shape []int, data []byte, null bool) error {
	if !b.ndimSet {
		b.ndim = len(shape)
		b.ndimSet = true
		b.firstDim = make([]uint32, len(shape))
		for i, d := range shape {
			b.firstDim[i] = uint32(d)
		}
	}
	if null {
		shape = make([]int, b.ndim)
		data = nil
		b.anyNull = true
		b.fixed = false
	}
	if len(shape) != b.ndim {
		return fmt.Errorf("sample shape %v has %d dimensions, chunk has %d", shape, len(shape), b.ndim)
	}
	for i, d := range shape {
		if d < 0 || d > 1<<31 {
			return fmt.Errorf("sample shape %v: dimension out of range", shape)
		}
		if uint32(d) != b.firstDim[i] {
			b.fixed = false
		}
		b.shapes = append(b.shapes, uint32(d))
	}
	b.appendRaw(data)
	b.offsets = append(b.offsets, uint64(len(b.raw)))
	b.nulls = append(b.nulls, null)
	if IsMedia(b.sample) {
		b.media = append(b.media, Media{})
	}
	return nil
}

// appendRaw appends data to the raw data, keeping the room before it and
// space for a checksum after it.
func (b *Builder) appendRaw(data []byte) {
	if len(b.raw)+len(data)+4 > cap(b.raw) {
		need := b.room + len(b.raw) + len(data) + 4
		buf := make([]byte, max(need, 2*len(b.buf)))
		copy(buf[b.room:], b.raw)
		b.buf, b.raw = buf, buf[b.room:b.room+len(b.raw)]
	}
	b.raw = append(b.raw, data...)
	for off := len(b.sums) * b.sumBlock; off+b.sumBlock <= len(b.raw); off += b.sumBlock {
		b.sums = append(b.sums, Checksum(b.raw[off:off+b.sumBlock]))
	}
}

// sumBlock is the block size of chunks of a codec.
func sumBlock(codec uint8) int {
	if codec == CodecNone {
		return PlainBlockSize
	}
	return BlockSize
}

// blockSums returns the checksums of raw's blocks of blockSize bytes,
// taking those Add computed when raw is the Builder's raw data.
func (b *Builder) blockSums(raw []byte, blockSize int) []uint32 {
	sums := make([]uint32, 0, blockCount(int64(len(raw)), blockSize))
	off := 0
	if blockSize == b.sumBlock && len(raw) == len(b.raw) && unsafe.SliceData(raw) == unsafe.SliceData(b.raw) {
		sums, off = append(sums, b.sums...), len(b.sums)*blockSize
	}
	for ; off < len(raw); off += blockSize {
		sums = append(sums, Checksum(raw[off:min(off+blockSize, len(raw))]))
	}
	return sums
}

// SetPartial marks the (single) sample as one piece of a larger sample.
func (b *Builder) SetPartial(p Partial) { b.partial = &p }

// Reinit empties the Builder for a column of another type, keeping its
// buffers.
func (b *Builder) Reinit(dtype schema.DType, sampleCompression, codec uint8) {
	b.Reset()
	b.dtype, b.sample, b.codec, b.sumBlock = dtype, sampleCompression, codec, sumBlock(codec)
}

// Reset empties the Builder, keeping its buffers.
func (b *Builder) Reset() {
	if b.wantRoom > b.room && b.wantRoom < len(b.buf)/2 {
		b.room = b.wantRoom
	}
	b.raw = b.buf[b.room:b.room]
	b.shapes, b.offsets, b.nulls, b.media, b.sums = b.shapes[:0], b.offsets[:1], b.nulls[:0], b.media[:0], b.sums[:0]
	b.anyNull, b.partial, b.ndimSet, b.fixed = false, nil, false, true
}

// Encode returns the chunk object holding the samples added so far.
func (b *Builder) Encode() ([]byte, error) { return b.EncodeTo(nil) }

// EncodeTo is Encode writing into dst's memory when it has room.
//
// Every chunk has block checksums. Chunks of codec lz4 and zstd are
// blocked (format 1.1): each block of BlockSize raw bytes is compressed
// alone, so that a reader can decode any run of blocks without the others.
func (b *Builder) EncodeTo(dst []byte) ([]byte, error) { return b.encode(dst, true, false) }

// EncodeInPlace is EncodeTo without the copy of a codec none chunk's
// data: its header is put in the room the Builder keeps before the data,
// and the chunk returned (inPlace) shares the Builder's memory, valid
// until the next Add, Reset or Reinit. Other chunks, and one whose header
// outgrows the room (the Builder then keeps more after its next Reset),
// are written into dst's memory as EncodeTo does.
func (b *Builder) EncodeInPlace(dst []byte) (obj []byte, inPlace bool, err error) {
	obj, err = b.encode(dst, true, true)
	return obj, err == nil && b.inBuf(obj), err
}

// inBuf reports whether obj lies in the Builder's buffer.
func (b *Builder) inBuf(obj []byte) bool {
	if len(obj) == 0 || len(b.buf) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.SliceData(obj))), uintptr(unsafe.Pointer(unsafe.SliceData(b.buf)))
	return p >= lo && p < lo+uintptr(len(b.buf))
}

// EncodeFormat10 returns the chunk object as the format 1.0 writer wrote
// it: an lz4 or zstd chunk holds one lz4 block or zstd frame of all the
// data and no block checksums (codec none chunks are the same in both).
// loch writes format 1.1; tests use this to make the chunks older loch
// wrote, and prove it byte for byte against chunks that loch wrote.
func (b *Builder) EncodeFormat10() ([]byte, error) { return b.encode(nil, false, false) }

// encode encodes the chunk, blocked (format 1.1) or not (format 1.0), a
// codec none chunk's header in the room before its data when inPlace.
func (b *Builder) encode(dst []byte, blocked, inPlace bool) ([]byte, error) {
	n := b.Len()
	if n == 0 {
		return nil, fmt.Errorf("encode chunk: no samples")
	}
	if b.partial != nil && n != 1 {
		return nil, fmt.Errorf("encode chunk: a partial chunk holds one sample, have %d", n)
	}
	flags, blockSize := b.flags(), BlockSize
	d := dictData{raw: b.raw}
	if blocked {
		if d.offs, d.entries, d.raw, d.ok = b.dictionary(); d.ok {
			flags = flags&^FlagFixedShape | FlagDict
		} else {
			d.raw = b.raw
		}
	}
	switch {
	case !blocked && b.codec != CodecNone:
		flags, blockSize = flags&^FlagBlocked, 0
	case !blocked:
		blockSize = BlockSize // format 1.0 as its writer wrote it
	case b.codec == CodecNone:
		blockSize = PlainBlockSize
	}
	if blocked {
		if out, ok, err := b.encodeEncoded(dst, flags, &d); ok || err != nil {
			return out, err
		}
	}
	hdr, sums := b.header(flags, blockSize, &d, nil)
	hlen := len(hdr) + 4
	if b.codec == CodecNone && !d.ok {
		return b.encodePlain(dst, hdr, sums, blockSize, inPlace), nil
	}
	out := dst[:0]
	if need := hlen + len(d.raw) + 64; cap(out) < need && b.codec == CodecNone {
		out = make([]byte, 0, need)
	}
	out = append(out, hdr...)
	// The data length (and the block lengths) are known only after
	// compression: patch them, then seal.
	out = binary.LittleEndian.AppendUint32(out, 0)
	var err error
	switch {
	case b.codec == CodecNone:
		out = append(out, d.raw...)
	case flags&FlagBlocked == 0:
		out, err = compress(b.codec, out, d.raw)
	default:
		out, err = appendBlocks(b.codec, out, hlen, d.raw)
	}
	if err != nil {
		return nil, fmt.Errorf("encode chunk: %w", err)
	}
	dataLen := len(out) - hlen
	binary.LittleEndian.PutUint64(out[24:], uint64(dataLen))
	binary.LittleEndian.PutUint32(out[hlen-4:], Checksum(out[:hlen-4]))
	out = binary.LittleEndian.AppendUint32(out, Checksum(out[hlen:]))
	return out, nil
}

// encodePlain returns the codec none chunk of header hdr (without its
// checksum) and the raw data: in place when asked and the room fits the
// header, else copied into dst's memory.
func (b *Builder) encodePlain(dst, hdr []byte, sums []uint32, blockSize int, inPlace bool) []byte {
	hlen := len(hdr) + 4
	if inPlace {
		if hlen <= b.room && cap(b.raw)-len(b.raw) >= 4 {
			return b.inPlace(hdr, sums, blockSize)
		}
		b.wantRoom = (hlen + hlen/4 + 4095) &^ 4095
	}
	dst = slices.Grow(dst[:0], hlen+len(b.raw)+4)
	out := append(append(dst, hdr...), 0, 0, 0, 0)
	return b.seal(append(out, b.raw...), hlen, sums, blockSize)
}

// inPlace puts the header of a codec none chunk (without its checksum) in
// the room before the raw data, and returns the chunk, sealed.
func (b *Builder) inPlace(hdr []byte, sums []uint32, blockSize int) []byte {
	hlen := len(hdr) + 4
	out := b.buf[b.room-hlen : b.room+len(b.raw)]
	copy(out, hdr)
	return b.seal(out, hlen, sums, blockSize)
}

// seal completes a codec none chunk out of hlen header bytes then the raw
// data: the data length, the header checksum, and the data checksum after
// the data, combined from the block checksums sums where there are some.
func (b *Builder) seal(out []byte, hlen int, sums []uint32, blockSize int) []byte {
	binary.LittleEndian.PutUint64(out[24:], uint64(len(b.raw)))
	binary.LittleEndian.PutUint32(out[hlen-4:], Checksum(out[:hlen-4]))
	if blockSize > 0 {
		return binary.LittleEndian.AppendUint32(out, combineChecksums(sums, blockSize, len(b.raw)))
	}
	return binary.LittleEndian.AppendUint32(out, Checksum(b.raw))
}

// dictData is the raw data a chunk is encoded with: the samples' bytes, or
// (ok) a dictionary's indices, with its entries.
type dictData struct {
	raw     []byte
	offs    []uint32
	entries []byte
	ok      bool
}

// appendBlocks appends the compressed blocks of raw to out, whose header
// (of hlen bytes, checksum included) ends with the block lengths, and
// fills those in.
func appendBlocks(codec uint8, out []byte, hlen int, raw []byte) ([]byte, error) {
	nblocks := blockCount(int64(len(raw)), BlockSize)
	lens := hlen - 4 - 4*nblocks // offset of the block lengths
	for k := range nblocks {
		start := len(out)
		var err error
		if out, err = compress(codec, out, raw[k*BlockSize:min((k+1)*BlockSize, len(raw))]); err != nil {
			return nil, fmt.Errorf("block %d: %w", k, err)
		}
		binary.LittleEndian.PutUint32(out[lens+4*k:], uint32(len(out)-start))
	}
	return out, nil
}

// flags returns the header flags that describe the samples added.
func (b *Builder) flags() uint16 {
	var flags uint16
	if b.fixed {
		flags |= FlagFixedShape
	}
	if b.anyNull {
		flags |= FlagNulls
	}
	if b.fixed && !b.anyNull && !b.dtype.Variable() && b.sample == SampleNone && b.partial == nil {
		flags |= FlagImplicitOffsets
	}
	if b.partial != nil {
		flags |= FlagPartial
	}
	if b.codec != CodecNone {
		flags |= FlagBlocked
	}
	return flags
}

// header returns the chunk header (docs/format.md, section 3) without its
// closing checksum: the fixed part, with the header length set and the data
// length left zero, then the shapes, the null bitmap, the offsets or the
// dictionary, the partial record, the block checksums and (zeroed) block
// lengths that flags and blockSize call for, over the raw data d.raw.
// An encoded chunk (e not nil) has its codec, its shapes and offsets as
// encoded sequences, and its block lengths, from e.
//
// It returns the block checksums too (nil when blockSize is 0).
func (b *Builder) header(flags uint16, blockSize int, d *dictData, e *encoding) (hdr []byte, sums []uint32) {
	raw := d.raw
	n := b.Len()
	hdr = make([]byte, fixedHeaderLen, fixedHeaderLen+4*len(b.shapes)+8*len(b.offsets)+64)
	copy(hdr, Magic)
	hdr[4], hdr[5] = Major, b.minor(flags, d)
	hdr[6], hdr[7], hdr[8], hdr[9] = byte(b.dtype), b.sample, b.codec, byte(b.ndim)
	if e != nil {
		hdr[8] = e.codec
	}
	binary.LittleEndian.PutUint16(hdr[10:], flags)
	binary.LittleEndian.PutUint32(hdr[12:], uint32(n))
	binary.LittleEndian.PutUint32(hdr[20:], uint32(blockSize))
	binary.LittleEndian.PutUint64(hdr[32:], uint64(len(raw)))
	switch {
	case d.ok: // no shapes: a sample's is its value's length
	case flags&FlagFixedShape != 0:
		hdr = appendU32s(hdr, b.shapes[:b.ndim])
	case e != nil:
		hdr = appendSeq(hdr, e.shapes)
	default:
		hdr = appendU32s(hdr, b.shapes)
	}
	if b.anyNull {
		hdr = b.appendNullBitmap(hdr)
	}
	switch {
	case d.ok:
		hdr = binary.LittleEndian.AppendUint32(hdr, uint32(len(d.offs)-1))
		hdr = appendU32s(hdr, d.offs)
		hdr = append(hdr, d.entries...)
	case flags&FlagImplicitOffsets == 0 && e != nil:
		hdr = appendSeq(hdr, e.offsets)
	case flags&FlagImplicitOffsets == 0:
		for _, o := range b.offsets {
			hdr = binary.LittleEndian.AppendUint64(hdr, o)
		}
	}
	if IsMedia(b.sample) {
		hdr = appendMedia(hdr, b.media)
	}
	if b.partial != nil {
		hdr = binary.LittleEndian.AppendUint64(hdr, b.partial.Total)
		hdr = binary.LittleEndian.AppendUint64(hdr, b.partial.Offset)
		hdr = binary.LittleEndian.AppendUint32(hdr, b.partial.Index)
		hdr = binary.LittleEndian.AppendUint32(hdr, b.partial.Count)
	}
	if blockSize > 0 {
		sums = b.blockSums(raw, blockSize)
		hdr = appendU32s(hdr, sums)
	}
	switch {
	case e != nil:
		hdr = appendU32s(hdr, e.lens)
	case flags&FlagBlocked != 0:
		hdr = append(hdr, make([]byte, 4*blockCount(int64(len(raw)), blockSize))...)
	}
	binary.LittleEndian.PutUint32(hdr[16:], uint32(len(hdr)+4))
	return hdr, sums
}

// minor is the chunk minor version of a chunk with these flags: each kind
// of chunk is written with the version that defined it, so that older
// readers read what they can.
func (b *Builder) minor(flags uint16, d *dictData) byte {
	switch {
	case flags&FlagEncoded != 0:
		return EncodedMinor
	case d.ok:
		return DictMinor
	case IsMedia(b.sample):
		return MediaMinor
	case flags&FlagBlocked != 0:
		return 1 // format 1.1; other chunks are written as 1.0 wrote them
	}
	return 0
}

// appendNullBitmap appends one bit per sample, set for a null one, least
// significant bit first.
func (b *Builder) appendNullBitmap(hdr []byte) []byte {
	bits := make([]byte, (b.Len()+7)/8)
	for i, isNull := range b.nulls {
		if isNull {
			bits[i/8] |= 1 << (i % 8)
		}
	}
	return append(hdr, bits...)
}

func appendU32s(b []byte, v []uint32) []byte {
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, x)
	}
	return b
}
