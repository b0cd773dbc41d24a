package chunk

import (
	"encoding/binary"
)

// Chunk is a decoded chunk: its header and its raw data.
type Chunk struct {
	*Header
	// Raw is the decoded data section: the samples, concatenated.
	Raw []byte
}

// Sample returns sample i's bytes, a sub-slice of c.Raw (valid as long as
// c.Raw is).
func (c *Chunk) Sample(i int) []byte {
	s, e := c.Range(i)
	return c.Raw[s:e:e]
}

// Decode verifies a whole chunk object and decodes its data. buf, if large
// enough, receives the raw data (for codec none, Raw aliases obj instead: no
// copy). The Chunk does not otherwise retain obj.
func Decode(obj, buf []byte) (*Chunk, error) {
	h, err := ParseHeader(obj)
	if err != nil {
		return nil, err
	}
	if int64(len(obj)) != h.Size() {
		return nil, corruptf("object is %d bytes, header says %d", len(obj), h.Size())
	}
	data := obj[h.Len : int64(h.Len)+h.DataLen]
	if got, want := Checksum(data), binary.LittleEndian.Uint32(obj[len(obj)-4:]); got != want {
		return nil, corruptf("data checksum %08x, want %08x", got, want)
	}
	if h.Codec == CodecNone {
		return &Chunk{Header: h, Raw: data}, nil
	}
	var raw []byte
	if int64(cap(buf)) >= h.RawLen {
		raw = buf[:h.RawLen]
	} else {
		raw = make([]byte, h.RawLen)
	}
	if err := decompress(h.Codec, raw, data); err != nil {
		return nil, err
	}
	return &Chunk{Header: h, Raw: raw}, nil
}

// BlockSpan returns the byte range [start, end), relative to the chunk
// object, that must be read to verify and extract raw bytes [s, e) of an
// uncompressed chunk with block checksums: whole blocks.
func (h *Header) BlockSpan(s, e int64) (start, end int64) {
	if h.BlockSize == 0 {
		return int64(h.Len) + s, int64(h.Len) + e
	}
	bs := int64(h.BlockSize)
	start = s / bs * bs
	end = min((e+bs-1)/bs*bs, h.RawLen)
	if e == s { // empty sample: nothing to verify
		end = start
	}
	return int64(h.Len) + start, int64(h.Len) + end
}

// VerifyBlocks checks the block checksums of span, the bytes returned by
// reading BlockSpan(s, e), and returns the sub-slice holding raw bytes [s, e).
func (h *Header) VerifyBlocks(span []byte, s, e int64) ([]byte, error) {
	if h.Codec != CodecNone {
		return nil, corruptf("block reads need an uncompressed chunk")
	}
	if e == s {
		return []byte{}, nil
	}
	start, end := h.BlockSpan(s, e)
	if int64(len(span)) != end-start {
		return nil, corruptf("span is %d bytes, want %d", len(span), end-start)
	}
	if h.BlockSize > 0 {
		bs := int64(h.BlockSize)
		first := (start - int64(h.Len)) / bs
		for off := int64(0); off < int64(len(span)); off += bs {
			blk := span[off:min(off+bs, int64(len(span)))]
			k := first + off/bs
			if k >= int64(len(h.BlockCRCs)) {
				return nil, corruptf("block %d out of range", k)
			}
			if got := Checksum(blk); got != h.BlockCRCs[k] {
				return nil, corruptf("block %d checksum %08x, want %08x", k, got, h.BlockCRCs[k])
			}
		}
	}
	rel := s - (start - int64(h.Len))
	if rel < 0 || rel+(e-s) > int64(len(span)) {
		return nil, corruptf("sample [%d, %d) outside the blocks read", s, e)
	}
	return span[rel : rel+(e-s)], nil
}
