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
	shapes   []uint32 // ndim per sample
	offsets  []uint64 // n+1, unless lazyOffsets or lenOffsets
	n        int      // samples added
	nulls    []bool   // one flag per sample once one is null; empty before
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
	// lazyOffsets says offsets holds only its first 0: while every
	// sample is of a fixed-size dtype, non-null, of the first's shape
	// and stored as it is, sample i's offset is i times its size (the
	// chunk's offsets are implicit), and a million scalars need no 8 MB
	// of offsets. The first sample that breaks it writes them out.
	lazyOffsets bool
	// lenOffsets says offsets holds only its first 0: while every
	// sample of a text, json or bytes chunk is one-dimensional and its
	// shape is its byte count (a null's 0), the offsets are the running
	// sums of the shapes, and a chunk of short strings needs no 8 bytes
	// a value to hold them. The first sample that breaks it (a piece of
	// a split sample) writes them out.
	lenOffsets bool
}

// NewBuilder returns a Builder for a column with the given dtype, sample
// compression and chunk codec codes. sizeHint, if positive, is the expected
// number of data bytes, allocated up front.
func NewBuilder(dtype schema.DType, sampleCompression, codec uint8, sizeHint int) *Builder {
	b := &Builder{dtype: dtype, sample: sampleCompression, codec: codec, offsets: []uint64{0}, fixed: true, sumBlock: sumBlock(codec)}
	b.lazyOffsets = b.canElide()
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
func (b *Builder) Len() int { return b.n }

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
		b.lenOffsets = b.dtype.Variable() && b.sample == SampleNone && b.ndim == 1
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
	}
	if b.lenOffsets && shape[0] != len(data) {
		b.writeLenOffsets()
	}
	for _, d := range shape {
		b.shapes = append(b.shapes, uint32(d))
	}
	if b.lazyOffsets && (null || !b.fixed) {
		b.writeOffsets()
	}
	b.appendRaw(data)
	if !b.lazyOffsets && !b.lenOffsets {
		b.offsets = append(b.offsets, uint64(len(b.raw)))
	}
	b.note(null)
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

// sumBlock is the size of the blocks whose checksums Add computes for
// chunks of a codec: their block size, or for lz4, whose block size
// follows the mean sample (SampleBlockSize), the smallest, whose
// checksums combine into those of the larger blocks (blockSums).
func sumBlock(codec uint8) int {
	if codec == CodecNone || codec == CodecLZ4 {
		return PlainBlockSize
	}
	return BlockSize
}

// blockSums returns the checksums of raw's blocks of blockSize bytes,
// taking those Add computed (combined, where blockSize is a multiple of
// theirs) when raw is the Builder's raw data.
func (b *Builder) blockSums(raw []byte, blockSize int) []uint32 {
	sums := make([]uint32, 0, blockCount(int64(len(raw)), blockSize))
	off := 0
	if blockSize%b.sumBlock == 0 && len(raw) == len(b.raw) && unsafe.SliceData(raw) == unsafe.SliceData(b.raw) {
		per := blockSize / b.sumBlock
		for k := 0; k+per <= len(b.sums); k += per {
			sums = append(sums, combineChecksums(b.sums[k:k+per], b.sumBlock, blockSize))
		}
		off = len(sums) * blockSize
	}
	for ; off < len(raw); off += blockSize {
		sums = append(sums, Checksum(raw[off:min(off+blockSize, len(raw))]))
	}
	return sums
}

// SetPartial marks the (single) sample as one piece of a larger sample.
func (b *Builder) SetPartial(p Partial) {
	b.writeOffsets()
	b.partial = &p
}

// canElide reports whether the Builder's samples can start with lazy
// offsets (lazyOffsets).
func (b *Builder) canElide() bool { return !b.dtype.Variable() && b.sample == SampleNone }

// writeOffsets writes out lazy offsets (lazyOffsets), those of the
// samples added so far, all of one size.
func (b *Builder) writeOffsets() {
	if !b.lazyOffsets {
		return
	}
	b.lazyOffsets = false
	n := b.n
	if n == 0 {
		return
	}
	size := len(b.raw) / n
	for i := 1; i <= n; i++ {
		b.offsets = append(b.offsets, uint64(i*size))
	}
}

// Reinit empties the Builder for a column of another type, keeping its
// buffers.
func (b *Builder) Reinit(dtype schema.DType, sampleCompression, codec uint8) {
	b.dtype, b.sample, b.codec, b.sumBlock = dtype, sampleCompression, codec, sumBlock(codec)
	b.Reset()
}

// Reset empties the Builder, keeping its buffers.
func (b *Builder) Reset() {
	if b.wantRoom > b.room && b.wantRoom < len(b.buf)/2 {
		b.room = b.wantRoom
	}
	b.raw = b.buf[b.room:b.room]
	b.shapes, b.offsets, b.nulls, b.media, b.sums = b.shapes[:0], b.offsets[:1], b.nulls[:0], b.media[:0], b.sums[:0]
	b.n, b.anyNull, b.partial, b.ndimSet, b.fixed, b.lenOffsets = 0, false, nil, false, true, false
	b.lazyOffsets = b.canElide()
}

// Encode returns the chunk object holding the samples added so far.
func (b *Builder) Encode() ([]byte, error) { return b.EncodeTo(nil) }

// EncodeTo is Encode writing into dst's memory when it has room.
//
// Every chunk has block checksums. Chunks of codec lz4 and zstd are
// blocked (format 1.1): each block of raw bytes is compressed alone, so
// that a reader can decode any run of blocks without the others; blocks
// are BlockSize bytes, or for lz4 SampleBlockSize of the samples' mean
// size.
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
	if flags&FlagImplicitOffsets == 0 {
		b.writeOffsets() // (lazy offsets imply implicit ones: not expected)
	}
	s := encScratchPool.Get().(*encScratch)
	defer s.put()
	d := dictData{raw: b.raw}
	if blocked {
		if d.offs, d.entries, d.raw, d.ok = b.dictionary(s); d.ok {
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
	case b.codec == CodecLZ4 && !d.ok:
		blockSize = SampleBlockSize(len(b.raw), n)
	}
	if blocked {
		out, ok, err := b.encodeEncoded(dst, flags, &d, s)
		if ok || err != nil {
			return out, err
		}
		if out != nil {
			dst = out // grown, maybe
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
		out, err = appendBlocks(b.codec, out, hlen, d.raw, blockSize)
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

// appendBlocks appends the compressed blocks of raw (of bs bytes each) to
// out, whose header (of hlen bytes, checksum included) ends with the block
// lengths, and fills those in.
func appendBlocks(codec uint8, out []byte, hlen int, raw []byte, bs int) ([]byte, error) {
	nblocks := blockCount(int64(len(raw)), bs)
	lens := hlen - 4 - 4*nblocks // offset of the block lengths
	for k := range nblocks {
		start := len(out)
		var err error
		if out, err = compress(codec, out, raw[k*bs:min((k+1)*bs, len(raw))]); err != nil {
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
	// Room for the shapes and offsets only where they are written out
	// plain: a chunk of a million scalars would otherwise allocate 12 MB
	// of header for a few bytes.
	room := 64
	if !d.ok && e == nil && flags&FlagFixedShape == 0 {
		room += 4 * b.n * b.ndim
	}
	if !d.ok && e == nil && flags&FlagImplicitOffsets == 0 {
		room += 8 * (b.n + 1)
	}
	hdr = make([]byte, fixedHeaderLen, fixedHeaderLen+room)
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
		hdr = appendU32s(hdr, b.firstDim) // every sample's shape
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
		hdr = b.appendOffsets(hdr)
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
	for i := range b.n {
		if b.isNull(i) {
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

// AddFixed appends n samples of one shape whose bytes lie one after the
// other in data (len(data)/n bytes each), as n calls of Add would. nulls,
// when not nil, marks the null samples (n flags); a null sample's bytes
// in data are skipped.
func (b *Builder) AddFixed(shape []int, data []byte, n int, nulls []bool) error {
	if n == 0 {
		return nil
	}
	if len(data)%n != 0 || nulls != nil && len(nulls) != n {
		return fmt.Errorf("%d samples in %d bytes with %d null flags", n, len(data), len(nulls))
	}
	size := len(data) / n
	if err := b.Add(shape, data[:size], nulls != nil && nulls[0]); err != nil {
		return err
	}
	if b.lenOffsets && (len(shape) != 1 || shape[0] != size) {
		b.writeLenOffsets()
	}
	if nulls == nil { // the common case: one copy of the bytes
		base := len(b.raw)
		b.appendRaw(data[size:])
		for i := 1; i < n && !b.lazyOffsets && !b.lenOffsets; i++ {
			b.offsets = append(b.offsets, uint64(base+i*size))
		}
	}
	for i := 1; i < n; i++ {
		null := nulls != nil && nulls[i]
		if null {
			b.writeOffsets()
		}
		b.appendRun(shape, null)
		if nulls != nil {
			if !null {
				b.appendRaw(data[i*size : (i+1)*size])
			}
			if !b.lazyOffsets && !b.lenOffsets {
				b.offsets = append(b.offsets, uint64(len(b.raw)))
			}
		}
	}
	return nil
}

// AddVar appends len(offs)-1 samples of one dimension, sample i the bytes
// data[offs[i]:offs[i+1]], as calls of Add would. nulls, when not nil,
// marks the null samples; a null sample's range must be empty.
func (b *Builder) AddVar(data []byte, offs []int, nulls []bool) error {
	n := len(offs) - 1
	if n <= 0 {
		return nil
	}
	if nulls != nil && len(nulls) != n || offs[n] > len(data) {
		return fmt.Errorf("%d samples in %d bytes (last offset %d) with %d null flags", n, len(data), offs[n], len(nulls))
	}
	shape := []int{offs[1] - offs[0]}
	if err := b.Add(shape, data[offs[0]:offs[1]], nulls != nil && nulls[0]); err != nil {
		return err
	}
	b.appendRaw(data[offs[1]:offs[n]])
	base := len(b.raw) - offs[n]
	for i := 1; i < n; i++ {
		l := offs[i+1] - offs[i]
		if l < 0 || l > 1<<31 {
			return fmt.Errorf("sample %d: length %d out of range", i, l)
		}
		null := nulls != nil && nulls[i]
		if null && l != 0 {
			return fmt.Errorf("sample %d is null but has %d bytes", i, l)
		}
		shape[0] = l
		b.appendRun(shape, null)
		if !b.lenOffsets {
			b.offsets = append(b.offsets, uint64(base+offs[i+1]))
		}
	}
	return nil
}

// note counts one more sample, null or not, in n and nulls.
func (b *Builder) note(null bool) {
	if null && len(b.nulls) == 0 { // the first null: the flags of those before
		b.nulls = append(b.nulls, make([]bool, b.n)...)
	}
	if null || len(b.nulls) > 0 {
		b.nulls = append(b.nulls, null)
	}
	b.n++
}

// isNull reports whether sample i is null.
func (b *Builder) isNull(i int) bool { return len(b.nulls) > 0 && b.nulls[i] }

// writeLenOffsets writes out the offsets of lenOffsets, those of the
// samples added so far.
func (b *Builder) writeLenOffsets() {
	if !b.lenOffsets {
		return
	}
	b.lenOffsets = false
	off := uint64(0)
	for _, l := range b.shapes {
		off += uint64(l)
		b.offsets = append(b.offsets, off)
	}
}

// appendOffsets appends every sample's offset and the end of the data to
// dst, little-endian uint64s.
func (b *Builder) appendOffsets(dst []byte) []byte {
	if !b.lenOffsets {
		for _, o := range b.offsets {
			dst = binary.LittleEndian.AppendUint64(dst, o)
		}
		return dst
	}
	off := uint64(0)
	dst = binary.LittleEndian.AppendUint64(dst, off)
	for _, l := range b.shapes {
		off += uint64(l)
		dst = binary.LittleEndian.AppendUint64(dst, off)
	}
	return dst
}

// appendRun records one more sample of AddFixed or AddVar (of the
// dimensions checked by their first Add) but its bytes and offset.
func (b *Builder) appendRun(shape []int, null bool) {
	switch {
	case null:
		b.anyNull, b.fixed = true, false
		b.shapes = append(b.shapes, make([]uint32, b.ndim)...)
	default:
		for i, d := range shape {
			if uint32(d) != b.firstDim[i] {
				b.fixed = false
			}
			b.shapes = append(b.shapes, uint32(d))
		}
	}
	b.note(null)
	if IsMedia(b.sample) {
		b.media = append(b.media, Media{})
	}
}
