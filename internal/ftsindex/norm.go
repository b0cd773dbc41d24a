package ftsindex

import "math/bits"

// Norms are document lengths in Lucene's SmallFloat.intToByte4 coding,
// as tantivy's fieldnorms: exact below 24, then 4 significant bits.

const numFreeValues = 24 // 255 - longToInt4(math.MaxInt32)

func longToInt4(i uint64) int {
	n := 64 - bits.LeadingZeros64(i)
	if n < 4 {
		return int(i)
	}
	shift := n - 4
	return int((i>>shift)&7) | (shift+1)<<3
}

func int4ToLong(i int) uint64 {
	b := uint64(i & 7)
	shift := (i >> 3) - 1
	if shift == -1 {
		return b
	}
	return (b | 8) << shift
}

// EncodeNorm returns the norm byte of a document of n terms.
func EncodeNorm(n int) uint8 {
	if n < numFreeValues {
		return uint8(n)
	}
	return uint8(min(numFreeValues+longToInt4(uint64(n-numFreeValues)), 255))
}

// DecodeNorm returns the document length a norm byte stands for.
func DecodeNorm(b uint8) int {
	if int(b) < numFreeValues {
		return int(b)
	}
	return numFreeValues + int(int4ToLong(int(b)-numFreeValues))
}
