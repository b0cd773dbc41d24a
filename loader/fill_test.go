package loader

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/schema"
)

// cachedEpoch runs one full-shuffle epoch over url through a counting
// store and cache, and returns its digest, the loader's statistics and
// the requests it made for chunk data.
func cachedEpoch(t *testing.T, url string, cache chunkcache.Cache, cfg Config) (string, Stats, int64, *countingStore) {
	t.Helper()
	scan, cs := countedScan(t, url)
	cfg.Cache = cache
	l, err := New(ctx, scan, cfg)
	require.NoError(t, err)
	digest, _ := drainDigest(t, l)
	if l.fill != nil { // the filler may still be listing the last window's chunks
		require.Eventually(t, func() bool { return l.Stats().FillTime > 0 }, time.Minute, time.Millisecond)
	}
	stats := l.Stats()
	l.Close()
	var fillPeak int64
	if l.fill != nil {
		fillPeak = l.fill.peak
	}
	return digest, stats, fillPeak, cs
}

// TestFillAheadOnMinIO: a full shuffle's first epoch with a fresh disk
// cache on a real S3 server fetches every chunk of the dataset once,
// whole, and nothing by range; the filler fetches them (the loader counts
// them as chunks fetched) and the order is the one captured before
// (TestFullShuffleOrderUnchanged), and Stats gives the time the fill
// took. The next epoch makes no request. The fills under way hold at
// most a quarter of the prefetch bytes.
func TestFillAheadOnMinIO(t *testing.T) {
	b := testserver.MinIO(t)
	d := shuffleSet(t, b.URL, schema.LZ4)
	sc := d.Scan()
	require.NoError(t, sc.Load(ctx, 4))
	chunks := len(sc.Chunks(d.Schema().Columns[0].UID))
	require.Greater(t, chunks, 8)
	cfg := Config{BatchSize: 32, Shuffle: order.ModeFull, Seed: 11, WindowRows: 1024, PrefetchBytes: 4 << 20}
	cache, err := chunkcache.Open(t.TempDir(), 1<<30, nil)
	require.NoError(t, err)
	defer cache.Close()

	digest, stats, fillPeak, cs := cachedEpoch(t, b.URL, cache, cfg)
	require.Equal(t, "3000 0678e68c98a9d292", digest)
	require.Len(t, cs.byKey, chunks, "each chunk fetched")
	for key, n := range cs.byKey {
		require.Equal(t, 1, n, "GETs of %s", key)
	}
	require.Zero(t, cs.ranges.Load(), "range reads")
	require.EqualValues(t, chunks, stats.ChunksFetched)
	require.Positive(t, fillPeak)
	require.LessOrEqual(t, fillPeak, cfg.PrefetchBytes/4)
	require.Positive(t, stats.FillTime)
	require.LessOrEqual(t, stats.FillTime, stats.Elapsed)

	digest, _, _, cs = cachedEpoch(t, b.URL, cache, cfg)
	require.Equal(t, "3000 0678e68c98a9d292", digest)
	require.Empty(t, cs.byKey)
	require.Zero(t, cs.ranges.Load())

	defer func(v bool) { fillAhead = v }(fillAhead)
	fillAhead = false
	fresh, err := chunkcache.Open(t.TempDir(), 1<<30, nil)
	require.NoError(t, err)
	defer fresh.Close()
	digest, without, _, cs := cachedEpoch(t, b.URL, fresh, cfg)
	require.Equal(t, "3000 0678e68c98a9d292", digest)
	require.Len(t, cs.byKey, chunks)
	require.Zero(t, without.FillTime, "no filler, no fill time")
	t.Logf("peak in flight: %d KiB filling ahead (fills %d KiB), %d KiB without (prefetch bytes %d KiB)",
		stats.PeakInFlight>>10, fillPeak>>10, without.PeakInFlight>>10, cfg.PrefetchBytes>>10)
}

// TestFillAheadStopsWithLoader: a loader closed after its first batch,
// while its filler still has chunks to fetch, stops: Close returns.
func TestFillAheadStopsWithLoader(t *testing.T) {
	b := testserver.MinIO(t)
	d := shuffleSet(t, b.URL, schema.CodecNone)
	cache, err := chunkcache.Open(t.TempDir(), 1<<30, nil)
	require.NoError(t, err)
	defer cache.Close()
	l, err := New(ctx, d.Scan(), Config{BatchSize: 32, Shuffle: order.ModeFull, Seed: 3, Cache: cache, PrefetchBytes: 1 << 20})
	require.NoError(t, err)
	bt, err := l.Next(ctx)
	require.NoError(t, err)
	require.Equal(t, 32, bt.Len())
	l.Close()
}
