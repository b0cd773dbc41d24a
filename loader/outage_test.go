package loader

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// TestEpochRidesOutMinIOOutage: MinIO killed for 2, 10 and 30 s in the
// middle of an epoch (each on a server of its own, the three at once) and
// started again on the same port: with the default retry policy the epoch
// goes on when the server is back, every row delivered once, and the
// loader's statistics show the stall. Correctness is asserted, not times.
func TestEpochRidesOutMinIOOutage(t *testing.T) {
	testserver.EachOutage(t, func(t *testing.T, m *testserver.MinIOServer, outage time.Duration) {
		creds := loch.WithStorageSettings(storage.Settings{AccessKeyID: testserver.MinIOAccessKey, SecretAccessKey: testserver.MinIOSecretKey})
		d, err := loch.Create(ctx, m.Bucket(t).URL, schema.Schema{Columns: []schema.Column{
			{Name: "x", DType: schema.Float32, Shape: schema.Shape{16}, ChunkBytes: 4096},
		}}, creds)
		require.NoError(t, err)
		defer d.Close()
		const n = 2000
		rows := make([]loch.Row, n)
		for i := range rows {
			v := make([]float32, 16)
			v[0] = float32(i)
			rows[i] = loch.Row{"x": loch.Tensor([]int{16}, v)}
		}
		require.NoError(t, d.Extend(ctx, rows))
		_, err = d.Commit(ctx, "rows")
		require.NoError(t, err)

		// Small windows and little read ahead: most of the epoch is
		// read after the server goes down.
		l, err := New(ctx, d.Scan(), Config{BatchSize: 16, Seed: 7, WindowRows: 64,
			PrefetchBatches: 1, PrefetchBytes: 1, FetchConcurrency: 4})
		require.NoError(t, err)
		defer l.Close()
		first, err := l.Next(ctx)
		require.NoError(t, err)
		m.Stop(t)
		back := make(chan struct{})
		go func() {
			defer close(back)
			time.Sleep(outage)
			m.Start(t)
		}()
		defer func() { <-back }() // on failure too: Start must not outlive the test
		got := slices.Clone(first.RowIDs)
		l.Release(first)
		for _, b := range drain(t, l) {
			for k, id := range b.RowIDs {
				f, _ := loch.As[float32](b.Columns["x"].Data[k*64 : (k+1)*64])
				require.Equal(t, float32(id), f[0], "row %d", id)
			}
			got = append(got, b.RowIDs...)
		}
		slices.Sort(got)
		require.Len(t, got, n, "every row once")
		for i, id := range got {
			require.EqualValues(t, i, id)
		}
		st := l.Stats()
		require.Zero(t, st.Skipped)
		require.Positive(t, st.Retries, "the outage was retried")
		require.Positive(t, st.RetryWait, "and the stall reported")
		t.Logf("outage %v: %d retries, %v retrying, %v elapsed", outage, st.Retries, st.RetryWait.Round(time.Millisecond), st.Elapsed.Round(time.Millisecond))
	})
}
