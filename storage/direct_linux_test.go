//go:build linux

package storage

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/lochdata/loch/internal/testseed"
)

// directSupported reports whether the file system of dir takes O_DIRECT.
func directSupported(t *testing.T, dir string) bool {
	fd, err := unix.Open(filepath.Join(dir, "probe"), unix.O_CREAT|unix.O_WRONLY|unix.O_DIRECT, 0o644)
	if err != nil {
		t.Logf("O_DIRECT refused in %s (%v): the objects must come out whole all the same", dir, err)
		return false
	}
	unix.Close(fd)
	require.NoError(t, os.Remove(filepath.Join(dir, "probe")))
	return true
}

// openDirectTest opens a local store in a new directory, closed at the
// test's end, and says whether its file system takes O_DIRECT.
func openDirectTest(t *testing.T) (string, Store, bool) {
	dir := t.TempDir()
	direct := directSupported(t, dir)
	s, err := Open(context.Background(), dir, WithDirectWrites(true))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return dir, s, direct
}

// TestLocalDirectWritesAreByteIdentical: objects written past the page
// cache (directMin bytes and more), from aligned and unaligned memory, of
// lengths around the block and piece sizes, read back byte for byte, and
// their whole blocks were written directly where the file system allows.
func TestLocalDirectWritesAreByteIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 0))
	_, s, direct := openDirectTest(t)
	ctx := context.Background()
	sizes := []int{0, 1, directMin - 1, directMin, directMin + 1, directMin + directAlign - 1,
		3*directPiece + 5, 8<<20 + 123, directMin + rng.IntN(4*directPiece)}
	for _, size := range sizes {
		for _, shift := range []int{0, 1, 4095} {
			backing := make([]byte, size+2*directAlign)
			start := int(-uintptr(unsafe.Pointer(unsafe.SliceData(backing)))&(directAlign-1)) + shift
			data := backing[start : start+size]
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			key := "d/obj"
			before := directBytes.Load()
			require.NoError(t, s.Put(ctx, key, data), "size %d, shift %d", size, shift)
			got, err := s.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, len(data), len(got), "size %d, shift %d", size, shift)
			require.True(t, string(data) == string(got), "size %d, shift %d: the bytes differ", size, shift)
			want := 0
			if direct && size >= directMin {
				want = size &^ (directAlign - 1)
			}
			require.Equal(t, int64(want), directBytes.Load()-before, "size %d, shift %d: bytes written directly", size, shift)
		}
	}
}

// TestLocalDirectWriteErrorNamesTheObject: a direct write that fails (here
// at the file size limit) fails the Put with the error, naming the
// object's key, and leaves neither the object nor a temporary file.
func TestLocalDirectWriteErrorNamesTheObject(t *testing.T) {
	dir, s, direct := openDirectTest(t)
	ctx := context.Background()
	var old syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old))
	lim := old
	lim.Cur = directPiece
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim))
	before := directBytes.Load()
	err := s.Put(ctx, "big/obj", make([]byte, 3*directPiece))
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old))
	require.ErrorIs(t, err, syscall.EFBIG)
	require.ErrorContains(t, err, "big/obj")
	if direct {
		require.Equal(t, int64(directPiece), directBytes.Load()-before, "the first piece went directly, the second failed")
	}
	_, err = s.Get(ctx, "big/obj")
	require.ErrorIs(t, err, ErrNotFound)
	entries, err := os.ReadDir(filepath.Join(dir, "big"))
	require.NoError(t, err)
	require.Empty(t, entries, "no temporary file is left")
}

// TestWriteDataToAReadOnlyFile: writeData's errors are the write's, not
// swallowed by the fallback to the page cache.
func TestWriteDataToAReadOnlyFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, nil, 0o644))
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	err = writeData(f, make([]byte, 2*directMin), true)
	require.Error(t, err)
	require.True(t, errors.Is(err, syscall.EBADF), "%v", err)
	require.ErrorContains(t, err, p)
}

// TestLocalDirectWritesChosen: a store writes past the page cache only
// when opened WithDirectWrites, and $LOCH_STORAGE_DIRECT_WRITES (0 or 1)
// overrides that either way.
func TestLocalDirectWritesChosen(t *testing.T) {
	if !directSupported(t, t.TempDir()) {
		t.Skip("the temporary directory's file system refuses O_DIRECT: nothing to choose")
	}
	cases := []struct {
		env    string
		asked  bool
		direct bool
	}{
		{"", false, false}, {"", true, true},
		{"0", true, false}, {"0", false, false},
		{"1", false, true}, {"1", true, true},
	}
	data := make([]byte, 3*directPiece)
	for i := range data {
		data[i] = byte(i * 7)
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Setenv("LOCH_STORAGE_DIRECT_WRITES", c.env)
		s, err := Open(ctx, t.TempDir(), WithDirectWrites(c.asked))
		require.NoError(t, err)
		before := directBytes.Load()
		require.NoError(t, s.Put(ctx, "k", data))
		require.Equal(t, c.direct, directBytes.Load() > before, "env %q, asked %v", c.env, c.asked)
		got, err := s.Get(ctx, "k")
		require.NoError(t, err)
		require.True(t, string(data) == string(got), "env %q, asked %v: bytes differ", c.env, c.asked)
		require.NoError(t, s.Close())
	}
}
