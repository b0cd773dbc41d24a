// Package chunkcachetest is the conformance suite for chunkcache.Cache:
// every implementation passes Run.
package chunkcachetest

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zeebo/xxh3"

	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/testseed"
)

// OpenFunc makes an empty cache with a budget of maxBytes bytes, not shared with
// other subtests. For a Disk, recency must be exact (a negative
// TouchInterval), or the LRU tests see touches that the throttle skipped.
type OpenFunc func(t *testing.T, maxBytes int64) chunkcache.Cache

// Run checks that the caches made by open behave as the chunkcache.Cache
// contract says, and as the chunkcache.RangeReader contract says for those
// that implement it. open is called at least once per subtest; Run closes what
// it returns. Subtests do not run in parallel with each other.
func Run(t *testing.T, open OpenFunc) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, OpenFunc)
	}{
		{"RoundTrip", testRoundTrip},
		{"Miss", testMiss},
		{"Empty", testEmpty},
		{"CallerOwnsSlices", testCallerOwnsSlices},
		{"IdempotentPut", testIdempotentPut},
		{"ConcurrentPutSameKey", testConcurrentPutSameKey},
		{"LRUOrder", testLRUOrder},
		{"LRUModel", testLRUModel},
		{"SizeBound", testSizeBound},
		{"TooLarge", testTooLarge},
		{"InvalidKeys", testInvalidKeys},
		{"HashMismatch", testHashMismatch},
		{"Stats", testStats},
		{"Concurrent", testConcurrent},
		{"CanceledContext", testCanceledContext},
		{"Closed", testClosed},
		{"RangeRead", testRangeRead},
		{"RangeReadLRU", testRangeReadLRU},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

// ChunkKey returns the content-addressed key loch stores data under:
// "chunks/<first two hex digits>/<XXH3-128 in hex>".
func ChunkKey(data []byte) string {
	h := xxh3.Hash128(data).Bytes()
	s := hex.EncodeToString(h[:])
	return "chunks/" + s[:2] + "/" + s
}

// object is a key with its bytes.
type object struct {
	key  string
	data []byte
}

// chunk returns the content-addressed object for testseed.Bytes(seed, n).
func chunk(seed uint64, n int) object {
	data := testseed.Bytes(seed, n)
	return object{ChunkKey(data), data}
}

func mustOpen(t *testing.T, open OpenFunc, maxBytes int64) chunkcache.Cache {
	c := open(t, maxBytes)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

func requireHit(t *testing.T, c chunkcache.Cache, o object) {
	t.Helper()
	got, ok, err := c.Get(context.Background(), o.key)
	require.NoError(t, err, "get %q", o.key)
	require.True(t, ok, "get %q: want a hit", o.key)
	require.Equal(t, o.data, got, "get %q", o.key)
}

func requireMiss(t *testing.T, c chunkcache.Cache, key string) {
	t.Helper()
	got, ok, err := c.Get(context.Background(), key)
	require.NoError(t, err, "get %q", key)
	require.False(t, ok, "get %q: want a miss", key)
	require.Nil(t, got, "get %q", key)
}

func testRoundTrip(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	c := mustOpen(t, open, 1<<20)
	objs := []object{
		chunk(1, 1000),
		chunk(2, 64<<10),
		{"manifests/not-a-hash", testseed.Bytes(3, 100)},
		{"deep/er/still/c", testseed.Bytes(4, 10)},
		{"with space/é ñ#%?=&+.txt", testseed.Bytes(5, 7)},
		// Looks almost like a hash but is not one: 31 digits, upper case.
		{"chunks/ab/" + strings.Repeat("a", 31), testseed.Bytes(6, 9)},
		{"chunks/ab/" + strings.Repeat("A", 32), testseed.Bytes(7, 9)},
	}
	for _, o := range objs {
		require.NoError(t, c.Put(ctx, o.key, o.data), "put %q", o.key)
	}
	for _, o := range objs {
		requireHit(t, c, o)
	}
}

func testMiss(t *testing.T, open OpenFunc) {
	c := mustOpen(t, open, 1<<20)
	requireMiss(t, c, chunk(1, 10).key)
	requireMiss(t, c, "never/put")
	// A key that is a prefix of a cached key, and one under a cached key.
	require.NoError(t, c.Put(context.Background(), "a/b", []byte("x")))
	requireMiss(t, c, "a")
	requireMiss(t, c, "a/b/c")
	require.Equal(t, int64(4), c.Stats().Misses)
}

func testEmpty(t *testing.T, open OpenFunc) {
	c := mustOpen(t, open, 1<<20)
	for _, o := range []object{chunk(1, 0), {"empty", nil}} {
		require.NoError(t, c.Put(context.Background(), o.key, o.data))
		got, ok, err := c.Get(context.Background(), o.key)
		require.NoError(t, err)
		require.True(t, ok, "an empty object is cached like any other")
		require.NotNil(t, got)
		require.Empty(t, got)
	}
}

func testCallerOwnsSlices(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	c := mustOpen(t, open, 1<<20)
	data := []byte("original")
	require.NoError(t, c.Put(ctx, "owned", data))
	copy(data, "mutated!")
	got, ok, err := c.Get(ctx, "owned")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "original", string(got), "Put does not retain its argument")
	copy(got, "changed!")
	again, _, err := c.Get(ctx, "owned")
	require.NoError(t, err)
	require.Equal(t, "original", string(again), "the slice Get returns is the caller's")
}

func testIdempotentPut(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	c := mustOpen(t, open, 1<<20)
	o := chunk(1, 5000)
	for range 3 {
		require.NoError(t, c.Put(ctx, o.key, o.data))
	}
	requireHit(t, c, o)
	st := c.Stats()
	require.Equal(t, int64(1), st.Puts, "a key is stored once")
	require.Equal(t, int64(len(o.data)), st.WrittenBytes)
}

func testConcurrentPutSameKey(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	c := mustOpen(t, open, 1<<20)
	o := chunk(1, 100<<10)
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() { errs[i] = c.Put(ctx, o.key, o.data) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	requireHit(t, c, o)
	require.Equal(t, int64(1), c.Stats().Puts, "concurrent Puts of one key store it once")
}

// testLRUOrder: in a cache of four objects, a read makes the oldest one
// survive the next eviction, and the next oldest goes instead.
func testLRUOrder(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	const size = 1000
	c := mustOpen(t, open, 4*size)
	objs := make([]object, 7)
	for i := range objs {
		objs[i] = chunk(uint64(i), size)
	}
	for _, o := range objs[:4] {
		require.NoError(t, c.Put(ctx, o.key, o.data))
	}
	requireHit(t, c, objs[0])                                 // order now 1 2 3 0
	require.NoError(t, c.Put(ctx, objs[4].key, objs[4].data)) // evicts 1
	requireMiss(t, c, objs[1].key)
	require.NoError(t, c.Put(ctx, objs[2].key, objs[2].data)) // a Put of a cached key marks it used: 3 0 4 2
	require.NoError(t, c.Put(ctx, objs[5].key, objs[5].data)) // evicts 3
	requireMiss(t, c, objs[3].key)
	for _, i := range []int{0, 4, 2, 5} {
		requireHit(t, c, objs[i])
	}
	require.Equal(t, int64(2), c.Stats().Evictions)
}

// testLRUModel runs random Puts and Gets of objects of random sizes against
// a reference LRU model and requires the same hits and misses.
func testLRUModel(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	const budget = 20 << 10
	c := mustOpen(t, open, budget)
	pool := make([]object, 40)
	for i := range pool {
		pool[i] = chunk(seed+uint64(i), 1+rng.IntN(4<<10))
	}
	m := newModel(budget)
	for step := range 600 {
		o := pool[rng.IntN(len(pool))]
		if rng.IntN(2) == 0 {
			require.NoError(t, c.Put(ctx, o.key, o.data), "step %d: put", step)
			m.put(o.key, len(o.data))
			continue
		}
		got, ok, err := c.Get(ctx, o.key)
		require.NoError(t, err, "step %d: get", step)
		require.Equal(t, m.get(o.key), ok, "step %d: get %q: hit or miss differs from the LRU model (seed %d)", step, o.key, seed)
		if ok {
			require.Equal(t, o.data, got, "step %d", step)
		}
	}
	require.Equal(t, m.evictions, c.Stats().Evictions, "evictions (seed %d)", seed)
}

// model is a reference LRU cache of sizes.
type model struct {
	max, size int64
	evictions int64
	order     []string // least recently used first
	sizes     map[string]int64
}

func newModel(max int64) *model { return &model{max: max, sizes: map[string]int64{}} }

func (m *model) use(key string) {
	for i, k := range m.order {
		if k == key {
			m.order = append(m.order[:i], m.order[i+1:]...)
			break
		}
	}
	m.order = append(m.order, key)
}

func (m *model) get(key string) bool {
	if _, ok := m.sizes[key]; !ok {
		return false
	}
	m.use(key)
	return true
}

func (m *model) put(key string, n int) {
	if _, ok := m.sizes[key]; ok {
		m.use(key)
		return
	}
	m.sizes[key] = int64(n)
	m.size += int64(n)
	m.order = append(m.order, key)
	for m.size > m.max {
		old := m.order[0]
		m.order = m.order[1:]
		m.size -= m.sizes[old]
		delete(m.sizes, old)
		m.evictions++
	}
}

// testSizeBound puts many objects into a small cache and checks that what it
// still returns fits in the budget, and that the most recent Put is kept.
func testSizeBound(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	const budget = 64 << 10
	c := mustOpen(t, open, budget)
	rng := rand.New(rand.NewPCG(1, 2))
	var objs []object
	for i := range 200 {
		o := chunk(uint64(i), rng.IntN(16<<10))
		objs = append(objs, o)
		require.NoError(t, c.Put(ctx, o.key, o.data))
		if i%50 == 49 {
			requireWithin(t, c, objs, budget)
		}
		requireHit(t, c, o)
	}
	requireWithin(t, c, objs, budget)
	st := c.Stats()
	require.Equal(t, st.WrittenBytes-st.EvictedBytes, heldBytes(t, c, objs), "written minus evicted is what is held")
}

func requireWithin(t *testing.T, c chunkcache.Cache, objs []object, budget int64) {
	t.Helper()
	held := heldBytes(t, c, objs)
	require.LessOrEqual(t, held, budget, "bytes still cached")
	require.Positive(t, held)
}

// heldBytes probes every object and sums the lengths of those cached. (The
// probes reorder recency; the caller does not depend on it.)
func heldBytes(t *testing.T, c chunkcache.Cache, objs []object) int64 {
	t.Helper()
	var held int64
	for _, o := range objs {
		got, ok, err := c.Get(context.Background(), o.key)
		require.NoError(t, err)
		if ok {
			require.Equal(t, o.data, got)
			held += int64(len(got))
		}
	}
	return held
}

func testTooLarge(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	c := mustOpen(t, open, 1000)
	fits := chunk(1, 1000)
	require.NoError(t, c.Put(ctx, fits.key, fits.data), "an object of exactly the budget fits")
	requireHit(t, c, fits)
	big := chunk(2, 1001)
	err := c.Put(ctx, big.key, big.data)
	require.ErrorIs(t, err, chunkcache.ErrCacheWrite)
	require.ErrorContains(t, err, "larger than the cache's budget")
	requireMiss(t, c, big.key)
	requireHit(t, c, fits) // the refused Put evicted nothing
}

// InvalidKeys are keys every Cache refuses with ErrInvalidKey.
var InvalidKeys = []string{
	"", "/abs", "/", "a/", "a//b", ".", "..", "../x", "a/../b", "a/./b", "a/..",
	`a\b`, `..\x`, "a\x00b", "a\nb", "a\x7fb", "\xff\xfe", strings.Repeat("a", 1025),
	"a/" + strings.Repeat("b", 256),
}

func testInvalidKeys(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	c := mustOpen(t, open, 1<<20)
	for _, key := range InvalidKeys {
		err := c.Put(ctx, key, []byte("x"))
		require.ErrorIs(t, err, chunkcache.ErrInvalidKey, "put %q", key)
		_, ok, err := c.Get(ctx, key)
		require.ErrorIs(t, err, chunkcache.ErrInvalidKey, "get %q", key)
		require.False(t, ok)
	}
	st := c.Stats()
	require.Zero(t, st.Puts+st.Misses+st.Hits, "invalid keys are refused before anything is counted")
	// The longest keys that are valid work.
	for _, key := range []string{strings.Repeat("a/", 511) + "bc", "a/" + strings.Repeat("b", 255), "..a/b..", "a.b/.c"} {
		require.NoError(t, c.Put(ctx, key, []byte(key[:2])), "put %q", key)
		requireHit(t, c, object{key, []byte(key[:2])})
	}
}

func testHashMismatch(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	c := mustOpen(t, open, 1<<20)
	o := chunk(1, 100)
	err := c.Put(ctx, o.key, testseed.Bytes(2, 100))
	require.ErrorIs(t, err, chunkcache.ErrCorrupt)
	require.ErrorContains(t, err, o.key)
	requireMiss(t, c, o.key)
}

func testStats(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	c := mustOpen(t, open, 3000)
	a, b, d := chunk(1, 1000), chunk(2, 1500), chunk(3, 1000)
	require.NoError(t, c.Put(ctx, a.key, a.data))
	require.NoError(t, c.Put(ctx, b.key, b.data))
	requireHit(t, c, a)
	requireHit(t, c, a)
	requireMiss(t, c, d.key)
	require.NoError(t, c.Put(ctx, d.key, d.data)) // 3500 > 3000: evicts b
	require.Equal(t, chunkcache.Stats{
		Hits: 2, Misses: 1, ReadBytes: 2000,
		Puts: 3, WrittenBytes: 3500,
		Evictions: 1, EvictedBytes: 1500,
	}, c.Stats())
}

// testConcurrent runs goroutines that Put and Get overlapping keys in a
// cache too small for them all; every hit must return the right bytes.
func testConcurrent(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	c := mustOpen(t, open, 48<<10)
	pool := make([]object, 32)
	for i := range pool {
		pool[i] = chunk(uint64(i), 1+(i*997)%(8<<10))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 300 {
				o := pool[rng.IntN(len(pool))]
				if rng.IntN(2) == 0 {
					if err := c.Put(ctx, o.key, o.data); err != nil {
						errs <- err
						return
					}
					continue
				}
				got, ok, err := c.Get(ctx, o.key)
				if err != nil {
					errs <- err
					return
				}
				if ok && string(got) != string(o.data) {
					errs <- fmt.Errorf("get %q: wrong bytes", o.key)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.LessOrEqual(t, heldBytes(t, c, pool), int64(48<<10))
}

func testCanceledContext(t *testing.T, open OpenFunc) {
	c := mustOpen(t, open, 1<<20)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := chunk(1, 10)
	require.ErrorIs(t, c.Put(ctx, o.key, o.data), context.Canceled)
	_, ok, err := c.Get(ctx, o.key)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, ok)
	requireMiss(t, c, o.key)
}

func testClosed(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	c := open(t, 1<<20)
	o := chunk(1, 10)
	require.NoError(t, c.Put(ctx, o.key, o.data))
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "closing twice is not an error")
	err := c.Put(ctx, o.key, o.data)
	require.ErrorIs(t, err, chunkcache.ErrClosed)
	require.False(t, errors.Is(err, chunkcache.ErrCacheWrite))
	_, ok, err := c.Get(ctx, o.key)
	require.ErrorIs(t, err, chunkcache.ErrClosed)
	require.False(t, ok)
	require.Equal(t, int64(1), c.Stats().Puts, "Stats works after Close")
}

// rangeReader returns c as a RangeReader, skipping the test for a cache
// that is not one.
func rangeReader(t *testing.T, c chunkcache.Cache) chunkcache.RangeReader {
	rr, ok := c.(chunkcache.RangeReader)
	if !ok {
		t.Skip("not a RangeReader")
	}
	return rr
}

// testRangeRead reads ranges of a cached object: every range within it is
// a hit with its bytes, one that passes its end and an absent key are
// misses, and the operations count in Stats.
func testRangeRead(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	c := mustOpen(t, open, 1<<20)
	rr := rangeReader(t, c)
	o := chunk(1, 100<<10)
	require.NoError(t, c.Put(ctx, o.key, o.data))
	n := int64(len(o.data))
	var hits, read int64
	for _, r := range [][2]int64{{0, 10}, {5000, 70000}, {n - 5, 5}, {0, n}, {n, 0}, {17, 0}} {
		buf := make([]byte, r[1])
		ok, err := rr.ReadRange(ctx, o.key, r[0], buf)
		require.NoError(t, err, "range %v", r)
		require.True(t, ok, "range %v: want a hit", r)
		require.Equal(t, o.data[r[0]:r[0]+r[1]], buf, "range %v", r)
		hits++
		read += r[1]
	}
	// (Under a key that is not a content hash: a Disk cache takes a
	// content-hash object shorter than a range for one cut short, and drops
	// it.)
	plain := object{"plain/object", testseed.Bytes(3, 100)}
	require.NoError(t, c.Put(ctx, plain.key, plain.data))
	for _, r := range [][2]int64{{95, 6}, {101, 0}, {1 << 40, 1}} {
		ok, err := rr.ReadRange(ctx, plain.key, r[0], make([]byte, r[1]))
		require.NoError(t, err, "range %v", r)
		require.False(t, ok, "range %v passes the end: want a miss", r)
	}
	requireHit(t, c, plain)
	hits++
	read += int64(len(plain.data))
	ok, err := rr.ReadRange(ctx, chunk(2, 10).key, 0, make([]byte, 1))
	require.NoError(t, err)
	require.False(t, ok, "absent key")
	st := c.Stats()
	require.Equal(t, hits, st.Hits)
	require.Equal(t, read, st.ReadBytes)
	require.Equal(t, int64(4), st.Misses)

	_, err = rr.ReadRange(ctx, o.key, -1, make([]byte, 1))
	require.ErrorIs(t, err, base.ErrInvalidArgument)
	for _, key := range InvalidKeys {
		ok, err := rr.ReadRange(ctx, key, 0, nil)
		require.ErrorIs(t, err, chunkcache.ErrInvalidKey, "key %q", key)
		require.False(t, ok)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	ok, err = rr.ReadRange(canceled, o.key, 0, make([]byte, 1))
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, ok)

	require.NoError(t, c.Close())
	ok, err = rr.ReadRange(ctx, o.key, 0, make([]byte, 1))
	require.ErrorIs(t, err, chunkcache.ErrClosed)
	require.False(t, ok)
}

// testRangeReadLRU: a range hit makes the object the most recently used,
// as a Get does.
func testRangeReadLRU(t *testing.T, open OpenFunc) {
	ctx := context.Background()
	const size = 1000
	c := mustOpen(t, open, 3*size)
	rr := rangeReader(t, c)
	objs := make([]object, 4)
	for i := range objs {
		objs[i] = chunk(uint64(i), size)
	}
	for _, o := range objs[:3] {
		require.NoError(t, c.Put(ctx, o.key, o.data))
	}
	ok, err := rr.ReadRange(ctx, objs[0].key, 10, make([]byte, 10)) // order now 1 2 0
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, c.Put(ctx, objs[3].key, objs[3].data)) // evicts 1
	requireMiss(t, c, objs[1].key)
	requireHit(t, c, objs[0])
}
