package main

/*
#include "loch.h"
*/
import "C"

import (
	"fmt"
	"math/bits"
	"sync"
	"unsafe"
)

// Sample buffers are C memory, 64-byte aligned, in size classes: multiples
// of 4 KiB up to 64 KiB, then eight classes per power of two (at most 12.5%
// slack). A freed buffer goes back to a process-wide pool of at most
// poolLimit bytes, from which later batches of the same size class are
// served: in steady state a loader allocates nothing.
const (
	bufAlign  = 64
	poolLimit = 512 << 20
)

// sizeClass is the capacity allocated for a request of n bytes.
func sizeClass(n int) int {
	const page = 4096
	if n <= 16*page {
		return max((n+page-1)/page*page, page)
	}
	step := 1 << (bits.Len(uint(n-1)) - 4) // an eighth of the power of two at or above n
	return (n + step - 1) / step * step
}

// bufPool tracks every buffer it has handed out and keeps freed ones.
// Page-locked buffers of a pinnedPool are tracked too (pinned), so that
// loch_buffer_free gives them back to their pool.
type bufPool struct {
	mu        sync.Mutex
	live      map[unsafe.Pointer]int       // buffer -> capacity, not yet freed
	pinned    map[unsafe.Pointer]pinnedBuf // page-locked buffer in use -> its pool
	free      map[int][]unsafe.Pointer     // capacity -> freed buffers
	freeBytes int
	limit     int
}

// pinnedBuf is a page-locked buffer's pool and capacity.
type pinnedBuf struct {
	pp *pinnedPool
	c  int
}

var pool = &bufPool{live: map[unsafe.Pointer]int{}, pinned: map[unsafe.Pointer]pinnedBuf{}, free: map[int][]unsafe.Pointer{}, limit: poolLimit}

// alloc returns a buffer of length n (contents undefined).
func (p *bufPool) alloc(n int) []byte {
	c := sizeClass(n)
	p.mu.Lock()
	var ptr unsafe.Pointer
	if l := p.free[c]; len(l) > 0 {
		ptr = l[len(l)-1]
		p.free[c] = l[:len(l)-1]
		p.freeBytes -= c
	}
	p.mu.Unlock()
	if ptr == nil {
		ptr = C.aligned_alloc(bufAlign, C.size_t(c))
		if ptr == nil {
			panic(fmt.Sprintf("loch: out of memory allocating a %d-byte sample buffer", c))
		}
	}
	p.mu.Lock()
	p.live[ptr] = c
	p.mu.Unlock()
	return unsafe.Slice((*byte)(ptr), c)[:n]
}

// allocPinned returns a buffer of length n from pp, or from alloc when pp
// has none that fits.
func (p *bufPool) allocPinned(n int, pp *pinnedPool) []byte {
	c := sizeClass(n)
	ptr := pp.get(c)
	if ptr == nil {
		return p.alloc(n)
	}
	p.mu.Lock()
	p.pinned[ptr] = pinnedBuf{pp, c}
	p.mu.Unlock()
	return unsafe.Slice((*byte)(ptr), c)[:n]
}

// release takes back a buffer that alloc or allocPinned returned. It reports false for a
// pointer that is not a live buffer (freed twice, or never allocated here),
// which it leaves alone.
func (p *bufPool) release(ptr unsafe.Pointer) bool {
	p.mu.Lock()
	drop, pin, ok := p.putLocked(ptr)
	p.mu.Unlock()
	if drop != nil {
		C.free(drop)
	}
	if pin.pp != nil {
		pin.pp.put(ptr, pin.c)
	}
	return ok
}

// releaseAll takes back the buffers at ptrs, as release each (NULL and
// pointers that are not live buffers are skipped), under one lock.
func (p *bufPool) releaseAll(ptrs []unsafe.Pointer) {
	var drops, pins []unsafe.Pointer
	var pinned []pinnedBuf
	p.mu.Lock()
	for _, ptr := range ptrs {
		drop, pin, _ := p.putLocked(ptr)
		if drop != nil {
			drops = append(drops, drop)
		}
		if pin.pp != nil {
			pins, pinned = append(pins, ptr), append(pinned, pin)
		}
	}
	p.mu.Unlock()
	for _, ptr := range drops {
		C.free(ptr)
	}
	for i, ptr := range pins {
		pinned[i].pp.put(ptr, pinned[i].c)
	}
}

// putLocked (p.mu held) moves a live buffer to the free lists. It reports
// whether ptr was live, and returns ptr when the pool is full: the caller
// frees it with C.free after unlocking. A page-locked buffer it returns as
// pin instead, for the caller to put back in pin.pp after unlocking.
func (p *bufPool) putLocked(ptr unsafe.Pointer) (drop unsafe.Pointer, pin pinnedBuf, ok bool) {
	c, ok := p.live[ptr]
	if !ok {
		pin, ok = p.pinned[ptr]
		delete(p.pinned, ptr)
		return nil, pin, ok
	}
	delete(p.live, ptr)
	if p.freeBytes+c > p.limit {
		return ptr, pin, true
	}
	p.free[c] = append(p.free[c], ptr)
	p.freeBytes += c
	return nil, pin, true
}

// trim frees every pooled buffer.
func (p *bufPool) trim() {
	p.mu.Lock()
	free := p.free
	p.free, p.freeBytes = map[int][]unsafe.Pointer{}, 0
	p.mu.Unlock()
	for _, l := range free {
		for _, ptr := range l {
			C.free(ptr)
		}
	}
}

// stats returns the bytes held by live buffers and by the pool.
func (p *bufPool) stats() (live, free int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.live {
		live += c
	}
	for _, b := range p.pinned {
		live += b.c
	}
	return live, p.freeBytes
}

// ptrOf is the address of a buffer's first byte.
func ptrOf(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

// loaderAlloc is the loader.Allocator of one loader: it serves batch
// buffers from the pool and remembers those the loader still owns, so that
// Close can take back the buffers of batches that were never delivered.
// With pinned set (loch_loader_new's "pinned_pool"), batch buffers come
// from that pool of page-locked memory while it has room.
type loaderAlloc struct {
	mu     sync.Mutex
	owned  map[unsafe.Pointer]struct{}
	pinned *pinnedPool
}

func newLoaderAlloc() *loaderAlloc { return &loaderAlloc{owned: map[unsafe.Pointer]struct{}{}} }

func (a *loaderAlloc) Alloc(n int) []byte {
	var b []byte
	if a.pinned != nil {
		b = pool.allocPinned(n, a.pinned)
	} else {
		b = pool.alloc(n)
	}
	a.mu.Lock()
	a.owned[ptrOf(b)] = struct{}{}
	a.mu.Unlock()
	return b
}

func (a *loaderAlloc) Free(b []byte) {
	ptr := ptrOf(b)
	a.mu.Lock()
	_, ok := a.owned[ptr]
	delete(a.owned, ptr)
	a.mu.Unlock()
	if ok {
		pool.release(ptr)
	}
}

// handOff transfers a buffer to the caller, who frees it with
// loch_buffer_free.
func (a *loaderAlloc) handOff(b []byte) {
	a.mu.Lock()
	delete(a.owned, ptrOf(b))
	a.mu.Unlock()
}

// releaseAll takes back every buffer still owned (after the loader's
// goroutines have stopped).
func (a *loaderAlloc) releaseAll() {
	a.mu.Lock()
	owned := a.owned
	a.owned = map[unsafe.Pointer]struct{}{}
	a.mu.Unlock()
	for ptr := range owned {
		pool.release(ptr)
	}
}

// loch_buffer_free gives back a sample buffer (loch_tensor.data). Freeing
// NULL or a pointer that is not a live buffer does nothing.
//
//export loch_buffer_free
func loch_buffer_free(ptr unsafe.Pointer) {
	if ptr != nil {
		pool.release(ptr)
	}
}

// loch_buffers_free gives back the n sample buffers at ptrs, as
// loch_buffer_free each, in one call (ABI 11).
//
//export loch_buffers_free
func loch_buffers_free(ptrs *unsafe.Pointer, n C.int64_t) {
	if ptrs != nil && n > 0 {
		pool.releaseAll(unsafe.Slice(ptrs, int(n)))
	}
}

// loch_buffer_trim frees the pooled (unused) sample buffers.
//
//export loch_buffer_trim
func loch_buffer_trim() { pool.trim() }

// loch_buffer_stats stores the bytes of sample buffers held by the caller
// and the loaders (live, page-locked ones of a pinned pool included) and
// kept for reuse (pooled, not counting those a pinned pool keeps).
//
//export loch_buffer_stats
func loch_buffer_stats(live, pooled *C.int64_t) {
	l, f := pool.stats()
	if live != nil {
		*live = C.int64_t(l)
	}
	if pooled != nil {
		*pooled = C.int64_t(f)
	}
}
