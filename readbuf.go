package loch

import (
	"math/bits"
	"sync"
)

// Span reads take their buffers from size-classed pools, and a reader that
// is done with a Fetched hands them back (Fetched.Recycle): a loader reads
// a span per run of samples, and allocating each afresh cost it the
// zeroing of every byte read (12% of its CPU in a full shuffle) and the
// garbage collector's work.
//
// The classes are 4 KiB and, above it, four per power of two: 2^e + k*2^e/4
// for k = 1..4. A buffer's capacity is its class size, less than 1.25 times
// the length asked for (or 4 KiB). Lengths above 64 MiB are not pooled.
const (
	minBufShift = 12 // the smallest class: 4 KiB
	maxBufShift = 26 // the largest class: 64 MiB
	bufClasses  = 1 + (maxBufShift-minBufShift)*4
)

var bufPools [bufClasses]sync.Pool

// bufClass returns the class of a buffer of n bytes and its size, or -1 and
// n when n is not pooled.
func bufClass(n int) (class, size int) {
	if n <= 1<<minBufShift {
		return 0, 1 << minBufShift
	}
	if n > 1<<maxBufShift {
		return -1, n
	}
	e := bits.Len(uint(n-1)) - 1 // 2^e < n <= 2^(e+1)
	step := 1 << (e - 2)
	k := (n - 1<<e + step - 1) / step // 1..4
	return 1 + (e-minBufShift)*4 + k - 1, 1<<e + k*step
}

// getBuf returns a buffer of length n, not zeroed.
func getBuf(n int) []byte {
	c, size := bufClass(n)
	if c >= 0 {
		if v, ok := bufPools[c].Get().(*[]byte); ok {
			return (*v)[:n]
		}
	}
	return make([]byte, n, size)
}

// putBuf hands back a buffer that getBuf returned; the caller must not use
// it (nor anything aliasing it) again. A buffer whose capacity is not a
// class size is left to the garbage collector.
func putBuf(b []byte) {
	c, size := bufClass(cap(b))
	if c < 0 || size != cap(b) {
		return
	}
	b = b[:0]
	bufPools[c].Put(&b)
}
