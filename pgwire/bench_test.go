package pgwire

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/catalog"
	"github.com/lochdata/loch/query"
	"github.com/lochdata/loch/sqlcat"
)

// benchFixture is a server over a catalog with table frames of rows rows.
func benchFixture(b *testing.B, rows int) *fixture {
	f := newFixture(b, Options{MaxConns: 256})
	c := f.mustConnect(b, "alice")
	seed(b, c, rows)
	return f
}

// BenchmarkConnect opens and closes connections (SCRAM-SHA-256 over TLS,
// 4096 PBKDF2 iterations on each side), one at a time; it reports
// connections per second and the heap each open connection holds (server
// and pgx client together).
func BenchmarkConnect(b *testing.B) {
	f := benchFixture(b, 10)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		c, err := f.connect(b, "bob", password)
		require.NoError(b, err)
		c.Close(ctx)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "conns/s")
	b.StopTimer()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var open []*pgx.Conn
	for range 64 {
		c, err := f.connect(b, "bob", password)
		require.NoError(b, err)
		open = append(open, c)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/64, "heap-B/conn")
	for _, c := range open {
		c.Close(ctx)
	}
}

// BenchmarkQuery runs a point query (a statement over the table, through
// sqlcat) from 1, 8 and 64 clients, each on its own connection, and
// reports the latency p50 and p99 and the queries per second.
func BenchmarkQuery(b *testing.B) {
	f := benchFixture(b, 1000)
	defer func() { keepEngines = true }()
	for _, clients := range []int{1, 8, 64} {
		for _, keep := range []bool{false, true} {
			keepEngines = keep
			b.Run(fmt.Sprintf("clients=%d/engine=%s", clients, map[bool]string{false: "per-statement", true: "kept"}[keep]), func(b *testing.B) {
				benchQuery(b, f, clients)
			})
		}
	}
}

// benchQuery runs the point query from clients connections.
func benchQuery(b *testing.B, f *fixture, clients int) {
	runtime.GC()
	rss0 := rssBytes(b)
	conns := make([]*pgx.Conn, clients)
	for i := range conns {
		c, err := f.connect(b, "bob", password)
		require.NoError(b, err)
		defer c.Close(ctx)
		conns[i] = c
	}
	lat := make([][]time.Duration, clients)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := i; k < b.N; k += clients {
				t0 := time.Now()
				var id int64
				if err := c.QueryRow(ctx, "SELECT id FROM frames WHERE id = $1", int64(k%1000)).Scan(&id); err != nil {
					b.Error(err)
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "queries/s")
	runtime.GC()
	b.ReportMetric(float64(rssBytes(b)-rss0)/float64(clients)/1024, "RSS-KiB/conn")
}

// rssBytes is the process's resident memory (Go heap, DuckDB's and the
// rest), from /proc/self/status.
func rssBytes(b *testing.B) int64 {
	st, err := os.ReadFile("/proc/self/status")
	require.NoError(b, err)
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(b, err)
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// BenchmarkRows reads a 1,000,000-row result (id, caption) through the
// server with pgx (binary results), and, as the baseline in the same run,
// the same query through sqlcat to CSV in process (what loch sql and loch
// query do), reporting rows per second.
func BenchmarkRows(b *testing.B) {
	const n = 1_000_000
	f := benchFixture(b, n)
	q := "SELECT id, caption FROM frames"
	b.Run("pgwire", func(b *testing.B) {
		c, err := f.connect(b, "bob", password)
		require.NoError(b, err)
		defer c.Close(ctx)
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			rows, err := c.Query(ctx, q)
			require.NoError(b, err)
			got := 0
			for rows.Next() {
				got++
			}
			require.NoError(b, rows.Err())
			require.Equal(b, n, got)
		}
		b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "rows/s")
	})
	b.Run("in-process-csv", func(b *testing.B) {
		cat, err := catalog.Open(ctx, f.root)
		require.NoError(b, err)
		defer cat.Close()
		s := sqlcat.NewSession(cat)
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			r, err := s.Run(ctx, q, sqlcat.Output{W: io.Discard, Format: query.FormatCSV})
			require.NoError(b, err)
			require.Equal(b, int64(n), r.Rows)
		}
		b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "rows/s")
	})
}
