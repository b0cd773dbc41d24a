//go:build unix

package chunkcache_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/chunkcache"
)

// readRange reads n bytes at off of o through c and requires them right.
func readRange(t *testing.T, c *chunkcache.Disk, o object, off, n int) {
	t.Helper()
	buf := make([]byte, n)
	ok, err := c.ReadRange(context.Background(), o.key, int64(off), buf)
	require.NoError(t, err)
	require.True(t, ok, "hit of %s", o.key)
	require.Equal(t, o.data[off:off+n], buf)
}

// heldDeleted returns the files of dir that this process holds open
// although they were removed (Linux: /proc/self/fd).
func heldDeleted(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	var held []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir) && strings.HasSuffix(target, " (deleted)") {
			held = append(held, target)
		}
	}
	return held
}

// TestDiskRangeReadsOpenOnce: range reads of an object open its file once
// while it stays cached and among the held files; beyond the bound the least
// recently read are closed; a negative bound opens per read.
func TestDiskRangeReadsOpenOnce(t *testing.T) {
	ctx := context.Background()
	objs := chunks(3, 1000)
	for _, tc := range []struct {
		name      string
		openFiles int
		opens     int64 // after 10 rounds over the three objects
		held      int
	}{
		{"Default", 0, 3, 3},
		{"Bound2", 2, 30, 2}, // read in turn, each was closed before its next read
		{"None", -1, 30, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := openDisk(t, t.TempDir(), 1<<20, &chunkcache.Options{OpenFiles: tc.openFiles})
			for _, o := range objs {
				require.NoError(t, d.Put(ctx, o.key, o.data))
			}
			for i := range 10 {
				for _, o := range objs {
					readRange(t, d, o, 10*i, 100)
				}
			}
			require.Equal(t, tc.opens, chunkcache.OpenedFiles(d))
			require.Equal(t, tc.held, chunkcache.HeldFiles(d))
			require.Equal(t, int64(30), d.Stats().Hits)
			require.NoError(t, d.Close())
			require.Zero(t, chunkcache.HeldFiles(d), "Close closes them")
		})
	}
}

// TestDiskEvictionClosesHeldFile: a handle that evicts an object it holds
// open closes the file, so its disk space is freed.
func TestDiskEvictionClosesHeldFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := openDisk(t, dir, 2000, exact)
	o := chunk(1, 1000)
	require.NoError(t, d.Put(ctx, o.key, o.data))
	readRange(t, d, o, 0, 10)
	require.Equal(t, 1, chunkcache.HeldFiles(d))
	for i := range 2 {
		n := chunk(uint64(10+i), 1000)
		require.NoError(t, d.Put(ctx, n.key, n.data))
	}
	require.NoFileExists(t, objectPath(dir, o.key), "evicted")
	require.Zero(t, chunkcache.HeldFiles(d))
	require.Empty(t, heldDeleted(t, dir))
}

// TestDiskRangeReadAfterOtherEvicts: a file held by one handle that another
// evicts reads its unchanged bytes until the holder's next recency mark
// (each hit with a negative TouchInterval), which finds the path gone: a
// miss, and the file closed. A Put of the object again is read from the
// new file.
func TestDiskRangeReadAfterOtherEvicts(t *testing.T) {
	ctx := context.Background()
	hour := &chunkcache.Options{TouchInterval: 1 << 62}
	for _, tc := range []struct {
		name string
		opts *chunkcache.Options
	}{{"Exact", exact}, {"Throttled", hour}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a := openDisk(t, dir, 2000, tc.opts)
			b := openDisk(t, dir, 2000, exact)
			o := chunk(1, 1000)
			require.NoError(t, a.Put(ctx, o.key, o.data))
			readRange(t, a, o, 0, 10)
			require.NoError(t, b.Put(ctx, chunk(10, 1000).key, chunk(10, 1000).data))
			require.NoError(t, b.Put(ctx, chunk(11, 1000).key, chunk(11, 1000).data))
			require.NoFileExists(t, objectPath(dir, o.key), "evicted by b")

			buf := make([]byte, 10)
			ok, err := a.ReadRange(ctx, o.key, 500, buf)
			require.NoError(t, err)
			if tc.opts == exact {
				require.False(t, ok, "the mark finds the path gone")
				require.Empty(t, heldDeleted(t, dir))
			} else {
				require.True(t, ok, "held, not yet checked")
				require.Equal(t, o.data[500:510], buf, "the evicted object's bytes")
				require.Len(t, heldDeleted(t, dir), 1)
				require.NoError(t, a.Close())
				require.Empty(t, heldDeleted(t, dir), "Close closes it")
				return
			}
			require.NoError(t, b.Put(ctx, o.key, o.data))
			readRange(t, a, o, 900, 100)
		})
	}
}

// TestDiskConcurrentRangeReads: goroutines reading ranges of more objects
// than the handle holds open, while Puts evict, get right bytes or misses
// (run with -race).
func TestDiskConcurrentRangeReads(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := openDisk(t, dir, 12*1000, &chunkcache.Options{OpenFiles: 4})
	objs := chunks(16, 1000)
	for _, o := range objs[:12] {
		require.NoError(t, d.Put(ctx, o.key, o.data))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 100)
			for i := range 400 {
				o := objs[(g*7+i*5)%len(objs)]
				if g == 0 && i%10 == 0 {
					if err := d.Put(ctx, o.key, o.data); err != nil {
						errs <- err
						return
					}
				}
				off := (i * 37) % 900
				ok, err := d.ReadRange(ctx, o.key, int64(off), buf)
				if err != nil {
					errs <- err
					return
				}
				if ok && string(buf) != string(o.data[off:off+100]) {
					errs <- fmt.Errorf("range %d of %s: wrong bytes", off, o.key)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.LessOrEqual(t, chunkcache.HeldFiles(d), 4)
	require.NoError(t, d.Close())
	require.Empty(t, heldDeleted(t, dir), "no evicted file left open")
}
