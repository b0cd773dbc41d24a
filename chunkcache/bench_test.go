//go:build unix

package chunkcache_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/chunkcache/chunkcachetest"
	"github.com/lochdata/loch/internal/testseed"
)

var benchSizes = []int{64 << 10, 1 << 20, 8 << 20}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// BenchmarkGet reads cached chunks (from the page cache: the files were just
// written) through Disk.Get, with and without verification, beside the
// baselines: os.ReadFile of the same files, and XXH3-128 of the bytes in
// memory (the cost of verification alone).
func BenchmarkGet(b *testing.B) {
	ctx := context.Background()
	for _, size := range benchSizes {
		const n = 16
		dir := b.TempDir()
		d, err := chunkcache.Open(dir, 1<<40, nil)
		if err != nil {
			b.Fatal(err)
		}
		keys := make([]string, n)
		paths := make([]string, n)
		for i := range keys {
			data := testseed.Bytes(uint64(i), size)
			keys[i] = chunkcachetest.ChunkKey(data)
			paths[i] = filepath.Join(dir, "objects", filepath.FromSlash(keys[i]))
			if err := d.Put(ctx, keys[i], data); err != nil {
				b.Fatal(err)
			}
		}
		noVerify, err := chunkcache.Open(dir, 1<<40, &chunkcache.Options{NoVerify: true})
		if err != nil {
			b.Fatal(err)
		}
		get := func(c chunkcache.Cache) func(b *testing.B) {
			return func(b *testing.B) {
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if _, ok, err := c.Get(ctx, keys[i%n]); err != nil || !ok {
						b.Fatal(ok, err)
					}
				}
			}
		}
		b.Run(sizeName(size)+"/cache", get(d))
		b.Run(sizeName(size)+"/cache-noverify", get(noVerify))
		b.Run(sizeName(size)+"/os.ReadFile", func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := os.ReadFile(paths[i%n]); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(sizeName(size)+"/xxh3", func(b *testing.B) {
			data := testseed.Bytes(0, size)
			b.SetBytes(int64(size))
			for b.Loop() {
				xxh3.Hash128(data)
			}
		})
		_ = noVerify.Close()
		_ = d.Close()
	}
}

// BenchmarkPut writes new objects into a 64 MiB cache in its steady state
// (each Put evicts about one object), beside the baseline: os.WriteFile of a
// new file and removal of the file written 64 MiB earlier. Keys are not
// content hashes, so no hashing is measured (see BenchmarkGet's xxh3).
func BenchmarkPut(b *testing.B) {
	ctx := context.Background()
	const budget = 64 << 20
	for _, size := range benchSizes {
		data := testseed.Bytes(1, size)
		window := budget / size
		b.Run(sizeName(size)+"/cache", func(b *testing.B) {
			d, err := chunkcache.Open(b.TempDir(), budget, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				key := "bench/" + strconv.Itoa(i%256) + "/" + strconv.Itoa(i)
				if err := d.Put(ctx, key, data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(sizeName(size)+"/os.WriteFile", func(b *testing.B) {
			dir := b.TempDir()
			for i := range 256 {
				if err := os.Mkdir(filepath.Join(dir, strconv.Itoa(i)), 0o755); err != nil {
					b.Fatal(err)
				}
			}
			path := func(i int) string { return filepath.Join(dir, strconv.Itoa(i%256), strconv.Itoa(i)) }
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := os.WriteFile(path(i), data, 0o644); err != nil {
					b.Fatal(err)
				}
				if i >= window {
					if err := os.Remove(path(i - window)); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkReadRange reads samples' worth of bytes (12 KiB, as a full
// shuffle reads one sample's lz4 blocks) at spread offsets of 64 cached
// 4 MiB chunks through Disk.ReadRange, with the files held open (the
// default) and beside the baseline of opening each file per read
// (OpenFiles: -1, as before).
func BenchmarkReadRange(b *testing.B) {
	ctx := context.Background()
	const n, size, read = 64, 4 << 20, 12 << 10
	dir := b.TempDir()
	keys := make([]string, n)
	for _, files := range []int{0, -1} {
		d, err := chunkcache.Open(dir, 1<<40, &chunkcache.Options{OpenFiles: files})
		if err != nil {
			b.Fatal(err)
		}
		for i := range keys {
			data := testseed.Bytes(uint64(i), size)
			keys[i] = chunkcachetest.ChunkKey(data)
			if err := d.Put(ctx, keys[i], data); err != nil {
				b.Fatal(err)
			}
		}
		b.Run("open-files="+strconv.Itoa(files), func(b *testing.B) {
			buf := make([]byte, read)
			b.SetBytes(read)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				off := int64(i*7919*read) % (size - read)
				if ok, err := d.ReadRange(ctx, keys[i%n], off, buf); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
		_ = d.Close()
	}
}
