package query

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
	"github.com/lochdata/loch/vector"
)

// BenchmarkVectorReport measures vector search on N x D float32 vectors
// from a Gaussian mixture (centres N(0, 1), points centre + N(0, sigma^2);
// LOCH_VECTOR_BENCH=NxD, default 100000x128; LOCH_VECTOR_MIXTURE=CxSIGMA,
// default 1000x1; LOCH_VECTOR_NLIST, default sqrt(N)) on local disk, and prints,
// from one run: the memory-bandwidth baseline (a parallel read of the same
// bytes in memory), exact search (one query, a batch), DuckDB's brute
// force array_cosine_distance over the dataset's view and over an
// in-memory table of the same vectors, and the index (build time, size,
// recall@10 and median latency per nprobe, one query at a time). Run it
// alone: go test -run '^$' -bench VectorReport -benchtime 1x ./query
func BenchmarkVectorReport(b *testing.B) {
	n, dim, comps, sigma := 100000, 128, 1000, 1.0
	if s := os.Getenv("LOCH_VECTOR_BENCH"); s != "" {
		_, err := fmt.Sscanf(s, "%dx%d", &n, &dim)
		require.NoError(b, err)
	}
	if s := os.Getenv("LOCH_VECTOR_MIXTURE"); s != "" { // COMPONENTSxSIGMA
		_, err := fmt.Sscanf(s, "%dx%g", &comps, &sigma)
		require.NoError(b, err)
	}
	for range b.N {
		vectorReport(b, n, dim, comps, sigma)
	}
}

func vectorReport(b *testing.B, n, dim, comps int, sigma float64) {
	out := func(format string, a ...any) { fmt.Printf(format+"\n", a...) }
	r := rand.New(rand.NewPCG(1, 2))
	centres := make([][]float32, comps)
	for c := range centres {
		centres[c] = make([]float32, dim)
		for j := range centres[c] {
			centres[c][j] = float32(r.NormFloat64())
		}
	}
	draw := func(v []float32) {
		c := centres[r.IntN(comps)]
		for j := range v {
			v[j] = c[j] + float32(r.NormFloat64()*sigma)
		}
	}
	data := make([]float32, n*dim)
	for i := 0; i < n; i++ {
		draw(data[i*dim : (i+1)*dim])
	}
	raw := int64(len(data)) * 4
	out("# vector search, %d x %d float32 (%.0f MiB raw), %d components, sigma %g, GOMAXPROCS %d", n, dim, float64(raw)/(1<<20), comps, sigma, runtime.GOMAXPROCS(0))

	dir := b.TempDir()
	url := filepath.Join(dir, "emb")
	d, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{
		{Name: "embedding", Kind: schema.Embedding, DType: schema.Float32, Shape: schema.Shape{dim}},
	}})
	require.NoError(b, err)
	defer d.Close()
	start := time.Now()
	for lo := 0; lo < n; lo += 10000 {
		rows := make([]loch.Row, 0, 10000)
		for i := lo; i < min(lo+10000, n); i++ {
			rows = append(rows, loch.Row{"embedding": loch.Tensor([]int{dim}, data[i*dim:(i+1)*dim])})
		}
		require.NoError(b, d.Extend(ctx, rows))
	}
	_, err = d.Commit(ctx, "vectors")
	require.NoError(b, err)
	out("ingest: %s", time.Since(start).Round(time.Millisecond))

	// Memory bandwidth: every core sums its share of the same bytes.
	bw := medianTime(5, func() time.Duration {
		t := time.Now()
		var wg sync.WaitGroup
		p := runtime.GOMAXPROCS(0)
		sums := make([]float32, p)
		for w := range p {
			wg.Add(1)
			go func() {
				defer wg.Done()
				part := data[len(data)*w/p : len(data)*(w+1)/p]
				var s0, s1, s2, s3 float32
				for i := 0; i+4 <= len(part); i += 4 {
					s0 += part[i]
					s1 += part[i+1]
					s2 += part[i+2]
					s3 += part[i+3]
				}
				sums[w] = s0 + s1 + s2 + s3
			}()
		}
		wg.Wait()
		return time.Since(t)
	})
	gbs := func(t time.Duration) float64 { return float64(raw) / t.Seconds() / 1e9 }
	out("memory read of the same bytes (in memory, all cores): %s, %.2f GB/s", bw, gbs(bw))

	queries := make([][]float32, 200)
	for i := range queries {
		queries[i] = make([]float32, dim)
		draw(queries[i])
	}
	exactOne := medianTime(5, func() time.Duration {
		t := time.Now()
		_, err := vector.Exact(ctx, d.Scan(), "embedding", vector.Cosine, queries[:1], 10, vector.Options{})
		require.NoError(b, err)
		return time.Since(t)
	})
	out("exact search, 1 query: %s, %.2f GB/s of vectors (%.0f%% of the memory read)", exactOne, gbs(exactOne), 100*bw.Seconds()/exactOne.Seconds())
	t := time.Now()
	truth, err := vector.Exact(ctx, d.Scan(), "embedding", vector.Cosine, queries, 10, vector.Options{})
	require.NoError(b, err)
	batch := time.Since(t)
	out("exact search, batch of %d queries: %s (%s per query)", len(queries), batch.Round(time.Millisecond), (batch / time.Duration(len(queries))).Round(time.Microsecond))

	e, err := New(ctx, d, Options{})
	require.NoError(b, err)
	defer e.Close()
	lit := sqlVector(queries[0])
	duck := func(table string) time.Duration {
		q := fmt.Sprintf("SELECT _rowid FROM %s ORDER BY array_cosine_distance(embedding, %s::FLOAT[%d]) LIMIT 10", table, lit, dim)
		return medianTime(3, func() time.Duration {
			t := time.Now()
			rows, err := e.conn.QueryContext(ctx, q)
			require.NoError(b, err)
			var got []uint64
			for rows.Next() {
				var id uint64
				require.NoError(b, rows.Scan(&id))
				got = append(got, id)
			}
			require.NoError(b, rows.Close())
			require.Len(b, got, 10)
			return time.Since(t)
		})
	}
	out("DuckDB array_cosine_distance ORDER BY LIMIT 10 over the dataset (loch_scan): %s", duck("ds"))
	_, err = e.conn.ExecContext(ctx, "CREATE TABLE mem AS SELECT _rowid, embedding FROM ds")
	require.NoError(b, err)
	out("DuckDB array_cosine_distance ORDER BY LIMIT 10 over an in-memory table: %s", duck("mem"))
	_, err = e.conn.ExecContext(ctx, "DROP TABLE mem")
	require.NoError(b, err)

	start = time.Now()
	nlist := 0
	if s := os.Getenv("LOCH_VECTOR_NLIST"); s != "" {
		_, err := fmt.Sscanf(s, "%d", &nlist)
		require.NoError(b, err)
	}
	info, err := vector.Build(ctx, d, "embedding", vector.BuildOptions{Metric: vector.Cosine, Seed: 1, NList: nlist})
	require.NoError(b, err)
	build := time.Since(start)
	var size int64
	for _, prefix := range []string{"indexes/", "vectors/"} {
		require.NoError(b, d.Store().List(ctx, prefix, func(a storage.Attrs) error { size += a.Size; return nil }))
	}
	out("index build: %s, nlist %d, %.1f MiB stored (%.3f x the raw vectors)", build.Round(time.Millisecond), info.NList, float64(size)/(1<<20), float64(size)/float64(raw))
	start = time.Now()
	ix, err := vector.Open(ctx, d, "embedding", vector.Cosine, vector.Options{})
	require.NoError(b, err)
	out("index open (load into memory): %s", time.Since(start).Round(time.Millisecond))
	out("| nprobe | recall@10 | median latency (1 query) |")
	out("|---|---|---|")
	nps := []int{8, 16, ix.DefaultNProbe(), 32, 64, 128}
	slices.Sort(nps)
	for _, np := range slices.Compact(nps) {
		var lat []time.Duration
		rec := 0.0
		for i, q := range queries {
			t := time.Now()
			got, err := ix.Search(ctx, [][]float32{q}, 10, vector.Options{NProbe: np})
			lat = append(lat, time.Since(t))
			require.NoError(b, err)
			rec += overlap(truth[i], got[0])
		}
		slices.Sort(lat)
		mark := ""
		if np == ix.DefaultNProbe() {
			mark = " (default)"
		}
		out("| %d%s | %.3f | %s |", np, mark, rec/float64(len(queries)), lat[len(lat)/2].Round(time.Microsecond))
	}
	if os.Getenv("LOCH_VECTOR_FILTER") != "" {
		filterReport(b, d, ix, queries[:20], n, out)
	}
	out("%s", strings.Repeat("-", 40))
}

// filterReport compares, for filters that allow a random share of the
// rows, the index plainly pre-filtered (nprobe lists), the index as it
// searches with a filter (nprobe / share lists) and exact filtered search:
// recall@10 of the index against exact, and median latencies.
func filterReport(b *testing.B, d *loch.Dataset, ix *vector.Index, queries [][]float32, n int, out func(string, ...any)) {
	out("| rows allowed | plain pre-filter: recall@10, median | Search (nprobe / share): recall@10, median | exact median |")
	out("|---|---|---|---|")
	r := rand.New(rand.NewPCG(3, 4))
	for _, share := range []float64{0.5, 0.1, 0.02, 0.005, 0.001, 0.0001} {
		var ids []uint64
		for i := range n {
			if r.Float64() < share {
				ids = append(ids, uint64(i))
			}
		}
		allow := vector.NewRowSet(ids)
		var lp, ls, le []time.Duration
		recP, recS := 0.0, 0.0
		wants := make([][]vector.Hit, len(queries))
		for i, q := range queries {
			t := time.Now()
			want, err := vector.Exact(ctx, d.Scan(), "embedding", vector.Cosine, [][]float32{q}, 10, vector.Options{Allow: allow})
			le = append(le, time.Since(t))
			require.NoError(b, err)
			wants[i] = want[0]
		}
		runtime.GC() // the exact scans' chunk buffers are not the index's cost
		for i, q := range queries {
			t := time.Now()
			got, err := ix.Search(ctx, [][]float32{q}, 10, vector.Options{Allow: allow, PlainPrefilter: true})
			lp = append(lp, time.Since(t))
			require.NoError(b, err)
			recP += overlap(wants[i], got[0])
			t = time.Now()
			got, err = ix.Search(ctx, [][]float32{q}, 10, vector.Options{Allow: allow})
			ls = append(ls, time.Since(t))
			require.NoError(b, err)
			recS += overlap(wants[i], got[0])
		}
		med := func(x []time.Duration) time.Duration { slices.Sort(x); return x[len(x)/2].Round(time.Microsecond) }
		nq := float64(len(queries))
		out("| %d (%g%%) | %.3f, %s | %.3f, %s | %s |", allow.Len(), share*100, recP/nq, med(lp), recS/nq, med(ls), med(le).Round(time.Millisecond))
	}
}

func overlap(want, got []vector.Hit) float64 {
	n := 0
	for _, g := range got {
		for _, w := range want {
			if g.RowID == w.RowID {
				n++
				break
			}
		}
	}
	return float64(n) / float64(len(want))
}

// medianTime runs fn n times and returns the median duration.
func medianTime(n int, fn func() time.Duration) time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		ds[i] = fn()
	}
	slices.Sort(ds)
	return ds[n/2]
}
