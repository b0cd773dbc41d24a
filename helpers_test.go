package loch

import (
	"context"
	"sync"
	"testing"

	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
	"github.com/stretchr/testify/require"
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

// statsOf returns the statistics of d's column name in its version.
func statsOf(t *testing.T, d *Dataset, name string) schema.Stats {
	t.Helper()
	sch := d.Schema()
	c, ok := sch.Column(name)
	require.True(t, ok, "column %s", name)
	return d.current().man.ColumnStats(c.UID)
}
