package fts

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/schema"
)

func TestMain(m *testing.M) {
	defer testserver.StopAll()
	m.Run()
}

// newText creates a dataset of a text column "caption" (small chunks, so
// that rows span several) and appends docs, one row each (ids from 0).
func newText(t testing.TB, docs ...string) *loch.Dataset {
	t.Helper()
	ctx := context.Background()
	ds, err := loch.Create(ctx, filepath.Join(t.TempDir(), "ds"), schema.Schema{Columns: []schema.Column{
		{Name: "caption", DType: schema.Text, ChunkBytes: 1024},
		{Name: "label", DType: schema.Int64, Shape: schema.Shape{}},
	}})
	require.NoError(t, err)
	t.Cleanup(func() { ds.Close() })
	appendText(t, ds, docs...)
	return ds
}

// indexedText is newText with docs committed as "v1" and a full-text
// index of caption built.
func indexedText(t testing.TB, docs ...string) *loch.Dataset {
	t.Helper()
	ds := newText(t, docs...)
	commit(t, ds, "v1")
	_, err := Build(context.Background(), ds, "caption", BuildOptions{})
	require.NoError(t, err)
	return ds
}

func appendText(t testing.TB, ds *loch.Dataset, docs ...string) {
	t.Helper()
	rows := make([]loch.Row, len(docs))
	for i, d := range docs {
		rows[i] = loch.Row{"caption": loch.String(d), "label": loch.Scalar(int64(i))}
	}
	require.NoError(t, ds.Extend(context.Background(), rows))
}

func commit(t testing.TB, ds *loch.Dataset, msg string) string {
	t.Helper()
	v, err := ds.Commit(context.Background(), msg)
	require.NoError(t, err)
	return v
}

// ids returns the hits' row ids.
func ids(hs []Hit) []uint64 {
	out := make([]uint64, len(hs))
	for i, h := range hs {
		out[i] = h.RowID
	}
	return out
}

// search runs a search with a fresh Searcher and checks it succeeded.
func search(t testing.TB, ds *loch.Dataset, q string, k int) *Result {
	t.Helper()
	res, err := Search(context.Background(), ds, "caption", q, k, Options{})
	require.NoError(t, err)
	return res
}
