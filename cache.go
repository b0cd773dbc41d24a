package loch

import (
	"container/list"
	"sync"

	"github.com/lochdata/loch/chunk"
)

// chunkCache keeps decoded chunks and parsed headers in memory, least
// recently used first out, bounded by bytes. Safe for concurrent use.
type chunkCache struct {
	mu    sync.Mutex
	max   int64
	size  int64
	order *list.List // of *cacheEntry, front = most recent
	items map[string]*list.Element
}

type cacheEntry struct {
	key    string
	chunk  *chunk.Chunk  // whole decoded chunk, or nil
	header *chunk.Header // header only
	size   int64
}

func newChunkCache(max int64) *chunkCache {
	return &chunkCache{max: max, order: list.New(), items: map[string]*list.Element{}}
}

func (c *chunkCache) get(key string) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*cacheEntry)
	}
	return nil
}

// put stores a decoded chunk (replacing a header-only entry) or a header.
func (c *chunkCache) put(key string, ch *chunk.Chunk, h *chunk.Header) {
	size := int64(256)
	if h != nil {
		size += int64(h.Len)
	}
	if ch != nil {
		size += int64(len(ch.Raw)) + int64(ch.Len)
		h = ch.Header
	}
	if size > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		old := e.Value.(*cacheEntry)
		if old.chunk != nil || ch == nil {
			c.order.MoveToFront(e)
			return
		}
		c.size -= old.size
		c.order.Remove(e)
	}
	c.items[key] = c.order.PushFront(&cacheEntry{key: key, chunk: ch, header: h, size: size})
	c.size += size
	for c.size > c.max {
		e := c.order.Back()
		ent := e.Value.(*cacheEntry)
		c.order.Remove(e)
		delete(c.items, ent.key)
		c.size -= ent.size
	}
}
