package loader

import (
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// TestOnMinIO runs the loader against a real S3 server: two ranks in block
// and full mode cover every row with equal batch counts, resume is exact,
// and a flaky wrapper (10% of reads failing) loses nothing.
func TestOnMinIO(t *testing.T) {
	b := testserver.MinIO(t)
	d, err := loch.Create(ctx, b.URL, schema.Schema{Columns: []schema.Column{
		{Name: "x", DType: schema.Float32, Shape: schema.Shape{8}, ChunkBytes: 2048, ChunkCompression: schema.LZ4},
		{Name: "y", DType: schema.Int64, ChunkBytes: 1024},
	}})
	require.NoError(t, err)
	defer d.Close()
	const n = 301
	for i := 0; i < n; i++ {
		v := make([]float32, 8)
		v[0] = float32(i)
		require.NoError(t, d.Append(ctx, loch.Row{"x": loch.Tensor([]int{8}, v), "y": loch.Scalar(int64(i))}))
	}
	_, err = d.Commit(ctx, "rows")
	require.NoError(t, err)

	for _, mode := range []order.Mode{"block", "full"} {
		seen := map[uint64]bool{}
		var counts []int
		for r := 0; r < 2; r++ {
			l, err := New(ctx, d.Scan(), Config{BatchSize: 16, Shuffle: mode, Seed: 8, WorldSize: 2, Rank: r})
			require.NoError(t, err)
			bs := drain(t, l)
			l.Close()
			counts = append(counts, len(bs))
			for _, bt := range bs {
				for k, id := range bt.RowIDs {
					seen[id] = true
					x := bt.Columns["x"]
					per := len(x.Data) / bt.Len()
					f, _ := loch.As[float32](x.Data[k*per : (k+1)*per])
					require.Equal(t, float32(id), f[0], "row %d", id)
				}
			}
		}
		require.Equal(t, counts[0], counts[1], mode)
		require.Len(t, seen, n, mode)
	}

	// Resume mid-epoch gives exactly the rest of the uninterrupted run.
	cfg := Config{BatchSize: 16, Shuffle: "block", Seed: 8, Epoch: 1}
	whole := positions(t, d, cfg)
	st := stateAfter(t, d, cfg, 4)
	cfg.Resume = &st
	require.Equal(t, whole[4:], positions(t, d, cfg))

	faulty := storage.NewFaulty(d.Store(), storage.FaultConfig{ReadErrorRate: 0.1, Latency: time.Millisecond, Seed: 5})
	flaky := storage.NewRetryStore(faulty, storage.RetryPolicy{MaxAttempts: 10, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond})
	fd, err := loch.Open(ctx, b.URL, loch.WithStore(flaky))
	require.NoError(t, err)
	defer fd.Close()
	l, err := New(ctx, fd.Scan(), Config{BatchSize: 10, Shuffle: "block", Seed: 3})
	require.NoError(t, err)
	var ids []uint64
	for _, bt := range drain(t, l) {
		ids = append(ids, bt.RowIDs...)
	}
	l.Close()
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	require.Len(t, ids, n)
	for i, id := range ids {
		require.EqualValues(t, i, id, fmt.Sprint("row ", i))
	}
}

// TestFirstWindowOnMinIO: on an object store the loader's first window is
// read in whole runs, its first batch with it (each read is a request
// there; see schedule), and the epoch is the same as on local disk.
func TestFirstWindowOnMinIO(t *testing.T) {
	remote := noiseImages(t, testserver.MinIO(t).URL)
	local := noiseImages(t, filepath.Join(t.TempDir(), "ds"))
	cfg := Config{BatchSize: 64, Seed: 3, Workers: 2}
	job, _, own := firstScheduled(t, remote, cfg, true)
	require.NotEqual(t, own, job.readSet(), "on MinIO the first batch is read with its window")
	l, err := New(ctx, remote.Scan(), cfg)
	require.NoError(t, err)
	defer l.Close()
	got := drain(t, l)
	require.Positive(t, l.Stats().ChunksFetched, "whole runs of a window holding every row read whole chunks")
	ll, err := New(ctx, local.Scan(), cfg)
	require.NoError(t, err)
	defer ll.Close()
	sameImageBatches(t, drain(t, ll), got)
}
