package loader

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/storage"
)

// TestFlakyBackend fails 10% of reads and adds latency: with retries every
// row still arrives exactly once, and the retries are counted. (Which reads
// fail depends on the object keys; with ~90 chunk reads some always do.)
func TestFlakyBackend(t *testing.T) {
	const rows = 1200
	d := testDataset(t, rows)
	faulty := storage.NewFaulty(d.Store(), storage.FaultConfig{ReadErrorRate: 0.1, Latency: time.Millisecond, Seed: 42})
	flaky := storage.NewRetryStore(faulty, storage.RetryPolicy{MaxAttempts: 10, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond})
	fd, err := loch.Open(ctx, d.URL(), loch.WithStore(flaky))
	require.NoError(t, err)
	defer fd.Close()
	injected0 := faulty.Injected()
	l, err := New(ctx, fd.Scan(), Config{BatchSize: 7, Shuffle: "none", FetchConcurrency: 4})
	require.NoError(t, err)
	defer l.Close()
	var ids []uint64
	for _, b := range drain(t, l) {
		ids = append(ids, b.RowIDs...)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	require.Len(t, ids, rows)
	for i, id := range ids {
		require.EqualValues(t, i, id)
	}
	require.Greater(t, faulty.Injected()-injected0, int64(0), "the loader met faults")
	require.Equal(t, faulty.Injected()-injected0, l.Stats().Retries, "every fault was retried and counted")
	t.Logf("%d faults injected, %d retries", faulty.Injected(), l.Stats().Retries)
}

// corruptChunkOf flips a data byte in the chunk holding row 0 of column.
func corruptChunkOf(t *testing.T, d *loch.Dataset, dir, column string) string {
	v := d.Scan()
	require.NoError(t, v.Load(ctx, 1))
	sch := v.Schema()
	c, _ := sch.Column(column)
	key := v.ChunkKey(v.Chunks(c.UID)[0])
	p := filepath.Join(dir, filepath.FromSlash(key))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	b[len(b)-10] ^= 0xff
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return key
}

func TestBadChunkStopsOrIsSkipped(t *testing.T) {
	d := testDataset(t, 60)
	dir := filepath.Join(filepath.Dir(d.URL()), "ds")
	if u := d.URL(); len(u) > 7 && u[:7] == "file://" {
		dir = u[7:]
	}
	key := corruptChunkOf(t, d, dir, "x")
	fresh, err := loch.Open(ctx, d.URL())
	require.NoError(t, err)
	defer fresh.Close()

	l, err := New(ctx, fresh.Scan(), Config{BatchSize: 8, Shuffle: "none"})
	require.NoError(t, err)
	_, err = l.Next(ctx)
	require.ErrorIs(t, err, loch.ErrCorrupt)
	require.Contains(t, err.Error(), "row id 0")
	require.Contains(t, err.Error(), `column "x"`)
	require.Contains(t, err.Error(), key)
	l.Close()

	l, err = New(ctx, fresh.Scan(), Config{BatchSize: 8, Shuffle: "none", SkipBadSamples: true})
	require.NoError(t, err)
	defer l.Close()
	n := 0
	for _, b := range drain(t, l) {
		n += b.Len()
	}
	st := l.Stats()
	require.Greater(t, st.Skipped, int64(0))
	require.EqualValues(t, 60, int64(n)+st.Skipped, "every row is delivered or reported skipped")
	require.Contains(t, st.SkippedRows, uint64(0))
}

// TestCacheServesLaterEpochs: with a disk cache, the second epoch reads
// every chunk from the cache and delivers the same rows.
func TestCacheServesLaterEpochs(t *testing.T) {
	d := testDataset(t, 90)
	c, err := chunkcache.Open(t.TempDir(), 64<<20, nil)
	require.NoError(t, err)
	defer c.Close()
	run := func(epoch int) ([][]int64, Stats) {
		l, err := New(ctx, d.Scan(), Config{BatchSize: 10, Shuffle: "block", Epoch: epoch, Cache: c})
		require.NoError(t, err)
		defer l.Close()
		var ps [][]int64
		for _, b := range drain(t, l) {
			ps = append(ps, b.Positions)
		}
		return ps, l.Stats()
	}
	sc := d.Scan()
	require.NoError(t, sc.Load(ctx, 1))
	sch := sc.Schema()
	var chunks int64
	for _, c := range sch.Columns {
		chunks += int64(len(sc.Chunks(c.UID)))
	}
	_, s0 := run(0)
	// A chunk that batches far apart need may be fetched again within the
	// epoch once its first users are done: then from the cache.
	require.Greater(t, s0.ChunksFetched, int64(0))
	require.LessOrEqual(t, s0.ChunksFetched, chunks, "no chunk is fetched from the store twice")
	want, _ := run(1)
	got, s1 := run(1)
	require.Equal(t, want, got)
	require.Zero(t, s1.ChunksFetched, "a warm cache serves every chunk")
	require.Greater(t, s1.CacheHits, int64(0))
}

// TestMissingChunkIsNotFound: a chunk that disappeared from the store
// reaches the caller as loch.ErrNotFound naming the chunk, in every shuffle
// mode (whole-chunk and sample reads), not as an unclassified error.
func TestMissingChunkIsNotFound(t *testing.T) {
	d := testDataset(t, 60)
	dir := filepath.Join(filepath.Dir(d.URL()), "ds")
	if u := d.URL(); len(u) > 7 && u[:7] == "file://" {
		dir = u[7:]
	}
	v := d.Scan()
	require.NoError(t, v.Load(ctx, 1))
	sch := v.Schema()
	c, _ := sch.Column("x")
	key := v.ChunkKey(v.Chunks(c.UID)[0])
	require.NoError(t, os.Remove(filepath.Join(dir, filepath.FromSlash(key))))
	for _, mode := range []order.Mode{"none", "block", "full"} {
		fresh, err := loch.Open(ctx, d.URL())
		require.NoError(t, err)
		l, err := New(ctx, fresh.Scan(), Config{BatchSize: 60, Shuffle: mode, Columns: []string{"x"}})
		require.NoError(t, err)
		_, err = l.Next(ctx)
		require.ErrorIs(t, err, loch.ErrNotFound, string(mode))
		require.Contains(t, err.Error(), key, string(mode))
		l.Close()
		fresh.Close()
	}
}
