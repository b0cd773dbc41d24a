package chunkcache

import (
	"context"
	"sync"

	"github.com/lochdata/loch/internal/lru"
)

// Memory is a Cache in this process's memory: an exact least-recently-used
// list bounded by the total length of the objects it holds (map and list
// overhead are not counted). It has the semantics of Disk without the
// persistence or the sharing between processes; use it in tests and for
// small caches. Safe for concurrent use.
type Memory struct {
	max   int64
	stats counters

	mu      sync.Mutex
	objects *lru.Cache[string, []byte] // nil once closed
}

var (
	_ Cache       = (*Memory)(nil)
	_ RangeReader = (*Memory)(nil)
)

// NewMemory returns an empty Memory cache holding at most maxBytes bytes of
// objects. With maxBytes <= 0 it holds nothing: every Put fails with
// ErrCacheWrite (too large) and every Get misses.
func NewMemory(maxBytes int64) *Memory {
	m := &Memory{max: maxBytes}
	m.objects = lru.New(maxBytes, func(_ string, _ []byte, size int64) { m.stats.evicted(size) })
	return m
}

// Get implements Cache. The returned slice is a copy.
func (m *Memory) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if err := ValidateKey(key); err != nil {
		return nil, false, opError("get", key, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, false, opError("get", key, err)
	}
	m.mu.Lock()
	if m.objects == nil {
		m.mu.Unlock()
		return nil, false, opError("get", key, closed())
	}
	held, ok := m.objects.Get(key)
	if !ok {
		m.mu.Unlock()
		m.stats.misses.Add(1)
		return nil, false, nil
	}
	data := append([]byte{}, held...)
	m.mu.Unlock()
	m.stats.hit(len(data))
	return data, true, nil
}

// checkReadRange checks the key and offset ReadRange is given.
func checkReadRange(key string, off int64) error {
	if err := ValidateKey(key); err != nil {
		return opError("read range of", key, err)
	}
	if off < 0 {
		return opError("read range of", key, badOffset(off))
	}
	return nil
}

// ReadRange implements RangeReader.
func (m *Memory) ReadRange(ctx context.Context, key string, off int64, buf []byte) (bool, error) {
	if err := checkReadRange(key, off); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, opError("read range of", key, err)
	}
	m.mu.Lock()
	if m.objects == nil {
		m.mu.Unlock()
		return false, opError("read range of", key, closed())
	}
	held, ok := m.objects.Get(key)
	if !ok || off > int64(len(held)) || int64(len(buf)) > int64(len(held))-off {
		m.mu.Unlock()
		m.stats.misses.Add(1)
		return false, nil
	}
	copy(buf, held[off:])
	m.mu.Unlock()
	m.stats.hit(len(buf))
	return true, nil
}

// Put implements Cache. The data is copied.
func (m *Memory) Put(ctx context.Context, key string, data []byte) error {
	if err := ValidateKey(key); err != nil {
		return opError("put", key, err)
	}
	if err := ctx.Err(); err != nil {
		return opError("put", key, err)
	}
	if int64(len(data)) > m.max || m.max <= 0 {
		return opError("put", key, tooLarge(len(data), m.max))
	}
	if err := checkContent(key, data); err != nil {
		return opError("put", key, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.objects == nil {
		return opError("put", key, closed())
	}
	if _, ok := m.objects.Get(key); ok {
		return nil // the same content (keys name it), now the most recent
	}
	m.objects.Add(key, append([]byte{}, data...), int64(len(data)))
	m.stats.put(len(data))
	return nil
}

// Size returns the total length of the objects held.
func (m *Memory) Size() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.objects == nil {
		return 0
	}
	return m.objects.Size()
}

// Stats implements Cache.
func (m *Memory) Stats() Stats { return m.stats.snapshot() }

// Close implements Cache: it drops the objects.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objects = nil
	return nil
}
