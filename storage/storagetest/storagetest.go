// Package storagetest is the conformance suite for storage.Store: every
// implementation, the fault-injecting one included, passes Run.
package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/storage"
)

// Run checks that the stores made by open behave as the storage.Store
// contract says. open is called once per subtest and must return an empty
// store, not shared with other subtests; Run closes it. Subtests do not
// run in parallel with each other (open may use t.Setenv).
func Run(t *testing.T, open func(t *testing.T) storage.Store) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, storage.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"Empty", testEmpty},
		{"Large", testLarge},
		{"ReadRange", testReadRange},
		{"Overwrite", testOverwrite},
		{"PutIfAbsent", testPutIfAbsent},
		{"PutIfAbsentConcurrent", testPutIfAbsentConcurrent},
		{"List", testList},
		{"Stat", testStat},
		{"Delete", testDelete},
		{"NotFound", testNotFound},
		{"InvalidKeys", testInvalidKeys},
		{"URL", testURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := open(t)
			t.Cleanup(func() { require.NoError(t, st.Close()) })
			tc.fn(t, st)
		})
	}
}

func testRoundTrip(t *testing.T, st storage.Store) {
	ctx := context.Background()
	for i, key := range []string{"a", "dir/b.bin", "deep/er/still/c", "with space/é ñ#%?=&+.txt"} {
		data := testseed.Bytes(uint64(i), 1000+i)
		require.NoError(t, st.Put(ctx, key, data), "put %q", key)
		got, err := st.Get(ctx, key)
		require.NoError(t, err, "get %q", key)
		require.Equal(t, data, got, "get %q", key)
	}
	// The store keeps no reference to the slice it was given.
	data := []byte("original")
	require.NoError(t, st.Put(ctx, "owned", data))
	copy(data, "mutated!")
	got, err := st.Get(ctx, "owned")
	require.NoError(t, err)
	require.Equal(t, "original", string(got))
}

func testEmpty(t *testing.T, st storage.Store) {
	ctx := context.Background()
	require.NoError(t, st.Put(ctx, "empty", nil))
	got, err := st.Get(ctx, "empty")
	require.NoError(t, err)
	require.Empty(t, got)
	a, err := st.Stat(ctx, "empty")
	require.NoError(t, err)
	require.Equal(t, int64(0), a.Size)
	require.NoError(t, st.ReadRange(ctx, "empty", 0, nil))
	require.NoError(t, st.PutIfAbsent(ctx, "empty2", []byte{}))
	err = st.PutIfAbsent(ctx, "empty2", []byte{})
	require.ErrorIs(t, err, storage.ErrExists)
}

func testLarge(t *testing.T, st storage.Store) {
	ctx := context.Background()
	data := testseed.Bytes(7, 9<<20+123)
	require.NoError(t, st.Put(ctx, "large/object", data))
	got, err := st.Get(ctx, "large/object")
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, got), "large object differs after round trip")

	dst := make([]byte, 1<<20)
	off := int64(8<<20 + 5)
	require.NoError(t, st.ReadRange(ctx, "large/object", off, dst))
	require.True(t, bytes.Equal(data[off:off+int64(len(dst))], dst), "large object range differs")

	other := testseed.Bytes(8, 9<<20)
	err = st.PutIfAbsent(ctx, "large/object", other)
	require.ErrorIs(t, err, storage.ErrExists)
	require.NoError(t, st.PutIfAbsent(ctx, "large/other", other))
	got, err = st.Get(ctx, "large/object")
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, got), "large object changed by a refused PutIfAbsent")
	got, err = st.Get(ctx, "large/other")
	require.NoError(t, err)
	require.True(t, bytes.Equal(other, got), "large PutIfAbsent object differs")
}

func testReadRange(t *testing.T, st storage.Store) {
	ctx := context.Background()
	data := testseed.Bytes(3, 4096)
	require.NoError(t, st.Put(ctx, "r", data))
	type span struct {
		name string
		off  int64
		n    int
	}
	for _, tc := range []span{
		{"start", 0, 100},
		{"middle", 1000, 1000},
		{"end", 4000, 96},
		{"whole", 0, 4096},
		{"one byte at end", 4095, 1},
		{"empty at end", 4096, 0},
		{"empty in middle", 17, 0},
	} {
		dst := make([]byte, tc.n)
		require.NoError(t, st.ReadRange(ctx, "r", tc.off, dst), tc.name)
		require.Equal(t, data[tc.off:tc.off+int64(tc.n)], dst, tc.name)
	}
	for _, tc := range []span{
		{"straddling the end", 4000, 200},
		{"starting at the end", 4096, 1},
		{"starting past the end", 5000, 10},
		{"empty past the end", 5000, 0},
	} {
		err := st.ReadRange(ctx, "r", tc.off, make([]byte, tc.n))
		require.ErrorIs(t, err, io.ErrUnexpectedEOF, tc.name)
		require.NotErrorIs(t, err, storage.ErrTransient, tc.name)
	}
	err := st.ReadRange(ctx, "missing", 0, make([]byte, 10))
	require.ErrorIs(t, err, storage.ErrNotFound)
}

func testOverwrite(t *testing.T, st storage.Store) {
	ctx := context.Background()
	require.NoError(t, st.Put(ctx, "k", []byte("first version, longer")))
	require.NoError(t, st.Put(ctx, "k", []byte("second")))
	got, err := st.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "second", string(got))
	a, err := st.Stat(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, int64(len("second")), a.Size)
}

func testPutIfAbsent(t *testing.T, st storage.Store) {
	ctx := context.Background()
	require.NoError(t, st.PutIfAbsent(ctx, "once/key", []byte("winner")))
	err := st.PutIfAbsent(ctx, "once/key", []byte("loser"))
	require.ErrorIs(t, err, storage.ErrExists)
	require.NotErrorIs(t, err, storage.ErrTransient)
	require.Contains(t, err.Error(), "once/key", "the error names the key")
	got, err := st.Get(ctx, "once/key")
	require.NoError(t, err)
	require.Equal(t, "winner", string(got))

	// A key written by Put is present too.
	require.NoError(t, st.Put(ctx, "put/key", []byte("put")))
	require.ErrorIs(t, st.PutIfAbsent(ctx, "put/key", []byte("x")), storage.ErrExists)

	// After Delete the key is absent again.
	require.NoError(t, st.Delete(ctx, "once/key"))
	require.NoError(t, st.PutIfAbsent(ctx, "once/key", []byte("again")))
	got, err = st.Get(ctx, "once/key")
	require.NoError(t, err)
	require.Equal(t, "again", string(got))
}

func testPutIfAbsentConcurrent(t *testing.T, st storage.Store) {
	ctx := context.Background()
	const writers, rounds = 8, 3
	for round := range rounds {
		key := fmt.Sprintf("race/%d", round)
		var wg sync.WaitGroup
		errs := make([]error, writers)
		start := make(chan struct{})
		for w := range writers {
			wg.Go(func() {
				<-start
				errs[w] = st.PutIfAbsent(ctx, key, []byte(fmt.Sprintf("writer %d", w)))
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for w, err := range errs {
			if err == nil {
				require.Equal(t, -1, winner, "round %d: writers %d and %d both won", round, winner, w)
				winner = w
				continue
			}
			require.ErrorIs(t, err, storage.ErrExists, "round %d writer %d", round, w)
		}
		require.NotEqual(t, -1, winner, "round %d: no writer won", round)
		got, err := st.Get(ctx, key)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("writer %d", winner), string(got), "round %d", round)
	}
}

func listKeys(t *testing.T, st storage.Store, prefix string) []string {
	t.Helper()
	var keys []string
	require.NoError(t, st.List(context.Background(), prefix, func(a storage.Attrs) error {
		keys = append(keys, a.Key)
		return nil
	}))
	return keys
}

func testList(t *testing.T, st storage.Store) {
	ctx := context.Background()
	require.Empty(t, listKeys(t, st, ""), "a new store is empty")
	// Keys a file system can hold too: not both "a" and "a/b". They check
	// that order is by bytes ('.' < '/' < '0'), not by walk order.
	keys := []string{
		"a.b", "a/b/c", "a/b/d/e", "a/c", "ab", "b/0", "b0/x", "b-",
		"chunks/00/aa.chk", "chunks/00/ab.chk", "chunks/01/aa.chk", "chunks/0a", "z",
	}
	for i, k := range slices.Backward(keys) {
		require.NoError(t, st.Put(ctx, k, testseed.Bytes(uint64(i), i+1)))
	}
	want := slices.Sorted(slices.Values(keys))
	require.Equal(t, want, listKeys(t, st, ""), "List returns every key in order")

	for _, prefix := range []string{"a", "a/", "a/b", "a/b/", "b", "chunks/", "chunks/0", "chunks/00/", "chunks/00/a", "nothing", "nothing/"} {
		var wantP []string
		for _, k := range want {
			if strings.HasPrefix(k, prefix) {
				wantP = append(wantP, k)
			}
		}
		require.Equal(t, wantP, listKeys(t, st, prefix), "prefix %q", prefix)
	}

	// Sizes are reported.
	require.NoError(t, st.List(ctx, "chunks/", func(a storage.Attrs) error {
		got, err := st.Get(ctx, a.Key)
		require.NoError(t, err)
		require.Equal(t, int64(len(got)), a.Size, a.Key)
		return nil
	}))

	// An error from fn stops the listing and is returned.
	stop := errors.New("stop here")
	n := 0
	err := st.List(ctx, "", func(storage.Attrs) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, 3, n)
}

func testStat(t *testing.T, st storage.Store) {
	ctx := context.Background()
	require.NoError(t, st.Put(ctx, "s/obj", testseed.Bytes(1, 321)))
	a, err := st.Stat(ctx, "s/obj")
	require.NoError(t, err)
	require.Equal(t, "s/obj", a.Key)
	require.Equal(t, int64(321), a.Size)
	require.False(t, a.ModTime.IsZero(), "ModTime is set")
	_, err = st.Stat(ctx, "s/missing")
	require.ErrorIs(t, err, storage.ErrNotFound)
	// A "directory" is not an object.
	_, err = st.Stat(ctx, "s")
	require.ErrorIs(t, err, storage.ErrNotFound)
}

func testDelete(t *testing.T, st storage.Store) {
	ctx := context.Background()
	require.NoError(t, st.Put(ctx, "d/x", []byte("x")))
	require.NoError(t, st.Put(ctx, "d/y", []byte("y")))
	require.NoError(t, st.Delete(ctx, "d/x"))
	_, err := st.Get(ctx, "d/x")
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.Equal(t, []string{"d/y"}, listKeys(t, st, ""))
	require.NoError(t, st.Delete(ctx, "d/x"), "deleting a deleted key")
	require.NoError(t, st.Delete(ctx, "never/was"), "deleting a missing key")
	require.NoError(t, st.Delete(ctx, "d"), "deleting a \"directory\"")
	got, err := st.Get(ctx, "d/y")
	require.NoError(t, err)
	require.Equal(t, "y", string(got))
}

func testNotFound(t *testing.T, st storage.Store) {
	ctx := context.Background()
	_, err := st.Get(ctx, "no/such/key")
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.NotErrorIs(t, err, storage.ErrTransient)
	require.Contains(t, err.Error(), `"no/such/key"`, "the error names the key")
	var se *storage.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, "no/such/key", se.Key)
	_, err = st.Stat(ctx, "no/such/key")
	require.ErrorIs(t, err, storage.ErrNotFound)
	err = st.ReadRange(ctx, "no/such/key", 0, make([]byte, 1))
	require.ErrorIs(t, err, storage.ErrNotFound)
}

func testInvalidKeys(t *testing.T, st storage.Store) {
	ctx := context.Background()
	require.NoError(t, st.Put(ctx, "ok", []byte("ok")))
	for _, key := range []string{
		"", "/abs", "/", "a//b", "a/", "../escape", "a/../../escape", "a/./b", ".", "..",
		`a\b`, `..\escape`, "nul\x00byte", "ctl\nline", "bad\xffutf8", ".loch-tmp-x", "d/.loch-tmp-y",
		strings.Repeat("k", 1025),
	} {
		_, err := st.Get(ctx, key)
		require.ErrorIs(t, err, storage.ErrInvalidKey, "get %q", key)
		require.ErrorIs(t, st.Put(ctx, key, []byte("x")), storage.ErrInvalidKey, "put %q", key)
		require.ErrorIs(t, st.PutIfAbsent(ctx, key, []byte("x")), storage.ErrInvalidKey, "put-if-absent %q", key)
		require.ErrorIs(t, st.Delete(ctx, key), storage.ErrInvalidKey, "delete %q", key)
		_, err = st.Stat(ctx, key)
		require.ErrorIs(t, err, storage.ErrInvalidKey, "stat %q", key)
		require.ErrorIs(t, st.ReadRange(ctx, key, 0, make([]byte, 1)), storage.ErrInvalidKey, "read %q", key)
	}
	for _, prefix := range []string{"/abs", "../", "a/../", "a//", `a\`} {
		err := st.List(ctx, prefix, func(storage.Attrs) error { return nil })
		require.ErrorIs(t, err, storage.ErrInvalidKey, "list %q", prefix)
	}
	require.Equal(t, []string{"ok"}, listKeys(t, st, ""), "nothing was written by invalid keys")
}

// secretEnv lists the environment variables that hold credentials; their
// values must never show in a store's URL.
var secretEnv = []string{
	"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AZURE_STORAGE_KEY",
	"AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGEBLOB_CONNECTIONSTRING", "AZURE_STORAGE_SAS_TOKEN",
	"AZURE_CLIENT_SECRET", "GOOGLE_APPLICATION_CREDENTIALS",
}

func testURL(t *testing.T, st storage.Store) {
	s := st.URL()
	require.NotEmpty(t, s)
	u, err := url.Parse(s)
	require.NoError(t, err, "URL() parses")
	require.Nil(t, u.User, "URL() carries no user info")
	for _, name := range secretEnv {
		v := os.Getenv(name)
		if len(v) < 4 {
			continue
		}
		require.NotContains(t, s, v, "URL() shows $%s", name)
		for part := range strings.SplitSeq(v, ";") {
			if k, val, ok := strings.Cut(part, "="); ok && len(val) >= 8 && (strings.Contains(k, "Key") || strings.Contains(k, "Signature")) {
				require.NotContains(t, s, val, "URL() shows the %s of $%s", k, name)
			}
		}
	}
	for name := range u.Query() {
		lower := strings.ToLower(name)
		for _, bad := range []string{"secret", "password", "token", "key", "sig", "credential"} {
			require.NotContains(t, lower, bad, "URL() has a query parameter %q", name)
		}
	}
}
