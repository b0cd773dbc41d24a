package chunkcache

import (
	"container/list"
	"context"
	"sync"
)

// Memory is a Cache in this process's memory: an exact least-recently-used
// list bounded by the total length of the objects it holds (map and list
// overhead are not counted). It has the semantics of Disk without the
// persistence or the sharing between processes; use it in tests and for
// small caches. Safe for concurrent use.
type Memory struct {
	max   int64
	stats counters

	mu     sync.Mutex
	size   int64
	order  *list.List               // of *memEntry, front = most recently used
	items  map[string]*list.Element // by key
	closed bool
}

type memEntry struct {
	key  string
	data []byte
}

var _ Cache = (*Memory)(nil)

// NewMemory returns an empty Memory cache holding at most maxBytes bytes of
// objects. With maxBytes <= 0 it holds nothing: every Put fails with
// ErrCacheWrite (too large) and every Get misses.
func NewMemory(maxBytes int64) *Memory {
	return &Memory{max: maxBytes, order: list.New(), items: map[string]*list.Element{}}
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
	if m.closed {
		m.mu.Unlock()
		return nil, false, opError("get", key, closed())
	}
	e, ok := m.items[key]
	if !ok {
		m.mu.Unlock()
		m.stats.misses.Add(1)
		return nil, false, nil
	}
	m.order.MoveToFront(e)
	data := append([]byte{}, e.Value.(*memEntry).data...)
	m.mu.Unlock()
	m.stats.hit(len(data))
	return data, true, nil
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
	if m.closed {
		return opError("put", key, closed())
	}
	if e, ok := m.items[key]; ok {
		m.order.MoveToFront(e)
		return nil
	}
	m.items[key] = m.order.PushFront(&memEntry{key: key, data: append([]byte{}, data...)})
	m.size += int64(len(data))
	m.stats.put(len(data))
	for m.size > m.max {
		old := m.order.Remove(m.order.Back()).(*memEntry)
		delete(m.items, old.key)
		m.size -= int64(len(old.data))
		m.stats.evicted(int64(len(old.data)))
	}
	return nil
}

// Size returns the total length of the objects held.
func (m *Memory) Size() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.size
}

// Stats implements Cache.
func (m *Memory) Stats() Stats { return m.stats.snapshot() }

// Close implements Cache: it drops the objects.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.items, m.order, m.size = nil, nil, 0
	return nil
}
