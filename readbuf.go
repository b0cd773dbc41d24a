package loch

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// Span reads take their buffers (the stored bytes read by range, and the
// raw bytes a compressed span is decoded into) from a BufferPool, and a
// reader that is done with a Fetched hands them back (Fetched.Recycle): a
// loader reads a span per run of samples, and allocating each afresh cost
// it the zeroing of every byte read (12% of its CPU in a full shuffle) and
// the garbage collector's work.
//
// The classes are 4 KiB and, above it, four per power of two: 2^e + k*2^e/4
// for k = 1..4. A buffer's capacity is its class size, less than 1.25 times
// the length asked for (or 4 KiB). Lengths above 64 MiB are not pooled.
const (
	minBufShift = 12 // the smallest class: 4 KiB
	maxBufShift = 26 // the largest class: 64 MiB
	bufClasses  = 1 + (maxBufShift-minBufShift)*4
)

// BufferPool keeps the buffers of recycled spans (Fetched.Recycle) for
// later fetches of the scans that use it (Scan.WithBuffers), in free
// lists per size class, most recently handed back first. Unlike a
// sync.Pool it keeps them across garbage collections: a buffer dropped
// and allocated again lands on pages the heap grows into or takes back
// from the OS, whose first touch the kernel zeroes (a quarter of an lz4
// loader's CPU, decoding into fresh buffers).
//
// It keeps at most its room (SetRoom) in bytes idle. A buffer handed back beyond it, and
// those Trim drops, go to a process-wide sync.Pool per class, which the
// garbage collector empties, and from which any pool's fetches take a
// buffer before allocating one. A loader sets its pool's room to what its
// memory budget leaves beside the spans it holds, so that the spans in
// use and its idle buffers together stay within the budget, and trims it
// to nothing when closed (the next loader, an epoch later, finds them in
// the sync.Pool). Scans without a pool of their own use one of room 0:
// the sync.Pool alone. It is safe for concurrent use.
type BufferPool struct {
	room atomic.Int64

	mu    sync.Mutex
	free  [bufClasses][][]byte
	idle  int64 // bytes in free
	gets  int64 // buffers asked for
	fresh int64 // of which allocated anew
}

// NewBufferPool returns a pool that keeps at most room bytes idle.
func NewBufferPool(room int64) *BufferPool {
	p := &BufferPool{}
	p.room.Store(room)
	return p
}

// defaultBuffers is the pool of scans without one of their own.
var defaultBuffers = NewBufferPool(0)

// spill holds the buffers beyond every pool's room, by class, until the
// garbage collector drops them.
var spill [bufClasses]sync.Pool

// SetRoom sets the most bytes p keeps idle from now on; buffers beyond it
// go to the sync.Pool as they are handed back, or by Trim.
func (p *BufferPool) SetRoom(n int64) { p.room.Store(n) }

// Trim hands idle buffers to the sync.Pool until p holds at most its
// room, largest classes first.
func (p *BufferPool) Trim() {
	room := p.room.Load()
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := bufClasses - 1; c >= 0 && p.idle > room; c-- {
		for len(p.free[c]) > 0 && p.idle > room {
			l := p.free[c]
			b := l[len(l)-1]
			l[len(l)-1] = nil
			p.free[c] = l[:len(l)-1]
			p.idle -= int64(cap(b))
			spill[c].Put(&b)
		}
	}
}

// Idle is the bytes p holds idle.
func (p *BufferPool) Idle() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idle
}

// Counts returns the buffers asked of p so far and how many of them were
// allocated anew (found neither idle nor in the sync.Pool).
func (p *BufferPool) Counts() (gets, fresh int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gets, p.fresh
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

// get returns a buffer of length n, not zeroed: an idle one of its
// class, else one from the sync.Pool, else a new one.
func (p *BufferPool) get(n int) []byte {
	c, size := bufClass(n)
	if c < 0 {
		return make([]byte, n)
	}
	p.mu.Lock()
	p.gets++
	if l := p.free[c]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		p.free[c] = l[:len(l)-1]
		p.idle -= int64(size)
		p.mu.Unlock()
		return b[:n]
	}
	p.mu.Unlock()
	if v, ok := spill[c].Get().(*[]byte); ok {
		return (*v)[:n]
	}
	p.mu.Lock()
	p.fresh++
	p.mu.Unlock()
	return make([]byte, n, size)
}

// put hands back a buffer that get returned; the caller must not use it
// (nor anything aliasing it) again. A buffer whose capacity is not a
// class size is left to the garbage collector; one beyond the room goes
// to the sync.Pool.
func (p *BufferPool) put(b []byte) {
	c, size := bufClass(cap(b))
	if c < 0 || size != cap(b) {
		return
	}
	b = b[:0]
	room := p.room.Load()
	p.mu.Lock()
	if p.idle+int64(size) > room {
		p.mu.Unlock()
		spill[c].Put(&b)
		return
	}
	p.free[c] = append(p.free[c], b)
	p.idle += int64(size)
	p.mu.Unlock()
}
