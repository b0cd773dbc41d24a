//go:build unix

package chunkcache_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"

	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/chunkcache/chunkcachetest"
	"github.com/lochdata/loch/internal/testseed"
)

// exact marks every hit, so that recency in tests is exact.
var exact = &chunkcache.Options{TouchInterval: -1}

func openDisk(t *testing.T, dir string, maxBytes int64, opts *chunkcache.Options) *chunkcache.Disk {
	t.Helper()
	d, err := chunkcache.Open(dir, maxBytes, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

func TestDiskConformance(t *testing.T) {
	chunkcachetest.Run(t, func(t *testing.T, maxBytes int64) chunkcache.Cache {
		d, err := chunkcache.Open(t.TempDir(), maxBytes, exact)
		require.NoError(t, err)
		return d
	})
}

// object is a content-addressed object for tests.
type object struct {
	key  string
	data []byte
}

func chunk(seed uint64, n int) object {
	data := testseed.Bytes(seed, n)
	return object{chunkcachetest.ChunkKey(data), data}
}

// chunks returns n objects of size bytes, made by chunk from seeds 0 to n-1.
func chunks(n, size int) []object {
	objs := make([]object, n)
	for i := range objs {
		objs[i] = chunk(uint64(i), size)
	}
	return objs
}

func objectPath(dir, key string) string {
	return filepath.Join(dir, "objects", filepath.FromSlash(key))
}

// walkObjects returns the objects in dir by key, and requires each to be a
// complete object: its bytes hash to its name when its name is a hash.
func walkObjects(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	objs := map[string][]byte{}
	root := filepath.Join(dir, "objects")
	require.NoError(t, filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		require.True(t, e.Type().IsRegular(), "%s is not a regular file", p)
		rel, err := filepath.Rel(root, p)
		require.NoError(t, err)
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		key := filepath.ToSlash(rel)
		if strings.HasPrefix(key, "chunks/") {
			require.Equal(t, key, chunkcachetest.ChunkKey(data), "%s holds other bytes than its name says", p)
		}
		objs[key] = data
		return nil
	}))
	return objs
}

func totalLen(objs map[string][]byte) int64 {
	var n int64
	for _, b := range objs {
		n += int64(len(b))
	}
	return n
}

// recordedTotal reads the state file as the package documents it.
func recordedTotal(t *testing.T, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "state"))
	require.NoError(t, err)
	require.Len(t, b, 16)
	require.Equal(t, "LCC1", string(b[:4]))
	return int64(binary.LittleEndian.Uint64(b[8:]))
}

func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "tmp"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// age sets the modification time of key's file to ago before now.
func age(t *testing.T, dir, key string, ago time.Duration) {
	t.Helper()
	at := time.Now().Add(-ago)
	require.NoError(t, os.Chtimes(objectPath(dir, key), at, at))
}

func mtime(t *testing.T, dir, key string) time.Time {
	t.Helper()
	fi, err := os.Stat(objectPath(dir, key))
	require.NoError(t, err)
	return fi.ModTime()
}

func TestDiskLayout(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "made", "by", "open")
	d := openDisk(t, dir, 1<<20, nil)
	o := chunk(1, 5000)
	require.NoError(t, d.Put(ctx, o.key, o.data))
	got, err := os.ReadFile(objectPath(dir, o.key))
	require.NoError(t, err)
	require.Equal(t, o.data, got, "one file per key, at objects/<key>")
	require.Empty(t, tempFiles(t, dir))
	require.Equal(t, int64(5000), recordedTotal(t, dir))
	size, err := d.Size()
	require.NoError(t, err)
	require.Equal(t, int64(5000), size)
	require.Equal(t, dir, d.Dir())
}

func TestDiskOpenRefusesNonPositiveBudget(t *testing.T) {
	_, err := chunkcache.Open(t.TempDir(), 0, nil)
	require.ErrorContains(t, err, "budget of 0 bytes is not positive")
}

// TestDiskCorruptFileIsAMiss: a flipped byte, a truncated file and a file
// with bytes appended all read as misses, are removed and are counted; the
// cache never returns wrong bytes for a content-hash key.
func TestDiskCorruptFileIsAMiss(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		damage func(p string, data []byte) error
	}{
		{"FlippedByte", func(p string, data []byte) error {
			b := append([]byte{}, data...)
			b[len(b)/2] ^= 0x01
			return os.WriteFile(p, b, 0o644)
		}},
		{"Truncated", func(p string, data []byte) error { return os.Truncate(p, int64(len(data)-1)) }},
		{"Empty", func(p string, data []byte) error { return os.Truncate(p, 0) }},
		{"Appended", func(p string, data []byte) error { return os.WriteFile(p, append(append([]byte{}, data...), 0), 0o644) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := openDisk(t, dir, 1<<20, nil)
			o, other := chunk(1, 4096), chunk(2, 100)
			require.NoError(t, d.Put(ctx, o.key, o.data))
			require.NoError(t, d.Put(ctx, other.key, other.data))
			require.NoError(t, tc.damage(objectPath(dir, o.key), o.data))

			got, ok, err := d.Get(ctx, o.key)
			require.NoError(t, err)
			require.False(t, ok, "a corrupt object is a miss")
			require.Nil(t, got)
			require.NoFileExists(t, objectPath(dir, o.key), "and is removed")
			st := d.Stats()
			require.Equal(t, int64(1), st.Corrupt)
			require.Equal(t, int64(1), st.Misses)
			size, err := d.Size()
			require.NoError(t, err)
			require.Equal(t, int64(100), size, "its length left the total")

			// It can be cached again.
			require.NoError(t, d.Put(ctx, o.key, o.data))
			got, ok, err = d.Get(ctx, o.key)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, o.data, got)
		})
	}
}

// TestDiskUnverified: without a content hash in the key, or with NoVerify,
// Get returns what the file holds (the documented limit of verification).
func TestDiskUnverified(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := openDisk(t, dir, 1<<20, &chunkcache.Options{NoVerify: true})
	o := chunk(1, 64)
	require.NoError(t, d.Put(ctx, o.key, o.data))
	require.NoError(t, d.Put(ctx, "manifests/latest", []byte("abc")))
	require.NoError(t, os.WriteFile(objectPath(dir, o.key), []byte("bad"), 0o644))
	require.NoError(t, os.WriteFile(objectPath(dir, "manifests/latest"), []byte("xyz"), 0o644))
	got, ok, err := d.Get(ctx, o.key)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "bad", string(got))
	got, ok, err = d.Get(ctx, "manifests/latest")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "xyz", string(got))
	// NoVerify lets Put store bytes under a hash they do not have.
	require.NoError(t, d.Put(ctx, chunk(2, 8).key, []byte("not it")))
}

// TestDiskManySmallObjects overflows one scan's 1024 eviction candidates
// many times; the files on disk stay within budget and the recorded total
// matches them.
func TestDiskManySmallObjects(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const budget = 150 << 10
	d := openDisk(t, dir, budget, nil)
	var written int64
	for i := range 2500 { // about 1300 evictions, more than one scan's candidates
		o := chunk(uint64(i), 50+i%150)
		require.NoError(t, d.Put(ctx, o.key, o.data))
		written += int64(len(o.data))
	}
	objs := walkObjects(t, dir)
	total := totalLen(objs)
	require.LessOrEqual(t, total, int64(budget))
	require.Greater(t, total, int64(budget-200), "eviction stops as soon as the cache fits")
	require.Equal(t, total, recordedTotal(t, dir))
	st := d.Stats()
	require.Equal(t, written, st.WrittenBytes)
	require.Equal(t, total, st.WrittenBytes-st.EvictedBytes)
	require.Empty(t, tempFiles(t, dir))
}

// TestDiskShrinkBudget: reopening a full cache with a smaller budget evicts
// down to it at Open, over several scans, least recently used first.
func TestDiskShrinkBudget(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	big, err := chunkcache.Open(dir, 1<<20, exact)
	require.NoError(t, err)
	var objs []object
	for i := range 2200 {
		o := chunk(uint64(i), 100)
		objs = append(objs, o)
		require.NoError(t, big.Put(ctx, o.key, o.data))
	}
	require.NoError(t, big.Close())
	require.Equal(t, int64(220_000), recordedTotal(t, dir))

	small := openDisk(t, dir, 10_000, exact)
	require.Equal(t, int64(10_000), totalLen(walkObjects(t, dir)))
	require.Equal(t, int64(10_000), recordedTotal(t, dir))
	require.Equal(t, int64(2100), small.Stats().Evictions, "over two scans (1024 and 2048 candidates)")
	for _, kept := range objs[len(objs)-100:] {
		_, err := os.Stat(objectPath(dir, kept.key))
		require.NoError(t, err, "the most recent objects stay")
	}
	o := chunk(9999, 100)
	require.NoError(t, small.Put(ctx, o.key, o.data))
	require.Equal(t, int64(10_000), recordedTotal(t, dir))
	require.NoFileExists(t, objectPath(dir, objs[2100].key))
}

// TestDiskTwoHandles: two handles on one directory behave like two
// processes: each sees the other's objects and recency, and a handle's
// eviction candidates from an earlier scan do not evict what the other
// read since.
func TestDiskTwoHandles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := openDisk(t, dir, 4000, exact)
	b := openDisk(t, dir, 4000, exact)
	objs := chunks(7, 1000)
	for _, o := range objs[:4] {
		require.NoError(t, a.Put(ctx, o.key, o.data))
	}
	got, ok, err := b.Get(ctx, objs[0].key)
	require.NoError(t, err)
	require.True(t, ok, "b sees a's objects")
	require.Equal(t, objs[0].data, got)

	require.NoError(t, a.Put(ctx, objs[4].key, objs[4].data)) // a scans: 1 2 3 0 4, evicts 1
	require.NoFileExists(t, objectPath(dir, objs[1].key))
	_, ok, err = b.Get(ctx, objs[2].key) // now 3 0 4 2; a's candidates still say 2 3 0 4
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, a.Put(ctx, objs[5].key, objs[5].data)) // a skips 2 (used since), evicts 3
	require.FileExists(t, objectPath(dir, objs[2].key))
	require.NoFileExists(t, objectPath(dir, objs[3].key))

	require.NoError(t, b.Put(ctx, objs[2].key, objs[2].data), "b's Put of a cached key stores nothing")
	require.Zero(t, b.Stats().Puts)
	require.NoError(t, b.Put(ctx, objs[6].key, objs[6].data)) // b scans: 0 4 2 5 6, evicts 0
	require.NoFileExists(t, objectPath(dir, objs[0].key))
	require.Equal(t, int64(4000), recordedTotal(t, dir))
	require.Equal(t, int64(2), a.Stats().Evictions)
	require.Equal(t, int64(1), b.Stats().Evictions)
}

// TestDiskTouchThrottle: a hit renews its mark only when the mark is older
// than TouchInterval.
func TestDiskTouchThrottle(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := openDisk(t, dir, 1<<20, &chunkcache.Options{TouchInterval: time.Hour})
	o := chunk(1, 10)
	require.NoError(t, d.Put(ctx, o.key, o.data))

	age(t, dir, o.key, 2*time.Hour)
	before := time.Now()
	_, ok, err := d.Get(ctx, o.key)
	require.NoError(t, err)
	require.True(t, ok)
	require.False(t, mtime(t, dir, o.key).Before(before), "a mark two hours old is renewed")

	age(t, dir, o.key, 30*time.Minute)
	old := mtime(t, dir, o.key)
	_, ok, err = d.Get(ctx, o.key)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, mtime(t, dir, o.key).Equal(old), "a mark 30 minutes old is kept")
}

// TestDiskLRUDefaultOptions: with the default throttle, objects whose marks
// are older than a second are ordered by use.
func TestDiskLRUDefaultOptions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := openDisk(t, dir, 4000, nil)
	objs := chunks(5, 1000)
	for i, o := range objs[:4] {
		require.NoError(t, d.Put(ctx, o.key, o.data))
		age(t, dir, o.key, time.Duration(4-i)*time.Hour) // 0 is the oldest
	}
	_, ok, err := d.Get(ctx, objs[0].key)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, d.Put(ctx, objs[4].key, objs[4].data))
	require.FileExists(t, objectPath(dir, objs[0].key), "read, so kept")
	require.NoFileExists(t, objectPath(dir, objs[1].key), "the least recently used goes")
}

// TestDiskStaleTemps: an Open that finds no other user removes every
// temporary file; with another user it removes only the old ones.
func TestDiskStaleTemps(t *testing.T) {
	dir := t.TempDir()
	first, err := chunkcache.Open(dir, 1<<20, nil)
	require.NoError(t, err)
	require.NoError(t, first.Close())
	tmp := filepath.Join(dir, "tmp")
	writeTemp := func(name string, ago time.Duration) {
		p := filepath.Join(tmp, name)
		require.NoError(t, os.WriteFile(p, []byte("partial"), 0o644))
		at := time.Now().Add(-ago)
		require.NoError(t, os.Chtimes(p, at, at))
	}

	writeTemp("put-killed-1", 0)
	writeTemp("put-killed-2", time.Hour)
	writeTemp("not-ours", time.Hour)
	openDisk(t, dir, 1<<20, nil) // stays open until the test ends
	require.Equal(t, []string{"not-ours"}, tempFiles(t, dir), "the sole user removes every temporary file")

	writeTemp("put-old", time.Hour)
	writeTemp("put-fresh", 0)
	openDisk(t, dir, 1<<20, &chunkcache.Options{StaleTempAge: 30 * time.Minute})
	require.Equal(t, []string{"not-ours", "put-fresh"}, tempFiles(t, dir), "beside another user only old ones go")
}

// TestDiskStateRepair: a lost or damaged state file is recounted from the
// objects.
func TestDiskStateRepair(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		damage func(p string) error
	}{
		{"Removed", os.Remove},
		{"Truncated", func(p string) error { return os.Truncate(p, 5) }},
		{"BadMagic", func(p string) error { return os.WriteFile(p, make([]byte, 16), 0o644) }},
		{"Negative", func(p string) error {
			return os.WriteFile(p, []byte("LCC1\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff"), 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a := openDisk(t, dir, 1<<20, nil)
			for i := range 5 {
				o := chunk(uint64(i), 100*(i+1))
				require.NoError(t, a.Put(ctx, o.key, o.data))
			}
			require.NoError(t, tc.damage(filepath.Join(dir, "state")))
			// Another handle opened after repairs what it reads, and the
			// first one follows a replaced file.
			b := openDisk(t, dir, 1<<20, nil)
			size, err := b.Size()
			require.NoError(t, err)
			require.Equal(t, int64(1500), size)
			require.Equal(t, int64(1500), recordedTotal(t, dir))
			o := chunk(99, 500)
			require.NoError(t, a.Put(ctx, o.key, o.data))
			require.Equal(t, int64(2000), recordedTotal(t, dir))
			size, err = b.Size()
			require.NoError(t, err)
			require.Equal(t, int64(2000), size)
		})
	}
}

// TestDiskWriteErrors: a Put that cannot write returns ErrCacheWrite and
// leaves the cache as it was.
func TestDiskWriteErrors(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, dir string, d *chunkcache.Disk, before map[string][]byte) {
		t.Helper()
		require.Equal(t, before, walkObjects(t, dir))
		require.Equal(t, totalLen(before), recordedTotal(t, dir))
		size, err := d.Size()
		require.NoError(t, err)
		require.Equal(t, totalLen(before), size)
	}

	t.Run("UnwritableTempDir", func(t *testing.T) {
		dir := t.TempDir()
		d := openDisk(t, dir, 1<<20, nil)
		o := chunk(1, 100)
		require.NoError(t, d.Put(ctx, o.key, o.data))
		before := walkObjects(t, dir)
		// A file where tmp/ should be: creating a temporary file fails
		// (ENOTDIR), as it would on a full or read-only disk, even as root.
		require.NoError(t, os.RemoveAll(filepath.Join(dir, "tmp")))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tmp"), nil, 0o644))
		n := chunk(2, 100)
		err := d.Put(ctx, n.key, n.data)
		require.ErrorIs(t, err, chunkcache.ErrCacheWrite)
		require.ErrorContains(t, err, "write temporary file")
		check(t, dir, d, before)
		_, ok, err := d.Get(ctx, o.key)
		require.NoError(t, err)
		require.True(t, ok, "reads still work")
	})

	t.Run("KeyConflicts", func(t *testing.T) {
		dir := t.TempDir()
		d := openDisk(t, dir, 1<<20, nil)
		require.NoError(t, d.Put(ctx, "a", []byte("file")))
		require.NoError(t, d.Put(ctx, "b/c", []byte("under b")))
		before := walkObjects(t, dir)
		err := d.Put(ctx, "a/x", []byte("under a file"))
		require.ErrorIs(t, err, chunkcache.ErrCacheWrite)
		err = d.Put(ctx, "b", []byte("where a directory is"))
		require.ErrorIs(t, err, chunkcache.ErrCacheWrite)
		check(t, dir, d, before)
		require.Empty(t, tempFiles(t, dir))
	})
}

// TestDiskFIFODoesNotBlock: something other than a regular file at a key's
// path (never made by this package) is a miss, and a FIFO does not block.
func TestDiskFIFODoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	d := openDisk(t, dir, 1<<20, nil)
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "objects", "fifo"), 0o644))
	_, ok, err := d.Get(context.Background(), "fifo")
	require.NoError(t, err)
	require.False(t, ok)
}

// TestDiskHashIsXXH3: the content hash is the XXH3-128 of the bytes, high
// 64 bits first, as docs/format.md says.
func TestDiskHashIsXXH3(t *testing.T) {
	data := []byte("loch")
	h := xxh3.Hash128(data)
	var want [16]byte
	binary.BigEndian.PutUint64(want[:8], h.Hi)
	binary.BigEndian.PutUint64(want[8:], h.Lo)
	require.True(t, strings.HasSuffix(chunkcachetest.ChunkKey(data), "/"+hex.EncodeToString(want[:])))
}

// TestDiskEvictionDoesNotDisturbReaders: a reader that has an object's file
// open when another handle evicts it still reads the whole object.
func TestDiskEvictionDoesNotDisturbReaders(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := openDisk(t, dir, 2000, exact)
	b := openDisk(t, dir, 2000, exact)
	o := chunk(1, 1000)
	require.NoError(t, a.Put(ctx, o.key, o.data))
	f, err := os.Open(objectPath(dir, o.key))
	require.NoError(t, err)
	defer f.Close()
	first := make([]byte, 500)
	_, err = f.Read(first)
	require.NoError(t, err)

	for i := range 2 {
		n := chunk(uint64(10+i), 1000)
		require.NoError(t, b.Put(ctx, n.key, n.data))
	}
	require.NoFileExists(t, objectPath(dir, o.key), "evicted")
	rest, err := io.ReadAll(f)
	require.NoError(t, err)
	require.Equal(t, o.data, append(first, rest...))
}

// TestDiskRangeReadDropsShortFile: a content-hash object whose file is
// shorter than a range read asks for was cut short: it is dropped, so that
// the caller's Put of the object stores it again.
func TestDiskRangeReadDropsShortFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c, err := chunkcache.Open(dir, 1<<20, nil)
	require.NoError(t, err)
	defer c.Close()
	data := testseed.Bytes(1, 1000)
	key := chunkcachetest.ChunkKey(data)
	require.NoError(t, c.Put(ctx, key, data))
	p := filepath.Join(dir, "objects", filepath.FromSlash(key))
	require.NoError(t, os.Truncate(p, 600))

	buf := make([]byte, 100)
	ok, err := c.ReadRange(ctx, key, 400, buf)
	require.NoError(t, err)
	require.True(t, ok, "a range within what is left is read (the caller verifies it)")
	require.Equal(t, data[400:500], buf)
	ok, err = c.ReadRange(ctx, key, 900, buf)
	require.NoError(t, err)
	require.False(t, ok)
	require.NoFileExists(t, p)
	require.Equal(t, int64(1), c.Stats().Corrupt)
	require.NoError(t, c.Put(ctx, key, data))
	ok, err = c.ReadRange(ctx, key, 900, buf)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, data[900:], buf)
}
