package main

/*
#include "loch.h"

static int loch_call_host_alloc(loch_host_alloc_fn f, void **ptr, size_t n, unsigned int flags) {
	return f(ptr, n, flags);
}
static int loch_call_host_free(loch_host_free_fn f, void *ptr) { return f(ptr); }
static int loch_call_host_select(loch_host_select_fn f, int device) { return f == NULL ? 0 : f(device); }
*/
import "C"

import (
	"sync"
	"unsafe"
)

// pinnedPool serves batch buffers from page-locked host memory that a
// caller's allocator provides (ABI 26: cudaHostAlloc), so that a loader's
// workers fill the memory a device copies from. It keeps freed buffers by
// size class (sizeClass) for reuse and never holds more than limit bytes,
// in use and kept together: get returns nil for a buffer that does not
// fit, and the caller falls back to ordinary memory. Page-locking is
// costly (a system call and page-table work per buffer) and scarce, so
// buffers go back to the allocator only when they no longer fit the limit
// or the pool is closed.
//
// The bufPool (pool) routes a freed buffer here: pool.pinned maps each
// buffer in use to its pinnedPool and size class.
type pinnedPool struct {
	alloc func(c int) unsafe.Pointer // nil when refused
	free  func(unsafe.Pointer)

	mu        sync.Mutex
	limit     int
	used      int // bytes in use and kept
	peak      int // the most bytes used at once
	kept      map[int][]unsafe.Pointer
	keptBytes int
	fallbacks int64 // gets that returned nil: over the limit, or refused
	failures  int64 // allocator failures
	closed    bool
}

func pinnedOf(h C.uintptr_t) (*pinnedPool, error) { return lookup[*pinnedPool](h, "pinned pool") }

// get returns a page-locked buffer of capacity c (a size class), or nil
// when one does not fit the limit or the allocator fails.
func (pp *pinnedPool) get(c int) unsafe.Pointer {
	pp.mu.Lock()
	if l := pp.kept[c]; len(l) > 0 && !pp.closed {
		ptr := l[len(l)-1]
		pp.kept[c] = l[:len(l)-1]
		pp.keptBytes -= c
		pp.mu.Unlock()
		return ptr
	}
	var drops []unsafe.Pointer
	if !pp.closed {
		drops = pp.shrinkLocked(pp.limit - c)
	}
	if pp.closed || pp.used+c > pp.limit {
		pp.fallbacks++
		pp.mu.Unlock()
		pp.release(drops)
		return nil
	}
	pp.used += c // reserved while the allocator runs
	pp.mu.Unlock()
	pp.release(drops)
	ptr := pp.alloc(c)
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if ptr == nil {
		pp.used -= c
		pp.fallbacks++
		pp.failures++
		return nil
	}
	pp.peak = max(pp.peak, pp.used)
	return ptr
}

// put takes back a buffer of capacity c that get returned: kept for
// reuse, or given back to the allocator when the pool is closed or over
// its limit.
func (pp *pinnedPool) put(ptr unsafe.Pointer, c int) {
	pp.mu.Lock()
	if pp.closed || pp.used > pp.limit {
		pp.used -= c
		pp.mu.Unlock()
		pp.release([]unsafe.Pointer{ptr})
		return
	}
	pp.kept[c] = append(pp.kept[c], ptr)
	pp.keptBytes += c
	pp.mu.Unlock()
}

// shrinkLocked (pp.mu held) takes kept buffers off the pool until at most
// target bytes are used, or none is kept, and returns them for release.
func (pp *pinnedPool) shrinkLocked(target int) []unsafe.Pointer {
	var drops []unsafe.Pointer
	for c, l := range pp.kept {
		for len(l) > 0 && pp.used > target {
			drops = append(drops, l[len(l)-1])
			l = l[:len(l)-1]
			pp.used -= c
			pp.keptBytes -= c
		}
		pp.kept[c] = l
	}
	return drops
}

// release gives buffers back to the allocator.
func (pp *pinnedPool) release(ptrs []unsafe.Pointer) {
	for _, ptr := range ptrs {
		pp.free(ptr)
	}
}

// newPinnedPool makes a pool of at most limit bytes over alloc and free.
func newPinnedPool(alloc func(c int) unsafe.Pointer, free func(unsafe.Pointer), limit int) *pinnedPool {
	return &pinnedPool{alloc: alloc, free: free, limit: limit, kept: map[int][]unsafe.Pointer{}}
}

// hostAllocator is the allocator of loch_pinned_pool_new as Go functions.
func hostAllocator(alloc C.loch_host_alloc_fn, free C.loch_host_free_fn, sel C.loch_host_select_fn, device C.int, flags C.uint) (func(int) unsafe.Pointer, func(unsafe.Pointer)) {
	return func(c int) unsafe.Pointer {
			var ptr unsafe.Pointer
			if C.loch_call_host_select(sel, device) != 0 || C.loch_call_host_alloc(alloc, &ptr, C.size_t(c), flags) != 0 {
				return nil
			}
			return ptr
		}, func(ptr unsafe.Pointer) {
			C.loch_call_host_select(sel, device)
			C.loch_call_host_free(free, ptr)
		}
}

// loch_pinned_pool_new makes a pool of page-locked batch buffers from the
// allocator alloc/free (select, if not NULL, is called with device before
// each of their calls) of at most limit bytes, and stores its handle in
// *out (see loch.h).
//
//export loch_pinned_pool_new
func loch_pinned_pool_new(alloc C.loch_host_alloc_fn, free C.loch_host_free_fn, sel C.loch_host_select_fn, device C.int, flags C.uint, limit C.int64_t, out *C.uintptr_t, errOut **C.char) (st C.int) {
	defer guard(&st, errOut)
	if alloc == nil || free == nil {
		return fail(errOut, invalidf("pinned pool: alloc and free are required, got NULL"))
	}
	if limit < 0 {
		return fail(errOut, invalidf("pinned pool: limit %d bytes: want >= 0", int64(limit)))
	}
	a, f := hostAllocator(alloc, free, sel, device, flags)
	*out = newHandle(newPinnedPool(a, f, int(limit)))
	return C.LOCH_OK
}

// loch_pinned_pool_set_limit sets the pool's limit: kept buffers beyond it
// are freed now, buffers in use as they come back.
//
//export loch_pinned_pool_set_limit
func loch_pinned_pool_set_limit(h C.uintptr_t, limit C.int64_t, errOut **C.char) (st C.int) {
	return withHandle(h, errOut, pinnedOf, func(pp *pinnedPool) error { return setPinnedLimit(pp, int64(limit)) })
}

// setPinnedLimit sets pp's limit, freeing kept buffers beyond it.
func setPinnedLimit(pp *pinnedPool, limit int64) error {
	if limit < 0 {
		return invalidf("pinned pool: limit %d bytes: want >= 0", limit)
	}
	pp.mu.Lock()
	pp.limit = int(limit)
	drops := pp.shrinkLocked(pp.limit)
	pp.mu.Unlock()
	pp.release(drops)
	return nil
}

// loch_pinned_pool_stats stores in out[0..6) the bytes in use, the bytes
// kept, the limit, the most bytes held at once, the allocations that fell
// back to ordinary memory and the allocator's failures.
//
//export loch_pinned_pool_stats
func loch_pinned_pool_stats(h C.uintptr_t, out *C.int64_t, errOut **C.char) (st C.int) {
	return withHandle(h, errOut, pinnedOf, func(pp *pinnedPool) error {
		pp.mu.Lock()
		defer pp.mu.Unlock()
		vals := []int64{int64(pp.used - pp.keptBytes), int64(pp.keptBytes), int64(pp.limit), int64(pp.peak), pp.fallbacks, pp.failures}
		for i, v := range vals {
			*(*C.int64_t)(unsafe.Add(unsafe.Pointer(out), i*8)) = C.int64_t(v)
		}
		return nil
	})
}

// loch_pinned_pool_close frees the kept buffers and releases the handle;
// buffers in use go back to the allocator as they are freed.
//
//export loch_pinned_pool_close
func loch_pinned_pool_close(h C.uintptr_t, errOut **C.char) (st C.int) {
	return withHandle(h, errOut, pinnedOf, func(pp *pinnedPool) error {
		closePinned(pp)
		deleteHandle(h)
		return nil
	})
}

// closePinned frees pp's kept buffers and makes it give back those in use
// as they come back, and serve no more.
func closePinned(pp *pinnedPool) {
	pp.mu.Lock()
	pp.closed = true
	drops := pp.shrinkLocked(0)
	pp.mu.Unlock()
	pp.release(drops)
}
