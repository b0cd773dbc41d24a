package storage_test

import (
	"context"
	"fmt"
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
