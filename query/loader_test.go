package query

import (
	"io"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/loader"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// drainIDs runs l to the end of its epoch and returns its batches' row ids.
func drainIDs(t *testing.T, l *loader.Loader) [][]uint64 {
	t.Helper()
	defer l.Close()
	var out [][]uint64
	for {
		b, err := l.Next(ctx)
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		out = append(out, slices.Clone(b.RowIDs))
		l.Release(b)
	}
}

// TestLoaderOverSelection: a query's selection streams through the loader
// with its guarantees: its ORDER BY is the delivery order without a
// shuffle; across world sizes 1 to 8 (the selection does not divide
// evenly) every rank has the same number of batches and together they
// cover the selection, only its rows; a resume gives the same batches;
// an elastic resume covers the rest of the epoch.
func TestLoaderOverSelection(t *testing.T) {
	url := filepath.Join(t.TempDir(), "imgs")
	st, err := storage.Open(ctx, url)
	require.NoError(t, err)
	defer st.Close()
	d := makeImages(t, url, st, 301)
	defer d.Close()
	seed := uint64(5)
	sel, err := Select(ctx, d, "SELECT image, label FROM ds WHERE label <> 'fox' ORDER BY random()", Options{Seed: &seed})
	require.NoError(t, err)
	require.Len(t, sel.RowIDs, 201)
	again, err := Select(ctx, d, sel.SQL, Options{Seed: &seed})
	require.NoError(t, err)
	require.Equal(t, sel.RowIDs, again.RowIDs, "a seeded ORDER BY random() is reproducible")
	other, err := Select(ctx, d, sel.SQL, Options{})
	require.NoError(t, err)
	require.NotEqual(t, sel.RowIDs, other.RowIDs, "another seed, another order")
	require.ElementsMatch(t, sel.RowIDs, other.RowIDs)

	sc := d.Scan()
	base := loader.Config{Rows: sel.RowIDs, Query: sel.SQL, Columns: sel.Columns, BatchSize: 8, Shuffle: order.ModeNone}
	l, err := loader.New(ctx, sc, base)
	require.NoError(t, err)
	require.Equal(t, sel.RowIDs, slices.Concat(drainIDs(t, l)...), "without a shuffle, the query's order")

	for _, mode := range []order.Mode{order.ModeNone, order.ModeBlock, order.ModeFull} {
		for world := 1; world <= 8; world++ {
			seen := map[uint64]int{}
			batches := -1
			for rank := range world {
				c := base
				c.Shuffle, c.Seed, c.WorldSize, c.Rank = mode, 3, world, rank
				l, err := loader.New(ctx, sc, c)
				require.NoError(t, err)
				got := drainIDs(t, l)
				if batches >= 0 {
					require.Len(t, got, batches, "mode %s world %d rank %d", mode, world, rank)
				}
				batches = len(got)
				for _, b := range got {
					for _, id := range b {
						seen[id]++
					}
				}
			}
			require.Len(t, seen, len(sel.RowIDs), "mode %s world %d covers the selection", mode, world)
			for _, id := range sel.RowIDs {
				require.Positive(t, seen[id])
			}
		}
	}

	// Resume: the batches after a saved state are the rest of the run's.
	c := base
	c.Shuffle, c.Seed = order.ModeBlock, 9
	l, err = loader.New(ctx, sc, c)
	require.NoError(t, err)
	all := drainIDs(t, l)
	l, err = loader.New(ctx, sc, c)
	require.NoError(t, err)
	for range 5 {
		b, err := l.Next(ctx)
		require.NoError(t, err)
		l.Release(b)
	}
	state := l.State()
	l.Close()
	require.Contains(t, state.Selection, sel.SQL)
	c.Resume = &state
	l, err = loader.New(ctx, sc, c)
	require.NoError(t, err)
	require.Equal(t, all[5:], drainIDs(t, l))

	// Elastic: saved on 2 ranks, resumed on 3; every row once, but padding.
	c = base
	c.Shuffle, c.Seed, c.WorldSize = order.ModeFull, 4, 2
	seen := map[uint64]int{}
	var saved loader.State
	for rank := range 2 {
		c.Rank = rank
		l, err := loader.New(ctx, sc, c)
		require.NoError(t, err)
		for range 4 {
			b, err := l.Next(ctx)
			require.NoError(t, err)
			for _, id := range b.RowIDs {
				seen[id]++
			}
		}
		saved = l.State()
		l.Close()
	}
	c.Resume, c.WorldSize = &saved, 3
	for rank := range 3 {
		c.Rank = rank
		l, err := loader.New(ctx, sc, c)
		require.NoError(t, err)
		for _, b := range drainIDs(t, l) {
			for _, id := range b {
				seen[id]++
			}
		}
	}
	require.Len(t, seen, len(sel.RowIDs))
	extra := 0
	for _, n := range seen {
		extra += n - 1
	}
	require.LessOrEqual(t, extra, 3, "only padding repeats rows")

	// A selection naming a column the dataset does not have is refused.
	c = base
	c.Columns = []string{"label", "caption"}
	_, err = loader.New(ctx, sc, c)
	require.ErrorIs(t, err, loch.ErrNotFound)
	require.ErrorContains(t, err, `column "caption"`)
}

// TestSparseSelectionReadsItsRows: a selection that keeps 10% of the
// rows, spread over every chunk, does not cost every image byte: the
// loader reads the runs of samples it needs by range (the checksum blocks
// that hold them), not whole chunks.
func TestSparseSelectionReadsItsRows(t *testing.T) {
	url := filepath.Join(t.TempDir(), "imgs")
	st, err := storage.Open(ctx, url)
	require.NoError(t, err)
	defer st.Close()
	cs := newCounting(st)
	d, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{
		{Name: "image", Kind: schema.Image, ChunkBytes: 256 << 10},
		{Name: "label", Kind: schema.ClassLabel, Shape: schema.Shape{}},
	}}, loch.WithStore(cs))
	require.NoError(t, err)
	defer d.Close()
	var rows []loch.Row
	for i := range 400 {
		pix := make([]uint8, 64*64*3)
		for k := range pix {
			pix[k] = uint8(i * k)
		}
		rows = append(rows, loch.Row{"image": loch.Tensor([]int{64, 64, 3}, pix), "label": loch.Scalar(int64(i % 7))})
	}
	require.NoError(t, d.Extend(ctx, rows))
	_, err = d.Commit(ctx, "images")
	require.NoError(t, err)
	sel, err := Select(ctx, d, "SELECT image FROM ds WHERE _rowid % 10 = 0", Options{})
	require.NoError(t, err)
	require.Len(t, sel.RowIDs, 40)
	cols := d.Columns()
	c := cols[slices.IndexFunc(cols, func(c schema.Entry) bool { return c.Name == "image" })]
	for _, mode := range []order.Mode{order.ModeNone, order.ModeBlock, order.ModeFull} {
		cs.readOf(func(string) bool { return true })
		l, err := loader.New(ctx, d.Scan(), loader.Config{Rows: sel.RowIDs, Query: sel.SQL, Columns: sel.Columns, BatchSize: 8, Shuffle: mode})
		require.NoError(t, err)
		require.Len(t, slices.Concat(drainIDs(t, l)...), 40)
		got := cs.readOf(isChunk)
		t.Logf("mode %s: %.3f of the image bytes", mode, float64(got)/float64(c.StoredBytes))
		require.Less(t, float64(got), 0.35*float64(c.StoredBytes), "mode %s read %d of %d image bytes for 10%% of the rows", mode, got, c.StoredBytes)
	}
}
