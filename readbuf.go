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

// keptBufs holds up to keptBufMax bytes of buffers handed back, which
// getBuf serves before the pools: a sync.Pool is emptied by every other
// garbage collection, and a loader collects often (it reads a span of
// about 1 MiB per run of samples), so that most of an lz4 span's buffers
// were new memory, its pages faulted in as it was decompressed into them
// (18% of ds.numpy()'s CPU over lz4 images; bench/RESULTS.md, issue 39).
var keptBufs struct {
	mu    sync.Mutex
	bytes int
	free  [bufClasses][][]byte
}

const keptBufMax = 64 << 20

// takeKept returns a kept buffer of class c, or nil.
func takeKept(c, size int) []byte {
	keptBufs.mu.Lock()
	defer keptBufs.mu.Unlock()
	l := keptBufs.free[c]
	if len(l) == 0 {
		return nil
	}
	b := l[len(l)-1]
	l[len(l)-1] = nil
	keptBufs.free[c] = l[:len(l)-1]
	keptBufs.bytes -= size
	return b
}

// keep keeps b (of class c) if there is room, and reports whether it did.
func keep(b []byte, c, size int) bool {
	keptBufs.mu.Lock()
	defer keptBufs.mu.Unlock()
	if keptBufs.bytes+size > keptBufMax {
		return false
	}
	keptBufs.free[c] = append(keptBufs.free[c], b)
	keptBufs.bytes += size
	return true
}

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
		if b := takeKept(c, size); b != nil {
			return b[:n]
		}
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
	if !keep(b, c, size) {
		bufPools[c].Put(&b)
	}
}
