//go:build unix

package chunkcache_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"github.com/zeebo/xxh3"

	"github.com/lochdata/loch/chunkcache"
)

func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "chunkcache-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	// A cache of at most 1 GiB, shared with any other process that opens dir.
	c, err := chunkcache.Open(dir, 1<<30, nil)
	if err != nil {
		panic(err)
	}
	defer c.Close()

	// loch names a chunk by the XXH3-128 of its bytes.
	data := []byte("column bytes")
	h := xxh3.Hash128(data).Bytes()
	key := "chunks/" + hex.EncodeToString(h[:1]) + "/" + hex.EncodeToString(h[:])

	if _, ok, err := c.Get(ctx, key); err == nil && !ok {
		// A miss: fetch the chunk from the dataset's store, then cache it.
		// A failed write leaves the cache unharmed; the loader carries on.
		if err := c.Put(ctx, key, data); err != nil && !errors.Is(err, chunkcache.ErrCacheWrite) {
			panic(err)
		}
	}
	got, ok, err := c.Get(ctx, key)
	fmt.Println(string(got), ok, err)

	// Bytes that do not match the key's hash are refused.
	err = c.Put(ctx, "chunks/00/00000000000000000000000000000000", data)
	fmt.Println(errors.Is(err, chunkcache.ErrCorrupt))

	fmt.Printf("%+v\n", c.Stats())
	// Output:
	// column bytes true <nil>
	// true
	// {Hits:1 Misses:1 ReadBytes:12 Puts:1 WrittenBytes:12 Evictions:0 EvictedBytes:0 Corrupt:0}
}

func ExampleNewMemory() {
	ctx := context.Background()
	c := chunkcache.NewMemory(10)
	_ = c.Put(ctx, "a", []byte("12345"))
	_ = c.Put(ctx, "b", []byte("12345"))
	_, _, _ = c.Get(ctx, "a")            // a is now the most recently used
	_ = c.Put(ctx, "c", []byte("12345")) // over budget: b goes
	for _, k := range []string{"a", "b", "c"} {
		_, ok, _ := c.Get(ctx, k)
		fmt.Println(k, ok)
	}
	// Output:
	// a true
	// b false
	// c true
}
