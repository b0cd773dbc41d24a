package chunkcache_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/chunkcache/chunkcachetest"
)

func TestMemoryConformance(t *testing.T) {
	chunkcachetest.Run(t, func(t *testing.T, maxBytes int64) chunkcache.Cache {
		return chunkcache.NewMemory(maxBytes)
	})
}

func TestMemorySize(t *testing.T) {
	ctx := context.Background()
	m := chunkcache.NewMemory(10)
	require.NoError(t, m.Put(ctx, "a", []byte("12345")))
	require.NoError(t, m.Put(ctx, "b", []byte("1234")))
	require.Equal(t, int64(9), m.Size())
	require.NoError(t, m.Put(ctx, "c", []byte("12")))
	require.Equal(t, int64(6), m.Size(), "a went")
}

func TestMemoryZeroBudgetHoldsNothing(t *testing.T) {
	ctx := context.Background()
	m := chunkcache.NewMemory(0)
	require.ErrorIs(t, m.Put(ctx, "a", nil), chunkcache.ErrCacheWrite)
	_, ok, err := m.Get(ctx, "a")
	require.NoError(t, err)
	require.False(t, ok)
}
