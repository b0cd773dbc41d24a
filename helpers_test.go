package loch

import (
	"context"
	"sync"

	"github.com/lochdata/loch/storage"
)

type storageStore = storage.Store

var countMu sync.Mutex

func (c *countingStore) Put(ctx context.Context, key string, data []byte) error {
	countMu.Lock()
	c.written[key] += len(data)
	countMu.Unlock()
	return c.storageStore.Put(ctx, key, data)
}

func (c *countingStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	countMu.Lock()
	c.written[key] += len(data)
	countMu.Unlock()
	return c.storageStore.PutIfAbsent(ctx, key, data)
}
