package storage_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/storage"
	"github.com/lochdata/loch/storage/storagetest"
)

func TestMain(m *testing.M) {
	defer testserver.StopAll()
	m.Run()
}

func open(t *testing.T, url string) storage.Store {
	t.Helper()
	st, err := storage.Open(context.Background(), url)
	require.NoError(t, err)
	return st
}

func TestLocal(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		return open(t, t.TempDir()+"/store")
	})
}

func TestLocalFileURL(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		return open(t, "file://"+t.TempDir())
	})
}

var memCount atomic.Int64

func TestMem(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		return open(t, fmt.Sprintf("mem://conformance-%d/some/prefix", memCount.Add(1)))
	})
}

func TestFaultyNoFaults(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		return storage.NewFaulty(open(t, t.TempDir()), storage.FaultConfig{Seed: 1})
	})
}

func TestFaultyWithRetries(t *testing.T) {
	var seed atomic.Int64
	storagetest.Run(t, func(t *testing.T) storage.Store {
		inner, err := storage.Open(context.Background(), fmt.Sprintf("mem://faulty-%d", memCount.Add(1)), storage.WithRetryPolicy(storage.RetryPolicy{MaxAttempts: 1}))
		require.NoError(t, err)
		f := storage.NewFaulty(inner, storage.FaultConfig{ReadErrorRate: 0.1, WriteErrorRate: 0.1, Seed: seed.Add(1)})
		return storage.NewRetryStore(f, storage.RetryPolicy{MaxAttempts: 10, BaseDelay: 1, MaxDelay: 1})
	})
}

func TestS3(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		return open(t, testserver.MinIO(t).URL)
	})
}

func TestGCS(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		return open(t, testserver.GCS(t).URL)
	})
}

func TestAzure(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		return open(t, testserver.Azurite(t).URL)
	})
}

// sub returns a view of st below a two-segment prefix, with an object
// outside it that the view must never show.
func sub(t *testing.T, st storage.Store) storage.Store {
	t.Helper()
	require.NoError(t, st.Put(context.Background(), "tables/outside", []byte("not in the view")))
	v, err := storage.Sub(st, "tables/t-1/")
	require.NoError(t, err)
	t.Cleanup(func() {
		got, err := st.Get(context.Background(), "tables/outside")
		require.NoError(t, err, "the view never touches keys outside it")
		require.Equal(t, "not in the view", string(got))
		require.NoError(t, st.Close())
	})
	return v
}

func TestSubLocal(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store { return sub(t, open(t, t.TempDir()+"/store")) })
}

func TestSubMem(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		return sub(t, open(t, fmt.Sprintf("mem://sub-%d/p", memCount.Add(1))))
	})
}

func TestSubS3(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store { return sub(t, open(t, testserver.MinIO(t).URL)) })
}

func TestSubGCS(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store { return sub(t, open(t, testserver.GCS(t).URL)) })
}

func TestSubAzure(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store { return sub(t, open(t, testserver.Azurite(t).URL)) })
}

// TestSubURL checks that a view's URL opens the objects the view holds, and
// that a view's prefix is a key like any other.
func TestSubURL(t *testing.T) {
	ctx := context.Background()
	for _, root := range []string{t.TempDir() + "/root", "mem://sub-url/p?"} {
		root = strings.TrimSuffix(root, "?")
		st := open(t, root)
		v, err := storage.Sub(st, "tables/a")
		require.NoError(t, err)
		require.NoError(t, v.Put(ctx, "log/1", []byte("one")))
		again := open(t, v.URL())
		got, err := again.Get(ctx, "log/1")
		require.NoError(t, err, v.URL())
		require.Equal(t, "one", string(got))
		got, err = st.Get(ctx, "tables/a/log/1")
		require.NoError(t, err)
		require.Equal(t, "one", string(got))
		require.NoError(t, again.Close())
		for _, bad := range []string{"", "/", "../x", "a/../../x", "a//b", `a\b`, "a/.loch-tmp-1"} {
			_, err := storage.Sub(st, bad)
			require.ErrorIs(t, err, storage.ErrInvalidKey, "%q", bad)
		}
		require.NoError(t, st.Close())
	}
}
