package query

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/storage"
)

var ctx = context.Background()

func TestMain(m *testing.M) {
	defer testserver.StopAll()
	defer func() {
		if metaDir != "" && os.Getenv("LOCH_QUERY_BENCH_DIR") == "" {
			os.RemoveAll(metaDir)
		}
	}()
	m.Run()
}

// countingStore counts the bytes read from a store, by key prefix.
type countingStore struct {
	storage.Store
	mu   sync.Mutex
	read map[string]int64
}

func newCounting(s storage.Store) *countingStore {
	return &countingStore{Store: s, read: map[string]int64{}}
}

func (c *countingStore) add(key string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read[key] += int64(n)
}

func (c *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := c.Store.Get(ctx, key)
	c.add(key, len(b))
	return b, err
}

func (c *countingStore) ReadRange(ctx context.Context, key string, off int64, dst []byte) error {
	c.add(key, len(dst))
	return c.Store.ReadRange(ctx, key, off, dst)
}

// readOf returns the bytes read of the keys for which keep is true, and
// resets the counts.
func (c *countingStore) readOf(keep func(key string) bool) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for k, v := range c.read {
		if keep(k) {
			n += v
		}
	}
	c.read = map[string]int64{}
	return n
}

func isChunk(k string) bool { return strings.HasPrefix(k, "chunks/") }
