package chunk

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Transforms of an encoded chunk's blocks and header sequences (format
// 1.14, docs/format.md §3.4): a run of m unsigned little-endian values of
// s bytes (s in 1, 2, 4, 8), stored plain, as a frame of reference (a
// base and bit-packed offsets from it) or as deltas (a first value, a base
// and bit-packed offsets of each difference from the base). All arithmetic
// is modulo 2^(8s), so signed and unsigned values, and floats' bit
// patterns, take the same code.
const (
	transformPlain uint8 = 0
	transformFOR   uint8 = 1
	transformDelta uint8 = 2
)

// transformedLen is the length of m values of s bytes under transform t
// with bit width w, or -1 for a transform or width that does not exist.
func transformedLen(t uint8, w, m, s int) int {
	if w < 0 || w > 8*s || (t == transformPlain && w != 0) {
		return -1
	}
	switch t {
	case transformPlain:
		return m * s
	case transformFOR:
		return 8 + (m*w+7)/8
	case transformDelta:
		if m < 1 {
			return -1
		}
		return 16 + ((m-1)*w+7)/8
	}
	return -1
}

// plan is the transform the writer chose for a run of values.
type plan struct {
	t         uint8
	w         int
	ref, frst uint64
}

// choose measures every transform of raw, m values of s bytes, and
// returns the smallest (frame of reference before delta on a tie), or
// plain unless it saves at least an eighth: decoding a transform costs
// more than reading plain values (random floats, whose bit patterns span
// nearly all 64 bits, stay plain).
func choose(raw []byte, s int) plan {
	m := len(raw) / s
	best, size := plan{t: transformPlain}, m*s-m*s/8+1
	if m == 0 {
		return best
	}
	mask := valueMask(s)
	lo, d := spread(m, s, func(j int) uint64 { return load(raw, j, s) })
	if n := transformedLen(transformFOR, widthOf(d), m, s); n < size {
		best, size = plan{t: transformFOR, w: widthOf(d), ref: lo}, n
	}
	if m > 1 {
		dlo, dd := spread(m-1, s, func(j int) uint64 { return (load(raw, j+1, s) - load(raw, j, s)) & mask })
		if n := transformedLen(transformDelta, widthOf(dd), m, s); n < size {
			best = plan{t: transformDelta, w: widthOf(dd), ref: dlo, frst: load(raw, 0, s)}
		}
	}
	return best
}

// spread returns the base and range (greatest minus least) of m values
// of s bytes that give the narrower frame of reference: as unsigned
// integers, or as signed ones (s-byte two's complement), whichever range
// is smaller.
func spread(m, s int, at func(int) uint64) (lo, d uint64) {
	mask, sign := valueMask(s), uint64(1)<<(8*s-1)
	ulo, uhi := ^uint64(0), uint64(0)
	slo, shi := int64(^uint64(0)>>1), -int64(^uint64(0)>>1)-1
	for j := range m {
		v := at(j)
		ulo, uhi = min(ulo, v), max(uhi, v)
		sv := int64(v)
		if s < 8 && v&sign != 0 {
			sv = int64(v | ^mask) // sign-extend
		}
		slo, shi = min(slo, sv), max(shi, sv)
	}
	if sd := uint64(shi) - uint64(slo); sd < uhi-ulo {
		return uint64(slo) & mask, sd
	}
	return ulo, uhi - ulo
}

// widthOf is the bits needed for values 0 to d.
func widthOf(d uint64) int { return bits.Len64(d) }

func valueMask(s int) uint64 {
	if s == 8 {
		return ^uint64(0)
	}
	return uint64(1)<<(8*s) - 1
}

// load reads value j of s bytes from b.
func load(b []byte, j, s int) uint64 {
	switch s {
	case 1:
		return uint64(b[j])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b[2*j:]))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b[4*j:]))
	}
	return binary.LittleEndian.Uint64(b[8*j:])
}

// store writes v's low s bytes as value j of b.
func store(b []byte, j, s int, v uint64) {
	switch s {
	case 1:
		b[j] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b[2*j:], uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b[4*j:], uint32(v))
	default:
		binary.LittleEndian.PutUint64(b[8*j:], v)
	}
}

// appendTransformed appends raw, m values of s bytes, transformed by p.
func appendTransformed(dst, raw []byte, s int, p plan) []byte {
	m, mask := len(raw)/s, valueMask(s)
	switch p.t {
	case transformPlain:
		return append(dst, raw...)
	case transformFOR:
		dst = binary.LittleEndian.AppendUint64(dst, p.ref)
		return appendPacked(dst, m, p.w, func(j int) uint64 { return (load(raw, j, s) - p.ref) & mask })
	}
	dst = binary.LittleEndian.AppendUint64(dst, p.frst)
	dst = binary.LittleEndian.AppendUint64(dst, p.ref)
	return appendPacked(dst, m-1, p.w, func(j int) uint64 {
		return (load(raw, j+1, s) - load(raw, j, s) - p.ref) & mask
	})
}

// appendPacked appends m values of w bits (at(j), which fit), least
// significant bit first, in ceil(m*w/8) bytes.
func appendPacked(dst []byte, m, w int, at func(int) uint64) []byte {
	n := (m*w + 7) / 8
	start := len(dst)
	dst = append(dst, make([]byte, n+9)...) // room for the last word
	out := dst[start:]
	if w > 0 {
		for j := range m {
			bit := j * w
			i, sh := bit>>3, uint(bit&7)
			v := at(j)
			binary.LittleEndian.PutUint64(out[i:], binary.LittleEndian.Uint64(out[i:])|v<<sh)
			if int(sh)+w > 64 {
				out[i+8] |= byte(v >> (64 - sh))
			}
		}
	}
	return dst[:start+n]
}

// untransform decodes src, the transformed form (t, width w) of m = len(dst)/s
// values of s bytes, into dst. src must have exactly the length that
// transformedLen gives.
func untransform(dst, src []byte, t uint8, w, s int) error {
	m := len(dst) / s
	if n := transformedLen(t, w, m, s); n != len(src) {
		return fmt.Errorf("transform %d of width %d: %d bytes, want %d", t, w, len(src), n)
	}
	mask := valueMask(s)
	switch t {
	case transformPlain:
		copy(dst, src)
	case transformFOR:
		ref, packed := binary.LittleEndian.Uint64(src), src[8:]
		switch s {
		case 8:
			for j := range m {
				binary.LittleEndian.PutUint64(dst[8*j:], ref+unpack(packed, j, w))
			}
			return nil
		case 1: // dictionary indices
			for j := range dst[:m] {
				dst[j] = byte(ref + unpack(packed, j, w))
			}
			return nil
		}
		for j := range m {
			store(dst, j, s, (ref+unpack(packed, j, w))&mask)
		}
	case transformDelta:
		v, ref, packed := binary.LittleEndian.Uint64(src), binary.LittleEndian.Uint64(src[8:]), src[16:]
		if m > 0 {
			store(dst, 0, s, v)
		}
		if s == 8 {
			undelta64(dst[8:], packed, v, ref, w)
			return nil
		}
		for j := 1; j < m; j++ {
			v = (v + ref + unpack(packed, j-1, w)) & mask
			store(dst, j, s, v)
		}
	}
	return nil
}

// undelta64 writes the 8-byte values after v, each the one before plus
// ref plus its packed difference of w bits, into dst.
func undelta64(dst, packed []byte, v, ref uint64, w int) {
	if w == 0 { // a constant step: sequential ids
		for j := 0; j+8 <= len(dst); j += 8 {
			v += ref
			binary.LittleEndian.PutUint64(dst[j:], v)
		}
		return
	}
	for j := 0; j+8 <= len(dst); j += 8 {
		v += ref + unpack(packed, j/8, w)
		binary.LittleEndian.PutUint64(dst[j:], v)
	}
}

// unpack returns value j of w bits from packed (which holds it whole).
func unpack(packed []byte, j, w int) uint64 {
	if w == 0 {
		return 0
	}
	bit := j * w
	i, sh := bit>>3, uint(bit&7)
	var x uint64
	if i+8 <= len(packed) {
		x = binary.LittleEndian.Uint64(packed[i:])
	} else {
		for k := 0; i+k < len(packed); k++ {
			x |= uint64(packed[i+k]) << (8 * k)
		}
	}
	x >>= sh
	if int(sh)+w > 64 {
		x |= uint64(packed[i+8]) << (64 - sh)
	}
	if w < 64 {
		x &= uint64(1)<<w - 1
	}
	return x
}
