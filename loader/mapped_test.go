package loader

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/schema"
)

// TestMappedBatchesMatchReadBatches: a block shuffle and a full shuffle
// of a local dataset (codec none and lz4), three epochs on one loader's
// dataset, deliver the same batches with spans read from mapped chunk
// files as read into buffers, within the same in-flight bound.
func TestMappedBatchesMatchReadBatches(t *testing.T) {
	for _, codec := range []schema.ChunkCodec{schema.CodecNone, schema.LZ4} {
		d := imageDataset(t, codec)
		for _, mode := range []order.Mode{order.ModeBlock, order.ModeFull} {
			cfg := Config{BatchSize: 50, Shuffle: mode, Seed: 5, Workers: 2, PrefetchBytes: 2 << 20}
			epochs := func(mapped bool) (out [][]*Batch, peak int64) {
				defer func(v bool) { mapChunks = v }(mapChunks)
				mapChunks = mapped
				for e := range 3 {
					cfg.Epoch = e
					l, err := New(ctx, d.Scan(), cfg)
					require.NoError(t, err)
					out = append(out, drain(t, l))
					peak = max(peak, l.Stats().PeakInFlight)
					require.NoError(t, l.Close())
				}
				return out, peak
			}
			read, readPeak := epochs(false)
			mapped, mappedPeak := epochs(true)
			msg := fmt.Sprintf("codec %s shuffle %s", codec, mode)
			for e := range read {
				t.Run(msg, func(t *testing.T) { sameImageBatches(t, read[e], mapped[e]) })
			}
			require.LessOrEqual(t, mappedPeak, readPeak+int64(cfg.PrefetchBytes)/4, msg)
		}
	}
}

// imageDataset makes a local dataset of 1,500 32x32x3 images, half noise
// and half flat (lz4 has something to do), in chunks of 1 MiB.
func imageDataset(t *testing.T, codec schema.ChunkCodec) *loch.Dataset {
	return randomImages(t, filepath.Join(t.TempDir(), "ds"), 1500, 32, 0.5, 1<<20, codec, rand.NewPCG(3, 9))
}

// TestSpanBuffersReused: an lz4 block shuffle decodes its spans into
// buffers from its pool, which keeps idle no more than its budget, and a
// loader closed hands every buffer it holds on (Loader.recycle), so that
// the next epoch's loader allocates almost none. (The collector is held
// off: it empties the sync.Pool they are handed on through.
// TestMappedBatchesMatchReadBatches checks the batches of reused buffers.)
func TestSpanBuffersReused(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	d := imageDataset(t, schema.LZ4)
	cfg := Config{BatchSize: 50, Shuffle: order.ModeBlock, Seed: 5, Workers: 2, PrefetchBytes: 4 << 20}
	for e := range 3 {
		cfg.Epoch = e
		l, err := New(ctx, d.Scan(), cfg)
		require.NoError(t, err)
		got := drain(t, l)
		require.Len(t, got, 30)
		gets, fresh := l.bufs.Counts()
		require.Greater(t, gets, int64(50), "epoch %d", e)
		if e > 0 {
			// Under the race detector a sync.Pool drops a quarter of what
			// it is given, at random.
			most := gets / 10
			if raceEnabled {
				most = gets / 2
			}
			require.Less(t, fresh, most, "epoch %d: buffers of the epoch before reused", e)
		}
		require.LessOrEqual(t, l.bufs.Idle(), cfg.PrefetchBytes, "epoch %d", e)
		require.NoError(t, l.Close())
		require.Zero(t, l.bufs.Idle(), "epoch %d: handed on when closed", e)
	}
}
