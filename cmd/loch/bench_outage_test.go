package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/schema"
)

// TestBenchRidesOutMinIOOutage: `loch bench` started while MinIO is down
// for 2 s (killed, then started again on the same port) waits for it and
// reads every row, and reports the stall (retries, retry_wait_s, and a
// line of its own in the text output). Before the storage layer's time
// budget, six attempts gave up after about 1.5 s and the bench failed.
func TestBenchRidesOutMinIOOutage(t *testing.T) {
	ctx := context.Background()
	m := testserver.OwnMinIO(t)
	b := m.Bucket(t)
	for k, v := range b.Env {
		t.Setenv(k, v)
	}
	d, err := loch.Create(ctx, b.URL, schema.Schema{Columns: []schema.Column{{Name: "n", DType: schema.Int64, ChunkBytes: 1024}}})
	require.NoError(t, err)
	const n = 500
	rows := make([]loch.Row, n)
	for i := range rows {
		rows[i] = loch.Row{"n": loch.Scalar(int64(i))}
	}
	require.NoError(t, d.Extend(ctx, rows))
	_, err = d.Commit(ctx, "rows")
	require.NoError(t, err)
	require.NoError(t, d.Close())

	m.Stop(t)
	back := make(chan struct{})
	go func() {
		defer close(back)
		time.Sleep(2 * time.Second)
		m.Start(t)
	}()
	defer func() { <-back }()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"bench", b.URL, "--json", "--batch-size", "50"}, nil, &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	var res benchResult
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res))
	require.EqualValues(t, n, res.Samples, "every row")
	require.Positive(t, res.Retries)
	require.Positive(t, res.RetryWaitS, "the stall is reported")

	var text bytes.Buffer
	printBench(&text, res, false, false)
	require.Contains(t, text.String(), "storage failures ridden out: ")
	res.RetryWaitS = 0
	text.Reset()
	printBench(&text, res, false, false)
	require.NotContains(t, text.String(), "storage failures", "no line without a stall")
}
