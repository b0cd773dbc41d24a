package chunk

import (
	"encoding/binary"
	"fmt"
	"sort"
	"sync/atomic"
)

// Chunk is a decoded chunk: its header and its raw data.
type Chunk struct {
	*Header
	// Raw is the decoded data section: the samples, concatenated. In a
	// salvaged chunk the bytes of the Bad blocks are not to be used.
	Raw []byte
	// Salvaged reports that the chunk's data failed its data checksum and
	// was decoded by DecodeDamaged one block at a time: the object is
	// corrupt (it must not be cached), and Bad lists the blocks that failed
	// their own checksum, in increasing order (none when only the data
	// checksum itself was damaged).
	Salvaged bool
	Bad      []int
}

// Sample returns sample i's bytes, a sub-slice of c.Raw (valid as long as
// c.Raw is). In a salvaged chunk, check BadSample first.
func (c *Chunk) Sample(i int) []byte { return c.Value(c.Raw, 0, i) }

// Shape returns sample i's shape (a new slice): the header's, or for a
// dictionary chunk the length of its value ([0] when null).
func (c *Chunk) Shape(i int) []int {
	if c.Dict() {
		return []int{len(c.Sample(i))}
	}
	return c.Header.Shape(i)
}

// BadSample reports whether sample i's bytes overlap a bad block of a
// salvaged chunk, and the first such block. A sample without bytes is
// never bad.
func (c *Chunk) BadSample(i int) (block int, bad bool) {
	if len(c.Bad) == 0 {
		return 0, false
	}
	s, e := c.Range(i)
	if s == e {
		return 0, false
	}
	a, b := int(s/int64(c.BlockSize)), int((e-1)/int64(c.BlockSize))
	k := sort.SearchInts(c.Bad, a)
	if k < len(c.Bad) && c.Bad[k] <= b {
		return c.Bad[k], true
	}
	return 0, false
}

// Decode verifies a whole chunk object and decodes its data. buf, if large
// enough, receives the raw data (for codec none, Raw aliases obj instead: no
// copy). The Chunk does not otherwise retain obj.
func Decode(obj, buf []byte) (*Chunk, error) { return decode(obj, buf, false) }

// DecodeDamaged is Decode for a reader that can use the sound part of a
// damaged chunk (docs/format.md, section 3.1). When the data fails its
// checksum or a block does not decompress, and the chunk is range-readable
// (it has block checksums), it checks each block alone and returns the
// chunk with Salvaged set and the failed blocks in Bad. A damaged header,
// an object of the wrong size, a damaged chunk without block checksums and
// one whose every block failed are errors, as with Decode.
func DecodeDamaged(obj, buf []byte) (*Chunk, error) { return decode(obj, buf, true) }

// Check verifies a whole chunk object without decoding its data: its
// header, its size and its data checksum. (Decoding a blocked chunk whose
// data passes the checksum can fail only if its writer was broken.)
func Check(obj []byte) (*Header, error) {
	h, data, err := split(obj)
	if err != nil {
		return nil, err
	}
	if got, want := Checksum(data), binary.LittleEndian.Uint32(obj[len(obj)-4:]); got != want {
		return nil, corruptf("data checksum %08x, want %08x", got, want)
	}
	return h, nil
}

// split parses a chunk object's header and returns it with the data
// section, checking the object's size.
func split(obj []byte) (*Header, []byte, error) {
	h, err := ParseHeader(obj)
	if err != nil {
		return nil, nil, err
	}
	if int64(len(obj)) != h.Size() {
		return nil, nil, corruptf("object is %d bytes, header says %d", len(obj), h.Size())
	}
	return h, obj[h.Len : int64(h.Len)+h.DataLen], nil
}

func decode(obj, buf []byte, salvage bool) (*Chunk, error) {
	h, data, err := split(obj)
	if err != nil {
		return nil, err
	}
	got, want := Checksum(data), binary.LittleEndian.Uint32(obj[len(obj)-4:])
	if got == want && h.Codec == CodecNone {
		if err := h.checkRaw(data, 0); err != nil {
			return nil, err
		}
		return &Chunk{Header: h, Raw: data}, nil
	}
	var raw []byte
	if h.Codec == CodecNone {
		raw = data
	} else if int64(cap(buf)) >= h.RawLen {
		raw = buf[:h.RawLen]
	} else {
		raw = make([]byte, h.RawLen)
	}
	if got == want {
		err = h.decompressAll(raw, data)
		if err == nil {
			if err := h.checkRaw(raw, 0); err != nil {
				return nil, err
			}
			return &Chunk{Header: h, Raw: raw}, nil
		}
	} else {
		err = corruptf("data checksum %08x, want %08x", got, want)
	}
	if !salvage || !h.RangeReadable() {
		return nil, err
	}
	bad := h.badBlocks(raw, data)
	if len(bad) > 0 && len(bad) == h.Blocks() {
		// err says "corrupt chunk" already (and is marked so).
		return nil, fmt.Errorf("%w; each of its %d blocks fails its checksum", err, len(bad))
	}
	return &Chunk{Header: h, Raw: raw, Salvaged: true, Bad: bad}, nil
}

// decompressAll decodes the whole data section into raw (len RawLen).
func (h *Header) decompressAll(raw, data []byte) error {
	if h.Flags&FlagBlocked == 0 {
		if err := decompress(h.Codec, raw, data); err != nil {
			return corruptf("%v", err)
		}
		return nil
	}
	for b := range h.Blocks() {
		s, e := h.rawBlock(b)
		if err := h.decompressBlock(b, raw[s:e:e], data); err != nil {
			return err
		}
	}
	return nil
}

// badBlocks decodes each block of a range-readable chunk alone into raw
// (for codec none, raw is data) and returns those that fail to decompress
// or fail their checksum.
func (h *Header) badBlocks(raw, data []byte) []int {
	var bad []int
	for b := range h.Blocks() {
		s, e := h.rawBlock(b)
		blk := raw[s:e:e]
		if h.Codec != CodecNone && h.decompressBlock(b, blk, data) != nil || Checksum(blk) != h.BlockCRCs[b] || h.checkRaw(blk, s) != nil {
			bad = append(bad, b)
		}
	}
	return bad
}

// decompressBlock decodes block b of a blocked chunk from data, the whole
// data section, into dst, which has the block's raw length and no room
// beyond it (so a damaged block cannot spill into the next).
func (h *Header) decompressBlock(b int, dst, data []byte) error {
	s, e := h.storedBlock(b)
	if err := h.decodeStored(dst, data[s:e]); err != nil {
		return corruptf("block %d: %v", b, err)
	}
	return nil
}

// RangeReadable reports whether blocks of the chunk can be read and
// verified alone: codec none with block checksums, or blocked data. A
// format 1.0 compressed chunk is not: it is read whole.
func (h *Header) RangeReadable() bool {
	return h.BlockSize > 0 && (h.Codec == CodecNone || h.Flags&FlagBlocked != 0)
}

// Blocks is the number of blocks (0 without block checksums).
func (h *Header) Blocks() int { return len(h.BlockCRCs) }

// rawBlock is the raw-data range of block b.
func (h *Header) rawBlock(b int) (s, e int64) {
	bs := int64(h.BlockSize)
	return int64(b) * bs, min(int64(b+1)*bs, h.RawLen)
}

// storedBlock is the range of block b's stored bytes in the data section
// of a range-readable chunk.
func (h *Header) storedBlock(b int) (s, e int64) {
	if h.Codec == CodecNone {
		return h.rawBlock(b)
	}
	if b > 0 {
		s = h.blockEnds[b-1]
	}
	return s, h.blockEnds[b]
}

// SpanBlocks returns the blocks [a, b) that hold the bytes of samples
// [lo, hi), 0 <= lo < hi <= N, of a range-readable chunk; a == b when the
// samples have no bytes.
func (h *Header) SpanBlocks(lo, hi int) (a, b int) {
	s, _ := h.Range(lo)
	_, e := h.Range(hi - 1)
	if s >= e {
		return 0, 0
	}
	bs := int64(h.BlockSize)
	return int(s / bs), int((e + bs - 1) / bs)
}

// BlockRange returns the byte range [start, end) of the chunk object that
// stores blocks [a, b) of a range-readable chunk, 0 <= a <= b <= Blocks.
func (h *Header) BlockRange(a, b int) (start, end int64) {
	if a == b {
		return int64(h.Len), int64(h.Len)
	}
	s, _ := h.storedBlock(a)
	_, e := h.storedBlock(b - 1)
	return int64(h.Len) + s, int64(h.Len) + e
}

// BlockStart is the raw-data offset of block a.
func (h *Header) BlockStart(a int) int64 { return int64(a) * int64(h.BlockSize) }

// DecodeBlocks verifies and decodes blocks [a, b) of a range-readable
// chunk from stored, the bytes at BlockRange(a, b), and returns their raw
// bytes: raw data [BlockStart(a), ...). For codec none the result aliases
// stored; otherwise it is dst's memory when dst has room. A block that does
// not decompress or fails its checksum is an error naming it.
func (h *Header) DecodeBlocks(stored []byte, a, b int, dst []byte) ([]byte, error) {
	return h.DecodeBlocksOnce(stored, a, b, dst, nil)
}

// Verified records which checksum blocks of one immutable copy of a
// chunk's stored bytes (a mapped file) have passed their checksums, so
// that a block read again from the same bytes is not checked again. Its
// zero value (or nil) has none; it is safe for concurrent use.
type Verified struct {
	bits []atomic.Uint64
}

// NewVerified returns a record of the blocks of a chunk of n blocks.
func NewVerified(n int) *Verified { return &Verified{bits: make([]atomic.Uint64, (n+63)/64)} }

// Has reports whether block k has passed its checksum.
func (v *Verified) Has(k int) bool {
	return v != nil && k/64 < len(v.bits) && v.bits[k/64].Load()&(1<<(k%64)) != 0
}

// set records that block k has passed its checksum.
func (v *Verified) set(k int) {
	if v != nil && k/64 < len(v.bits) {
		v.bits[k/64].Or(1 << (k % 64))
	}
}

// DecodeBlocksOnce is DecodeBlocks over stored bytes that do not change
// between calls (a mapped chunk file), whose verified blocks v records: a
// block v has is decoded without checking its checksum again (its bytes
// decode to the same raw bytes as when it passed), and one that passes is
// added. A block that fails is never added: each read of it fails.
func (h *Header) DecodeBlocksOnce(stored []byte, a, b int, dst []byte, v *Verified) ([]byte, error) {
	if err := h.checkSpan(stored, a, b); err != nil {
		return nil, err
	}
	if a == b {
		return []byte{}, nil
	}
	raw := stored
	if h.Codec != CodecNone {
		rs, _ := h.rawBlock(a)
		_, re := h.rawBlock(b - 1)
		if n := re - rs; int64(cap(dst)) >= n {
			raw = dst[:n]
		} else {
			raw = make([]byte, n)
		}
	}
	base, _ := h.storedBlock(a)
	rawBase := h.BlockStart(a)
	for k := a; k < b; k++ {
		s, e := h.rawBlock(k)
		blk := raw[s-rawBase : e-rawBase : e-rawBase]
		if h.Codec != CodecNone {
			ss, se := h.storedBlock(k)
			if err := h.decodeStored(blk, stored[ss-base:se-base]); err != nil {
				return nil, corruptf("block %d: %v", k, err)
			}
		}
		if v.Has(k) {
			continue
		}
		if got := Checksum(blk); got != h.BlockCRCs[k] {
			return nil, corruptf("block %d checksum %08x, want %08x", k, got, h.BlockCRCs[k])
		}
		v.set(k)
	}
	if err := h.checkRaw(raw, rawBase); err != nil {
		return nil, err
	}
	return raw, nil
}

// checkSpan checks that blocks [a, b) are blocks of a range-readable
// chunk and that stored is as long as they are stored.
func (h *Header) checkSpan(stored []byte, a, b int) error {
	if !h.RangeReadable() || a < 0 || a > b || b > h.Blocks() {
		return corruptf("blocks [%d, %d) of a chunk of %d that is not range-readable or has fewer", a, b, h.Blocks())
	}
	if start, end := h.BlockRange(a, b); int64(len(stored)) != end-start {
		return corruptf("blocks [%d, %d) are %d bytes, want %d", a, b, len(stored), end-start)
	}
	return nil
}

// Deferrable reports whether the checksums of this chunk's blocks may be
// checked as their bytes are used (UncheckedBlocks, then VerifyRange)
// rather than when they are read: its blocks are stored as they are
// (codec none) and nothing but the sample bytes is read from them (not
// a dictionary's indices, which checkRaw reads).
func (h *Header) Deferrable() bool { return h.Codec == CodecNone && h.Flags&FlagDict == 0 }

// UncheckedBlocks returns the raw bytes of blocks [a, b) of a Deferrable
// chunk, stored (the bytes at BlockRange(a, b)) itself, without checking
// their checksums: the caller checks the blocks under each range of them
// with VerifyRange before it uses the range's bytes. It is an error for a
// chunk that is not Deferrable.
func (h *Header) UncheckedBlocks(stored []byte, a, b int) ([]byte, error) {
	if !h.Deferrable() {
		return nil, corruptf("blocks of a chunk of codec %d or with a dictionary read unchecked", h.Codec)
	}
	if err := h.checkSpan(stored, a, b); err != nil {
		return nil, err
	}
	return stored, nil
}

// VerifyRange checks the checksums of the blocks under raw data [s, e)
// that v does not have, and adds those that pass to v. raw holds the raw
// data of whole blocks from rawOff (a block start) on, as UncheckedBlocks
// returns it; a block it does not hold whole is an error, as is a block
// that fails its checksum (never added to v: each check of it fails).
func (h *Header) VerifyRange(raw []byte, rawOff, s, e int64, v *Verified) error {
	if s >= e {
		return nil
	}
	bs := int64(h.BlockSize)
	for k := int(s / bs); int64(k)*bs < e; k++ {
		if v.Has(k) {
			continue
		}
		ks, ke := h.rawBlock(k)
		if ks < rawOff || ke-rawOff > int64(len(raw)) || k >= len(h.BlockCRCs) {
			return corruptf("block %d is not among the %d raw bytes read from %d", k, len(raw), rawOff)
		}
		if got := Checksum(raw[ks-rawOff : ke-rawOff]); got != h.BlockCRCs[k] {
			return corruptf("block %d checksum %08x, want %08x", k, got, h.BlockCRCs[k])
		}
		v.set(k)
	}
	return nil
}

// checkRaw verifies what the data of a chunk says about its samples
// beyond its checksums: for a dictionary chunk, the indices in raw, the
// raw data from offset off on (a multiple of the index width).
func (h *Header) checkRaw(raw []byte, off int64) error {
	if h.Flags&FlagDict == 0 {
		return nil
	}
	return h.checkIndices(raw, int(off/int64(h.dictW)))
}
