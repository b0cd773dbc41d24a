package loch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// TestWritesRideOutMinIOOutage: MinIO killed for 2, 10 and 30 s (each on a
// server of its own, the three at once) while one writer ingests rows
// (Extend in batches, then Commit) and another commits rows it staged
// before, and started again on the same port: with the default retry
// policy both commits land, once each, with every row once, and Verify
// finds nothing wrong. Correctness is asserted, not times.
func TestWritesRideOutMinIOOutage(t *testing.T) {
	testserver.EachOutage(t, func(t *testing.T, m *testserver.MinIOServer, outage time.Duration) {
		ctx := context.Background()
		b := m.Bucket(t)
		creds := WithStorageSettings(storage.Settings{AccessKeyID: testserver.MinIOAccessKey, SecretAccessKey: testserver.MinIOSecretKey})
		url := func(name string) string { return fmt.Sprintf("s3://%s/%s?endpoint=%s", b.Name, name, b.Endpoint) }
		sch := schema.Schema{Columns: []schema.Column{
			{Name: "id", DType: schema.Int64, ChunkBytes: 1024},
			{Name: "x", DType: schema.Float32, Shape: schema.Shape{32}, ChunkBytes: 4096},
		}}
		const n, batches = 1200, 12
		rows := make([]Row, n)
		for i := range rows {
			v := make([]float32, 32)
			v[0] = float32(i)
			rows[i] = Row{"id": Scalar(int64(i)), "x": Tensor([]int{32}, v)}
		}

		ingest, err := Create(ctx, url("ingest"), sch, creds)
		require.NoError(t, err)
		defer ingest.Close()
		commit, err := Create(ctx, url("commit"), sch, creds)
		require.NoError(t, err)
		defer commit.Close()
		require.NoError(t, commit.Extend(ctx, rows))

		// The ingest's first batch goes in before the outage, the rest
		// and its commit during and after it; the other commit starts
		// with the server down.
		const per = n / batches
		require.NoError(t, ingest.Extend(ctx, rows[:per]))
		m.Stop(t)
		ingestErr, commitErr := make(chan error, 1), make(chan error, 1)
		go func() {
			for k := 1; k < batches; k++ {
				if err := ingest.Extend(ctx, rows[k*per:(k+1)*per]); err != nil {
					ingestErr <- err
					return
				}
			}
			_, err := ingest.Commit(ctx, "ingest")
			ingestErr <- err
		}()
		go func() {
			_, err := commit.Commit(ctx, "commit")
			commitErr <- err
		}()
		time.Sleep(outage)
		m.Start(t)
		require.NoError(t, <-ingestErr, "the ingest rode out the outage")
		require.NoError(t, <-commitErr, "the commit rode out the outage")

		for name, message := range map[string]string{"ingest": "ingest", "commit": "commit"} {
			d, err := Open(ctx, url(name), creds)
			require.NoError(t, err)
			defer d.Close()
			require.Equal(t, int64(n), d.Len(), name)
			log, err := d.Log(ctx)
			require.NoError(t, err)
			landed := 0
			for _, c := range log {
				if c.Message == message {
					landed++
				}
			}
			require.Equal(t, 1, landed, "%s: the commit landed once", name)
			col := mustColumn(t, d, "id")
			samples, err := col.ReadRange(ctx, 0, n)
			require.NoError(t, err)
			for i, s := range samples {
				v, err := As[int64](s.Data)
				require.NoError(t, err)
				require.Equal(t, []int64{int64(i)}, v, "%s: row %d", name, i)
			}
			_, problems, err := d.Verify(ctx)
			require.NoError(t, err)
			require.Empty(t, problems, name)
		}
		for name, d := range map[string]*Dataset{"ingest": ingest, "commit": commit} {
			r := storage.RetryStatsOf(d.store)
			require.Positive(t, r.Retries, "%s met the outage", name)
			require.Zero(t, r.GaveUp, name)
			t.Logf("%s, outage %v: %d retries in %d operations, %v retrying", name, outage, r.Retries, r.Retried, r.Wait.Round(time.Millisecond))
		}
	})
}
