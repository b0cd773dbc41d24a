// Package lru is a map that keeps its most recently used entries within a
// total size, dropping the least recently used first. Sizes are the
// caller's (bytes, usually); the map's own overhead is not counted.
//
// A Cache is not safe for concurrent use: its owners (the engine's decoded
// chunk cache, chunkcache.Memory) hold a lock around every call.
package lru

import "container/list"

// Cache holds values by key within a total size. The zero value is not
// usable; make one with New.
type Cache[K comparable, V any] struct {
	max     int64
	size    int64
	order   *list.List // of *entry[K, V], front = most recently used
	items   map[K]*list.Element
	onEvict func(K, V, int64)
}

type entry[K comparable, V any] struct {
	key  K
	val  V
	size int64
}

// New returns an empty cache holding at most max in total size. onEvict,
// when not nil, is called with every entry dropped to make room (not with
// entries replaced or removed by the caller).
func New[K comparable, V any](max int64, onEvict func(K, V, int64)) *Cache[K, V] {
	return &Cache[K, V]{max: max, order: list.New(), items: map[K]*list.Element{}, onEvict: onEvict}
}

// Get returns the value under k and marks it most recently used.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	e, ok := c.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*entry[K, V]).val, true
}

// Add stores v under k with the given size, replacing what k held, as the
// most recently used entry, and then drops least recently used entries
// until the total fits. A value larger than the whole cache is not stored
// (what k held is removed) and Add reports false.
func (c *Cache[K, V]) Add(k K, v V, size int64) bool {
	c.Remove(k)
	if size > c.max {
		return false
	}
	c.items[k] = c.order.PushFront(&entry[K, V]{key: k, val: v, size: size})
	c.size += size
	for c.size > c.max {
		old := c.order.Remove(c.order.Back()).(*entry[K, V])
		delete(c.items, old.key)
		c.size -= old.size
		if c.onEvict != nil {
			c.onEvict(old.key, old.val, old.size)
		}
	}
	return true
}

// Remove drops the entry under k, if any.
func (c *Cache[K, V]) Remove(k K) {
	if e, ok := c.items[k]; ok {
		c.order.Remove(e)
		delete(c.items, k)
		c.size -= e.Value.(*entry[K, V]).size
	}
}

// Clear drops every entry, least recently used first, calling the
// eviction function for each.
func (c *Cache[K, V]) Clear() {
	for c.order.Len() > 0 {
		old := c.order.Remove(c.order.Back()).(*entry[K, V])
		delete(c.items, old.key)
		c.size -= old.size
		if c.onEvict != nil {
			c.onEvict(old.key, old.val, old.size)
		}
	}
}

// Len returns the number of entries.
func (c *Cache[K, V]) Len() int { return len(c.items) }

// Size returns the total size of the entries.
func (c *Cache[K, V]) Size() int64 { return c.size }
