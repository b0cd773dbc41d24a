package storage_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/storage"
)

// TestMapLocalObjects: a local directory's objects map to their bytes,
// through the store Open returns and a Sub view of it, and stay readable
// after the object is replaced or deleted (a mapping holds the file it
// mapped); a missing object is ErrNotFound naming the key; other stores,
// and a fault-injecting wrapper whose faults every read must meet, do not
// map.
func TestMapLocalObjects(t *testing.T) {
	ctx := context.Background()
	s, err := storage.Open(ctx, t.TempDir())
	require.NoError(t, err)
	require.True(t, storage.Mappable(s))
	want := []byte("the bytes of one immutable object")
	require.NoError(t, s.Put(ctx, "a/k", want))
	require.NoError(t, s.Put(ctx, "a/empty", nil))

	m, ok, err := storage.Map(ctx, s, "a/k")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, want, m.Data)
	m.Drop(0, int64(len(m.Data)))
	require.Equal(t, want, m.Data, "dropped pages read back from the page cache")
	require.NoError(t, s.Put(ctx, "a/k", []byte("replaced")))
	require.NoError(t, s.Delete(ctx, "a/k"))
	require.Equal(t, want, m.Data, "the mapping holds the file it mapped")
	require.NoError(t, m.Close())
	require.NoError(t, m.Close(), "a second close does nothing")

	sub, err := storage.Sub(s, "a")
	require.NoError(t, err)
	e, ok, err := storage.Map(ctx, sub, "empty")
	require.NoError(t, err)
	require.True(t, ok)
	require.Empty(t, e.Data)
	require.NoError(t, e.Close())

	_, ok, err = storage.Map(ctx, sub, "k")
	require.False(t, ok)
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.ErrorContains(t, err, "k")

	for _, other := range []storage.Store{storage.NewFaulty(s, storage.FaultConfig{})} {
		require.False(t, storage.Mappable(other))
		_, ok, err := storage.Map(ctx, other, "a/empty")
		require.NoError(t, err)
		require.False(t, ok)
	}
	mem, err := storage.Open(ctx, "mem://map-test")
	require.NoError(t, err)
	require.False(t, storage.Mappable(mem))
	_, ok, err = storage.Map(ctx, mem, "a/k")
	require.NoError(t, err)
	require.False(t, ok)
}
