package sqlcat

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/query"
)

// BenchmarkInsertParquet: INSERT INTO t SELECT * FROM read_parquet(...)
// of LOCH_BENCH_ROWS rows (default 1,000,000: id BIGINT, x DOUBLE, s
// VARCHAR, e FLOAT[4]) into a loch table, one commit, beside DuckDB's own
// CREATE TABLE AS from the same file (in memory) measured in the same run.
//
//	go test -run '^$' -bench InsertParquet -benchtime 1x ./sqlcat
func BenchmarkInsertParquet(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("LOCH_BENCH_ROWS"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(b, err)
	}
	dir := b.TempDir()
	cat := newSession(b, filepath.Join(dir, "lake"))
	pq := filepath.Join(dir, "rows.parquet")
	_, err := cat.Run(ctx, fmt.Sprintf("COPY (SELECT i AS id, i / 7 AS x, 'row ' || i AS s, [i, i + 1, i + 2, i + 3]::FLOAT[4] AS e FROM range(%d) r(i)) TO '%s' (FORMAT parquet)", n, pq), Output{})
	require.NoError(b, err)

	e, err := query.New(ctx, nil, query.Options{})
	require.NoError(b, err)
	defer e.Close()
	var duck, lochT time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		_, err := e.Write(ctx, fmt.Sprintf("CREATE OR REPLACE TABLE t%d AS SELECT * FROM read_parquet('%s')", i, pq), query.FormatCSV, 0, io.Discard)
		require.NoError(b, err)
		duck += time.Since(start)

		table := fmt.Sprintf("t%d", i)
		_, err = cat.Run(ctx, "CREATE TABLE "+table+" (id BIGINT, x DOUBLE, s TEXT, e FLOAT[4])", Output{})
		require.NoError(b, err)
		start = time.Now()
		r, err := cat.Run(ctx, fmt.Sprintf("INSERT INTO %s SELECT * FROM read_parquet('%s')", table, pq), Output{})
		require.NoError(b, err)
		lochT += time.Since(start)
		require.EqualValues(b, n, r.Rows)
	}
	rows := float64(n) * float64(b.N)
	b.ReportMetric(rows/lochT.Seconds(), "loch-rows/s")
	b.ReportMetric(rows/duck.Seconds(), "duckdb-ctas-rows/s")
	b.ReportMetric(lochT.Seconds()/duck.Seconds(), "x-slower")
}
