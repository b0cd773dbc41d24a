package main

import (
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// fakeHost is a page-locked allocator of Go memory that counts its calls
// and can refuse.
type fakeHost struct {
	mu     sync.Mutex
	blocks map[unsafe.Pointer][]byte
	allocs int
	frees  int
	refuse bool
}

func newFakeHost() *fakeHost { return &fakeHost{blocks: map[unsafe.Pointer][]byte{}} }

func (h *fakeHost) alloc(c int) unsafe.Pointer {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refuse {
		return nil
	}
	b := make([]byte, c)
	p := unsafe.Pointer(&b[0])
	h.blocks[p] = b
	h.allocs++
	return p
}

func (h *fakeHost) free(p unsafe.Pointer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.blocks[p]; !ok {
		panic("fakeHost: free of a pointer it did not allocate")
	}
	delete(h.blocks, p)
	h.frees++
}

func pinnedStats(pp *pinnedPool) (live, kept, peak int, fallbacks int64) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.used - pp.keptBytes, pp.keptBytes, pp.peak, pp.fallbacks
}

// A loader's buffers come from its pinned pool, go back to it through
// loch_buffer_free's path (pool.release), are reused by size class, and
// loch_buffer_stats counts those in use.
func TestPinnedPoolServesAndTakesBack(t *testing.T) {
	h := newFakeHost()
	pp := newPinnedPool(h.alloc, h.free, 1<<20)
	a := newLoaderAlloc()
	a.pinned = pp
	liveBefore, _ := pool.stats()
	b1 := a.Alloc(100 << 10)
	a.handOff(b1)
	live, kept, _, _ := pinnedStats(pp)
	require.Equal(t, sizeClass(100<<10), live)
	require.Zero(t, kept)
	l, _ := pool.stats()
	require.Equal(t, liveBefore+live, l, "loch_buffer_stats counts page-locked buffers in use")
	require.True(t, pool.release(ptrOf(b1)))
	live, kept, _, _ = pinnedStats(pp)
	require.Zero(t, live)
	require.Equal(t, sizeClass(100<<10), kept)
	b2 := a.Alloc(100 << 10)
	require.Equal(t, ptrOf(b1), ptrOf(b2), "reused, not allocated again")
	require.Equal(t, 1, h.allocs)
	pool.releaseAll([]unsafe.Pointer{ptrOf(b2)})
	require.False(t, pool.release(ptrOf(b2)), "released once")
}

// The pool never holds more than its limit: past it, buffers come from
// ordinary memory; kept buffers of another class make room; lowering the
// limit frees kept ones, and buffers in use as they come back; closing
// frees everything.
func TestPinnedPoolLimit(t *testing.T) {
	h := newFakeHost()
	c := sizeClass(300 << 10)
	pp := newPinnedPool(h.alloc, h.free, 2*c)
	a := newLoaderAlloc()
	a.pinned = pp
	b1, b2, b3 := a.Alloc(300<<10), a.Alloc(300<<10), a.Alloc(300<<10)
	_, isPinned := pool.pinned[ptrOf(b3)]
	require.False(t, isPinned, "the third does not fit")
	_, _, peak, fallbacks := pinnedStats(pp)
	require.Equal(t, 2*c, peak)
	require.EqualValues(t, 1, fallbacks)
	a.Free(b1)
	small := a.Alloc(64 << 10) // room made by freeing the kept 300 KiB buffer
	_, isPinned = pool.pinned[ptrOf(small)]
	require.True(t, isPinned)
	require.Equal(t, 1, h.frees)

	require.NoError(t, setPinnedLimit(pp, 0))
	a.Free(b2)
	a.Free(small)
	live, kept, _, _ := pinnedStats(pp)
	require.Zero(t, live+kept, "over the limit: given back to the allocator")
	a.Free(b3)

	b4 := a.Alloc(10)
	require.NoError(t, setPinnedLimit(pp, 1<<20))
	b5 := a.Alloc(10)
	closePinned(pp)
	require.Nil(t, pp.get(4096), "a closed pool serves nothing")
	a.releaseAll()
	_ = b4
	_ = b5
	require.Empty(t, h.blocks, "closing and releasing freed every buffer")
}

// A refusing allocator is counted, and the loader gets ordinary memory.
func TestPinnedPoolAllocatorRefuses(t *testing.T) {
	h := newFakeHost()
	h.refuse = true
	pp := newPinnedPool(h.alloc, h.free, 1<<20)
	require.Nil(t, pp.get(4096))
	pp.mu.Lock()
	require.EqualValues(t, 1, pp.failures)
	require.Zero(t, pp.used)
	pp.mu.Unlock()
}

// Many goroutines allocating and freeing stay within the limit (run with
// -race).
func TestPinnedPoolConcurrent(t *testing.T) {
	h := newFakeHost()
	limit := 8 * sizeClass(50<<10)
	pp := newPinnedPool(h.alloc, h.free, limit)
	a := newLoaderAlloc()
	a.pinned = pp
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				b := a.Alloc((1 + (g+i)%3) * 20 << 10)
				b[0] = byte(i)
				a.Free(b)
			}
		}()
	}
	wg.Wait()
	live, kept, peak, _ := pinnedStats(pp)
	require.Zero(t, live)
	require.LessOrEqual(t, kept, limit)
	require.LessOrEqual(t, peak, limit)
	closePinned(pp)
	require.Empty(t, h.blocks)
}
