package loch

import (
	"sync"

	"github.com/lochdata/loch/internal/chunk"
	"github.com/lochdata/loch/internal/lru"
)

// chunkCache keeps decoded chunks and parsed headers in memory, least
// recently used first out, bounded by bytes. Safe for concurrent use.
type chunkCache struct {
	mu      sync.Mutex
	entries *lru.Cache[string, *cacheEntry]
}

type cacheEntry struct {
	chunk  *chunk.Chunk  // whole decoded chunk, or nil
	header *chunk.Header // header only
}

func newChunkCache(max int64) *chunkCache {
	return &chunkCache{entries: lru.New[string, *cacheEntry](max, nil)}
}

func (c *chunkCache) get(key string) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, _ := c.entries.Get(key)
	return e
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
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries.Get(key); ok && (old.chunk != nil || ch == nil) {
		return // as good as what is offered, and now the most recent
	}
	c.entries.Add(key, &cacheEntry{chunk: ch, header: h}, size)
}
