package fts

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/internal/ftsindex"
	"github.com/lochdata/loch/schema"
)

// TestIncremental: appended rows are found before and after Update,
// deleted rows never come back, updated rows are found by their new text
// only, and each version searches its own rows.
func TestIncremental(t *testing.T) {
	ctx := context.Background()
	ds := newText(t, "red car", "blue truck", "green bicycle")
	v1 := commit(t, ds, "v1")
	i1, err := Build(ctx, ds, "caption", BuildOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, i1.Segments)

	appendText(t, ds, "red bicycle", "yellow submarine") // rows 3, 4
	v2 := commit(t, ds, "v2")
	res := search(t, ds, "red", 10)
	require.Equal(t, i1.Key, res.Index) // v1's index serves v2 ...
	require.ElementsMatch(t, []uint64{0, 3}, ids(res.Hits))
	ix, err := Open(ctx, ds, "caption", Options{})
	require.NoError(t, err)
	require.Equal(t, int64(2), ix.Uncovered()) // ... and the new rows are analysed

	i2, err := Update(ctx, ds, "caption", BuildOptions{})
	require.NoError(t, err)
	require.Equal(t, v1, i2.Base)
	require.Equal(t, 2, i2.Segments) // v1's segment kept, one for the new rows
	require.Equal(t, int64(5), i2.Docs)
	res = search(t, ds, "red", 10)
	require.Equal(t, i2.Key, res.Index)
	require.ElementsMatch(t, []uint64{0, 3}, ids(res.Hits))
	ix, err = Open(ctx, ds, "caption", Options{})
	require.NoError(t, err)
	require.Zero(t, ix.Uncovered())

	require.NoError(t, ds.Delete(ctx, 0))
	require.NoError(t, ds.Update(ctx, 1, loch.Row{"caption": loch.String("red scooter")}))
	commit(t, ds, "v3")
	require.ElementsMatch(t, []uint64{1, 3}, ids(search(t, ds, "red", 10).Hits))
	require.Empty(t, search(t, ds, "truck", 10).Hits)
	require.Empty(t, search(t, ds, "car", 10).Hits)
	i3, err := Update(ctx, ds, "caption", BuildOptions{})
	require.NoError(t, err)
	require.ElementsMatch(t, []uint64{1, 3}, ids(search(t, ds, "red", 10).Hits))
	require.Empty(t, search(t, ds, "truck", 10).Hits)
	require.Equal(t, i3.Key, search(t, ds, "scooter", 10).Index)

	// Each version answers with its own rows.
	for v, want := range map[string][]uint64{v1: {0}, v2: {0, 3}} {
		old, err := loch.Open(ctx, ds.URL(), loch.WithVersion(v))
		require.NoError(t, err)
		require.ElementsMatch(t, want, ids(search(t, old, "red", 10).Hits), v)
		require.ElementsMatch(t, []uint64{1}, ids(search(t, old, "truck", 10).Hits), v)
		old.Close()
	}
}

// TestMerge: Update merges the segments when too many of their docs are
// no longer valid, and the merged index answers as the unmerged one.
func TestMerge(t *testing.T) {
	ctx := context.Background()
	var docs []string
	for i := range 40 {
		docs = append(docs, fmt.Sprintf("word%d common %s", i, strings.Repeat("filler ", i%5)))
	}
	ds := newText(t, docs...)
	commit(t, ds, "v1")
	_, err := Build(ctx, ds, "caption", BuildOptions{})
	require.NoError(t, err)
	appendText(t, ds, "common extra")
	commit(t, ds, "v2")
	_, err = Update(ctx, ds, "caption", BuildOptions{})
	require.NoError(t, err)
	require.NoError(t, ds.Delete(ctx, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9))
	commit(t, ds, "v3")
	before := search(t, ds, "common filler", 50).Hits
	info, err := Update(ctx, ds, "caption", BuildOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, info.Segments)
	require.Equal(t, int64(31), info.Docs) // stats recomputed without the deleted rows
	after := search(t, ds, "common filler", 50).Hits
	require.Equal(t, ids(before), ids(after)[:len(before)])
	require.Len(t, after, 31)
}

// TestUnusableIndex: a search whose index objects are missing or damaged
// analyses every row, with a warning naming the object.
func TestUnusableIndex(t *testing.T) {
	ctx := context.Background()
	ds := newText(t, "red car", "blue truck")
	commit(t, ds, "v1")
	info, err := Build(ctx, ds, "caption", BuildOptions{})
	require.NoError(t, err)
	obj, err := ds.Store().Get(ctx, info.Key)
	require.NoError(t, err)
	d, err := ftsindex.DecodeDescriptor(info.Key, obj)
	require.NoError(t, err)
	seg := d.Segments[0].Key
	data, err := ds.Store().Get(ctx, seg)
	require.NoError(t, err)
	data[len(data)-70] ^= 0xff // the docs section
	require.NoError(t, ds.Store().Put(ctx, seg, data))
	res := search(t, ds, "red", 10)
	require.Equal(t, []uint64{0}, ids(res.Hits))
	require.Len(t, res.Warnings, 1)
	require.Contains(t, res.Warnings[0], seg)
	_, problems, err := ds.Verify(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, problems)
	require.Equal(t, seg, problems[0].Key)
	_, err = Update(ctx, ds, "caption", BuildOptions{})
	require.ErrorIs(t, err, loch.ErrCorrupt)

	require.NoError(t, ds.Store().Delete(ctx, seg))
	res = search(t, ds, "red", 10)
	require.Equal(t, []uint64{0}, ids(res.Hits))
	require.Contains(t, res.Warnings[0], seg)
}

// TestGCKeepsIndex: garbage collection keeps a reachable index's
// segments and deletes those of a replaced one.
func TestGCKeepsIndex(t *testing.T) {
	ctx := context.Background()
	ds := indexedText(t, "red car", "blue truck")
	_, err := ds.GC(ctx, loch.GCOptions{})
	require.NoError(t, err)
	res := search(t, ds, "red", 10)
	require.Empty(t, res.Warnings)
	require.NotEmpty(t, res.Index)
	_, problems, err := ds.Verify(ctx)
	require.NoError(t, err)
	require.Empty(t, problems)

	// Once its descriptor is dropped, gc deletes the segment.
	obj, err := ds.Store().Get(ctx, res.Index)
	require.NoError(t, err)
	d, err := ftsindex.DecodeDescriptor(res.Index, obj)
	require.NoError(t, err)
	require.NoError(t, ds.Store().Delete(ctx, res.Index))
	_, err = ds.GC(ctx, loch.GCOptions{})
	require.NoError(t, err)
	_, err = ds.Store().Stat(ctx, d.Segments[0].Key)
	require.ErrorIs(t, err, loch.ErrNotFound)
	require.Empty(t, search(t, ds, "red", 10).Index)
}

// TestJSONColumn: the string values of a json column are indexed, not
// its keys, numbers or the values' order across a phrase.
func TestJSONColumn(t *testing.T) {
	ctx := context.Background()
	ds, err := loch.Create(ctx, t.TempDir()+"/ds", schema.Schema{Columns: []schema.Column{{Name: "meta", DType: schema.JSON}}})
	require.NoError(t, err)
	defer ds.Close()
	var rows []loch.Row
	for _, v := range []any{
		map[string]any{"title": "Red car", "tags": []any{"fast", "shiny"}},
		map[string]any{"red": "blue", "n": 3},
		map[string]any{"a": "red", "b": "car"},
		nil,
	} {
		s, err := loch.JSON(v)
		require.NoError(t, err)
		rows = append(rows, loch.Row{"meta": s})
	}
	require.NoError(t, ds.Extend(ctx, rows))
	commit(t, ds, "v1")
	for _, built := range []bool{false, true} {
		if built {
			_, err := Build(ctx, ds, "meta", BuildOptions{})
			require.NoError(t, err)
		}
		got := func(q string) []uint64 {
			res, err := Search(ctx, ds, "meta", q, 10, Options{})
			require.NoError(t, err)
			return ids(res.Hits)
		}
		require.ElementsMatch(t, []uint64{0, 2}, got("red"), built)
		require.ElementsMatch(t, []uint64{0}, got(`"red car"`), built)
		require.ElementsMatch(t, []uint64{0}, got("shiny"), built)
		require.Empty(t, got("title"), built)
	}
	_, err = Build(ctx, ds, "nope", BuildOptions{})
	require.ErrorIs(t, err, loch.ErrNotFound)
}

// TestThroughChunkCache: a search through a chunk cache reads the
// segment by range from the cache after the first fetch, with the same
// answer, and a disk cache serves another searcher.
func TestThroughChunkCache(t *testing.T) {
	ctx := context.Background()
	ds := newText(t, "red car", "blue truck", "red bicycle")
	commit(t, ds, "v1")
	_, err := Build(ctx, ds, "caption", BuildOptions{})
	require.NoError(t, err)
	want := search(t, ds, `red OR "blue truck"`, 10).Hits
	for _, open := range []func() chunkcache.Cache{
		func() chunkcache.Cache { return chunkcache.NewMemory(1 << 20) },
		func() chunkcache.Cache {
			c, err := chunkcache.Open(t.TempDir(), 1<<20, nil)
			require.NoError(t, err)
			return c
		},
	} {
		cache := open()
		for range 2 {
			res, err := NewSearcher(ds).Search(ctx, "caption", `red OR "blue truck"`, 10, Options{Cache: cache})
			require.NoError(t, err)
			require.Equal(t, want, res.Hits)
		}
		st := cache.Stats()
		require.Positive(t, st.Hits)
		require.NoError(t, cache.Close())
	}
}
