// Package memcopy copies large byte slices at the memory's speed whatever
// their alignment.
//
// On amd64 the Go runtime's copy of 2 KiB or more to a 16-byte aligned
// destination uses REP MOVSQ on processors that prefer it, and REP MOVSQ
// runs at a quarter to a half of its speed when the source is not aligned
// like the destination (modulo 64): 12 KiB images gathered out of a
// mapped chunk file, whose data starts at its header's length (8252
// bytes in a chunk of 64x64x3 images), into a batch buffer took 2.5-3x as
// long with copy as with Copy (BenchmarkCopy, offset60). Copy then starts
// the copy one byte in, so that the runtime takes its AVX loop, which is
// about as fast from any source.
package memcopy

import "unsafe"

// minLen is the length from which the runtime may use REP MOVSQ.
const minLen = 2048

// Copy copies min(len(dst), len(src)) bytes from src to dst, as copy does
// (the slices may overlap only if they start at the same address), and
// returns the number copied.
func Copy(dst, src []byte) int {
	n := min(len(dst), len(src))
	if n < minLen {
		return copy(dst, src)
	}
	d, s := uintptr(unsafe.Pointer(unsafe.SliceData(dst))), uintptr(unsafe.Pointer(unsafe.SliceData(src)))
	if d&15 != 0 || (d-s)&63 == 0 {
		return copy(dst, src) // unaligned (the AVX loop) or aligned alike (REP MOVSQ at full speed)
	}
	dst[0] = src[0]
	copy(dst[1:n], src[1:n])
	return n
}
