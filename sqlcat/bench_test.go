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
	n := benchRows(b)
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

// BenchmarkMerge: MERGE INTO a loch table of LOCH_BENCH_ROWS rows (default
// 1,000,000: id BIGINT, x DOUBLE, s VARCHAR) from a source of a tenth as
// many rows, half of them matching (updated in place) and half new
// (appended), one commit, beside DuckDB's own MERGE INTO of the same rows
// into an in-memory table, measured in the same run.
//
//	go test -run '^$' -bench Merge -benchtime 1x ./sqlcat
func BenchmarkMerge(b *testing.B) {
	n := benchRows(b)
	m := n / 10
	rows := fmt.Sprintf("SELECT i AS id, i / 7 AS x, 'row ' || i AS s FROM range(%d) r(i)", n)
	// every 20th row's id (matched) and as many new ids
	source := fmt.Sprintf("SELECT CASE WHEN mod(i, 2) = 0 THEN i * 10 ELSE %d + i END AS id, -1.0 AS x, 'new' AS s FROM range(%d) r(i)", n, m)
	merge := "MERGE INTO %s USING (" + source + ") s ON %[1]s.id = s.id WHEN MATCHED THEN UPDATE SET x = s.x, s = s.s WHEN NOT MATCHED THEN INSERT *"
	cat := newSession(b, filepath.Join(b.TempDir(), "lake"))
	e, err := query.New(ctx, nil, query.Options{})
	require.NoError(b, err)
	defer e.Close()
	var duck, lochT time.Duration
	for i := 0; i < b.N; i++ {
		table := fmt.Sprintf("t%d", i)
		_, err := e.Write(ctx, fmt.Sprintf("CREATE OR REPLACE TABLE %s AS %s", table, rows), query.FormatCSV, 0, io.Discard)
		require.NoError(b, err)
		start := time.Now()
		_, err = e.Write(ctx, fmt.Sprintf(merge, table), query.FormatCSV, 0, io.Discard)
		require.NoError(b, err)
		duck += time.Since(start)

		_, err = cat.Run(ctx, "CREATE TABLE "+table+" (id BIGINT, x DOUBLE, s TEXT)", Output{})
		require.NoError(b, err)
		_, err = cat.Run(ctx, "INSERT INTO "+table+" "+rows, Output{})
		require.NoError(b, err)
		start = time.Now()
		r, err := cat.Run(ctx, fmt.Sprintf(merge, table), Output{})
		require.NoError(b, err)
		lochT += time.Since(start)
		require.EqualValues(b, m/2, r.Updated)
		require.EqualValues(b, m/2, r.Inserted)
	}
	b.ReportMetric(lochT.Seconds()/float64(b.N), "loch-s/op")
	b.ReportMetric(duck.Seconds()/float64(b.N), "duckdb-s/op")
	b.ReportMetric(lochT.Seconds()/duck.Seconds(), "x-slower")
}

// benchRows is LOCH_BENCH_ROWS, default 1,000,000.
func benchRows(b *testing.B) int {
	v := os.Getenv("LOCH_BENCH_ROWS")
	if v == "" {
		return 1_000_000
	}
	n, err := strconv.Atoi(v)
	require.NoError(b, err)
	return n
}
