package loch_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/ingest"
	"github.com/lochdata/loch/internal/chunk"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
	"github.com/lochdata/loch/transform"
)

// The errors of every layer below the engine match loch's sentinels as
// they are, so that no border has to translate them: each case makes a
// real error in a lower package and checks the loch sentinel it must
// match, and that it matches no other.
func TestLowerLayersMatchLochSentinels(t *testing.T) {
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "") // so that az:// has no credentials
	t.Setenv("AZURE_STORAGE_ACCOUNT", "")
	ctx := context.Background()
	store, err := storage.Open(ctx, "mem://errors-test")
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	require.NoError(t, store.PutIfAbsent(ctx, "k", []byte("v")))

	b := chunk.NewBuilder(schema.Uint8, chunk.SampleNone, chunk.CodecNone, 0)
	require.NoError(t, b.Add([]int{3}, []byte{1, 2, 3}, false))
	chunkObj, err := b.Encode()
	require.NoError(t, err)
	newerChunk := append([]byte(nil), chunkObj...)
	newerChunk[4] = chunk.Major + 1

	metaObj, err := manifest.Encode(manifest.KindRoot, manifest.Root{Seq: 1})
	require.NoError(t, err)
	newerMeta := append([]byte(nil), metaObj...)
	newerMeta[5] = manifest.Major + 1

	for _, tc := range []struct {
		name string
		err  func() error
		want error
	}{
		{"storage: missing object", func() error { _, err := store.Get(ctx, "nope"); return err }, loch.ErrNotFound},
		{"storage: put-if-absent of a present key", func() error { return store.PutIfAbsent(ctx, "k", nil) }, loch.ErrExists},
		{"storage: no credentials", func() error { _, err := storage.Open(ctx, "az://container/ds"); return err }, loch.ErrPermission},
		{"storage: bad url", func() error { _, err := storage.Open(ctx, "ftp://host/ds"); return err }, loch.ErrInvalidArgument},
		{"storage: bad key", func() error { _, err := store.Get(ctx, "../k"); return err }, loch.ErrInvalidArgument},
		{"chunk: corrupt header", func() error { _, err := chunk.ParseHeader(chunkObj[:10]); return err }, loch.ErrCorrupt},
		{"chunk: corrupt data", func() error {
			bad := append([]byte(nil), chunkObj...)
			bad[len(bad)-1] ^= 1
			_, err := chunk.Decode(bad, nil)
			return err
		}, loch.ErrCorrupt},
		{"chunk: newer format", func() error { _, err := chunk.ParseHeader(newerChunk); return err }, loch.ErrNewerFormat},
		{"manifest: corrupt", func() error { return manifest.Decode(manifest.KindRoot, metaObj[:len(metaObj)-1], &manifest.Root{}) }, loch.ErrCorrupt},
		{"manifest: newer format", func() error { return manifest.Decode(manifest.KindRoot, newerMeta, &manifest.Root{}) }, loch.ErrNewerFormat},
		{"schema: invalid column", func() error {
			return (&schema.Schema{Columns: []schema.Column{{Name: "x", Kind: schema.Generic}}}).Normalize()
		}, loch.ErrInvalidArgument},
		{"order: invalid spec", func() error { return order.Spec{BatchSize: 0, WorldSize: 1}.Validate() }, loch.ErrInvalidArgument},
		{"order: state of another snapshot", func() error {
			_, err := order.Resume(order.Spec{Version: "a", BatchSize: 1, WorldSize: 1}, order.State{Version: "b"})
			return err
		}, loch.ErrInvalidArgument},
		{"transform: bad spec", func() error { _, err := transform.Parse("sideways"); return err }, loch.ErrInvalidArgument},
		{"imaging: undecodable image", func() error { return imaging.DecodeInto(make([]byte, 3), []byte("not an image"), 1, 1, 3) }, loch.ErrCorrupt},
		{"chunkcache: bad key", func() error { return chunkcache.NewMemory(1<<20).Put(ctx, "/abs", nil) }, loch.ErrInvalidArgument},
		{"chunkcache: data not matching its hash", func() error {
			return chunkcache.NewMemory(1<<20).Put(ctx, "chunks/0123456789abcdef0123456789abcdef", []byte("x"))
		}, loch.ErrCorrupt},
		{"ingest: invalid source", func() error { return ingest.ErrInvalidSource }, loch.ErrInvalidArgument},
		{"ingest: incompatible", func() error { return ingest.ErrIncompatible }, loch.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			t.Log(err)
			require.ErrorIs(t, err, tc.want, "%v", err)
			for _, other := range []error{loch.ErrNotFound, loch.ErrExists, loch.ErrCorrupt, loch.ErrConflict,
				loch.ErrInvalidArgument, loch.ErrNewerFormat, loch.ErrReadOnly, loch.ErrPermission} {
				if other != tc.want {
					require.False(t, errors.Is(err, other), "%v also matches %v", err, other)
				}
			}
		})
	}
}

// The lower packages' names for the shared sentinels are the same values,
// and their own kinds keep their identity.
func TestSharedSentinels(t *testing.T) {
	require.Same(t, loch.ErrNotFound, storage.ErrNotFound)
	require.Same(t, loch.ErrExists, storage.ErrExists)
	require.Same(t, loch.ErrPermission, storage.ErrPermission)
	require.Same(t, loch.ErrCorrupt, chunkcache.ErrCorrupt)
	for _, own := range []error{storage.ErrInvalidURL, storage.ErrInvalidKey, chunkcache.ErrInvalidKey,
		schema.ErrInvalid, order.ErrInvalid, order.ErrMismatch, transform.ErrSpec, transform.ErrInput} {
		require.ErrorIs(t, own, loch.ErrInvalidArgument)
		require.NotSame(t, loch.ErrInvalidArgument, own)
	}
	require.NotErrorIs(t, schema.ErrInvalid, order.ErrInvalid)
	require.NotErrorIs(t, storage.ErrTransient, loch.ErrInvalidArgument)
}
