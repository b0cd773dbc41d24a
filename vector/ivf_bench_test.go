package vector

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// BenchmarkIVFReport builds the index kinds of N x D float32 vectors from
// the Gaussian mixture of query's BenchmarkVectorReport (centres N(0, 1),
// points centre + N(0, sigma^2), the same seeds) on local disk and prints
// build time, bytes, recall@10 against exact search and the median
// latency and the process CPU time of one query at a time per nprobe
// (CPU: comparable across loads, where wall time is not). With LOCH_VECTOR_DIR the
// dataset, the raw vectors (data.f32), the queries (queries.f32) and the
// exact top 10 (truth.u64) are kept there for python/bench/bench_vector.py
// (faiss on the same vectors), and a second run reuses them;
// LOCH_VECTOR_SEARCH_ONLY=1 then only opens the built indexes and
// searches, so that its peak RSS is the search's. Settings:
// LOCH_VECTOR_BENCH=NxD (100000x128), LOCH_VECTOR_MIXTURE=CxSIGMA
// (1000x1), LOCH_VECTOR_METRIC (l2), LOCH_VECTOR_KINDS (ivf-flat,ivf-pq),
// LOCH_VECTOR_NLIST (DefaultNList: 4 x sqrt(N), at most 4,096), LOCH_VECTOR_NPROBE (8,16,32,64,128; NPROBE/RERANK sets ivf-pq's Rerank too),
// LOCH_VECTOR_M (dim/8); LOCH_VECTOR_NO_RAW=1 skips data.f32. Run it alone:
//
//	go test -run '^$' -bench IVFReport -benchtime 1x -timeout 2h ./vector
func BenchmarkIVFReport(b *testing.B) {
	for range b.N {
		ivfReport(b)
	}
}

type ivfBench struct {
	n, dim, comps int
	sigma         float64
	metric        Metric
	dir           string
	ds            *loch.Dataset
	queries       [][]float32
	truth         [][]uint64
	out           func(string, ...any)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func ivfReport(b *testing.B) {
	ctx := context.Background()
	e := &ivfBench{metric: Metric(envOr("LOCH_VECTOR_METRIC", "l2")), out: func(f string, a ...any) { fmt.Printf(f+"\n", a...) }}
	_, err := fmt.Sscanf(envOr("LOCH_VECTOR_BENCH", "100000x128"), "%dx%d", &e.n, &e.dim)
	require.NoError(b, err)
	_, err = fmt.Sscanf(envOr("LOCH_VECTOR_MIXTURE", "1000x1"), "%dx%g", &e.comps, &e.sigma)
	require.NoError(b, err)
	e.dir = envOr("LOCH_VECTOR_DIR", b.TempDir())
	e.out("# ivf report: %d x %d float32, %d components, sigma %g, metric %s, GOMAXPROCS %d", e.n, e.dim, e.comps, e.sigma, e.metric, runtime.GOMAXPROCS(0))
	e.prepare(ctx, b)
	defer e.ds.Close()
	nlist, _ := strconv.Atoi(os.Getenv("LOCH_VECTOR_NLIST"))
	if nlist == 0 {
		nlist = DefaultNList(int64(e.n))
	}
	subq, _ := strconv.Atoi(os.Getenv("LOCH_VECTOR_M"))
	searchOnly := os.Getenv("LOCH_VECTOR_SEARCH_ONLY") != ""
	for _, kind := range strings.Split(envOr("LOCH_VECTOR_KINDS", "ivf-flat,ivf-pq"), ",") {
		if !searchOnly {
			runtime.GC()
			t, cpu0 := time.Now(), cpuTime()
			info, err := Build(ctx, e.ds, "embedding", BuildOptions{Metric: e.metric, NList: nlist, Seed: 1, Kind: kind, M: subq})
			require.NoError(b, err)
			raw := float64(e.n * e.dim * 4)
			e.out("%s build CPU time %.1f s (%.2f us a row)", kind, (cpuTime() - cpu0).Seconds(), float64((cpuTime()-cpu0).Microseconds())/float64(e.n))
			e.out("%s build: %s (%.2f us a row), nlist %d, m %d, %.1f MiB written (%.3f x raw), codes and ids %.3f x raw, peak RSS so far %s",
				kind, time.Since(t).Round(time.Millisecond), float64(time.Since(t).Microseconds())/float64(e.n), info.NList, info.M,
				float64(info.Bytes)/(1<<20), float64(info.Bytes)/raw, float64(int64(e.n)*int64(8+info.M))/raw, peakRSS())
		}
		e.search(ctx, b, kind)
	}
}

// prepare makes (or reopens) the dataset, the queries and the truth.
func (e *ivfBench) prepare(ctx context.Context, b *testing.B) {
	url := filepath.Join(e.dir, "ds")
	if _, err := os.Stat(filepath.Join(e.dir, "truth.u64")); err == nil {
		ds, err := loch.Open(ctx, url)
		require.NoError(b, err)
		e.ds = ds
		e.queries = chunked(readF32(b, filepath.Join(e.dir, "queries.f32")), e.dim)
		tr := readU64(b, filepath.Join(e.dir, "truth.u64"))
		for i := 0; i < len(tr); i += 10 {
			e.truth = append(e.truth, tr[i:i+10])
		}
		return
	}
	r := rand.New(rand.NewPCG(1, 2))
	centres := make([][]float32, e.comps)
	for c := range centres {
		centres[c] = make([]float32, e.dim)
		for j := range centres[c] {
			centres[c][j] = float32(r.NormFloat64())
		}
	}
	draw := func(v []float32) {
		c := centres[r.IntN(e.comps)]
		for j := range v {
			v[j] = c[j] + float32(r.NormFloat64()*e.sigma)
		}
	}
	ds, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{
		{Name: "embedding", Kind: schema.Embedding, DType: schema.Float32, Shape: schema.Shape{e.dim}},
	}})
	require.NoError(b, err)
	e.ds = ds
	raw := filepath.Join(e.dir, "data.f32")
	if os.Getenv("LOCH_VECTOR_NO_RAW") != "" { // no faiss run: not worth the disk
		raw = os.DevNull
	}
	f, err := os.Create(raw)
	require.NoError(b, err)
	buf := make([]float32, 10000*e.dim)
	for lo := 0; lo < e.n; lo += 10000 {
		rows := make([]loch.Row, 0, 10000)
		for i := lo; i < min(lo+10000, e.n); i++ {
			v := buf[(i-lo)*e.dim : (i-lo+1)*e.dim]
			draw(v)
			rows = append(rows, loch.Row{"embedding": loch.Tensor([]int{e.dim}, v)})
		}
		require.NoError(b, ds.Extend(ctx, rows))
		require.NoError(b, binary.Write(f, binary.LittleEndian, buf[:len(rows)*e.dim]))
	}
	require.NoError(b, f.Close())
	_, err = ds.Commit(ctx, "vectors")
	require.NoError(b, err)
	e.queries = make([][]float32, 200)
	for i := range e.queries {
		e.queries[i] = make([]float32, e.dim)
		draw(e.queries[i])
	}
	e.exactTruth(ctx, b)
}

// exactTruth finds the exact top 10 and writes queries and truth.
func (e *ivfBench) exactTruth(ctx context.Context, b *testing.B) {
	t := time.Now()
	hits, err := Exact(ctx, e.ds.Scan(), "embedding", e.metric, e.queries, 10, Options{})
	require.NoError(b, err)
	e.out("exact search, batch of %d: %s", len(e.queries), time.Since(t).Round(time.Millisecond))
	var tr []uint64
	for _, h := range hits {
		ids := make([]uint64, 10)
		for i, x := range h {
			ids[i] = x.RowID
		}
		e.truth = append(e.truth, ids)
		tr = append(tr, ids...)
	}
	writeLE(b, filepath.Join(e.dir, "queries.f32"), slices.Concat(e.queries...))
	writeLE(b, filepath.Join(e.dir, "truth.u64"), tr)
}

// search opens the index (it is of kind) and reports recall and latency
// per nprobe.
func (e *ivfBench) search(ctx context.Context, b *testing.B, kind string) {
	runtime.GC()
	t := time.Now()
	ix, err := Open(ctx, e.ds, "embedding", e.metric, Options{})
	require.NoError(b, err)
	require.Equal(b, kind, ix.desc.Type)
	e.out("%s open: %s, RSS %s", kind, time.Since(t).Round(time.Millisecond), rss("VmRSS"))
	e.out("| %s nprobe | rerank | recall@10 | median latency (1 query) | CPU a query |", kind)
	e.out("|---|---|---|---|---|")
	for _, s := range strings.Split(envOr("LOCH_VECTOR_NPROBE", "8,16,32,64,128"), ",") {
		np, rr := 0, 0
		_, err := fmt.Sscanf(s+"/0", "%d/%d", &np, &rr)
		require.NoError(b, err)
		var lat []time.Duration
		rec, cpu0 := 0.0, cpuTime()
		for i, q := range e.queries {
			t := time.Now()
			got, err := ix.Search(ctx, [][]float32{q}, 10, Options{NProbe: np, Rerank: rr})
			lat = append(lat, time.Since(t))
			require.NoError(b, err)
			for _, h := range got[0] {
				if slices.Contains(e.truth[i], h.RowID) {
					rec++
				}
			}
		}
		cpu := (cpuTime() - cpu0) / time.Duration(len(e.queries)) // the process's, all goroutines and GC: steadier than wall under load
		slices.Sort(lat)
		e.out("| %d | %d | %.3f | %s | %s |", np, rr, rec/float64(10*len(e.queries)), lat[len(lat)/2].Round(time.Microsecond), cpu.Round(time.Microsecond))
	}
	e.out("%s after searching: RSS %s, peak RSS of the process %s", kind, rss("VmRSS"), peakRSS())
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func peakRSS() string { return rss("VmHWM") }

// rss reads a field of /proc/self/status ("" where there is none).
func rss(field string) string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func chunked(v []float32, dim int) [][]float32 {
	var out [][]float32
	for i := 0; i+dim <= len(v); i += dim {
		out = append(out, v[i:i+dim])
	}
	return out
}

func writeLE[T float32 | uint64](b *testing.B, path string, v []T) {
	f, err := os.Create(path)
	require.NoError(b, err)
	require.NoError(b, binary.Write(f, binary.LittleEndian, v))
	require.NoError(b, f.Close())
}

func readF32(b *testing.B, path string) []float32 {
	raw, err := os.ReadFile(path)
	require.NoError(b, err)
	v := make([]float32, len(raw)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return v
}

func readU64(b *testing.B, path string) []uint64 {
	raw, err := os.ReadFile(path)
	require.NoError(b, err)
	v := make([]uint64, len(raw)/8)
	for i := range v {
		v[i] = binary.LittleEndian.Uint64(raw[8*i:])
	}
	return v
}

// BenchmarkIVFQuery searches one query at a time, the queries of the
// index BenchmarkIVFReport left in LOCH_VECTOR_DIR (same LOCH_VECTOR_BENCH
// and LOCH_VECTOR_METRIC; the first of LOCH_VECTOR_NPROBE), through the
// open index (Index) and through what the C ABI's held search makes
// (Searcher: SearchOpen). Beside wall time it reports the process's CPU
// time a query (cpu-ns/op, getrusage), which a loaded machine does not
// inflate, and recall@10; python/bench/bench_ivf_latency.py runs it
// between its rounds of faiss and of Python's ds.search on the same
// vectors. Skipped without LOCH_VECTOR_DIR.
func BenchmarkIVFQuery(b *testing.B) {
	dir := os.Getenv("LOCH_VECTOR_DIR")
	if dir == "" {
		b.Skip("LOCH_VECTOR_DIR unset: run BenchmarkIVFReport with it first")
	}
	ctx := context.Background()
	e := &ivfBench{dir: dir, metric: Metric(envOr("LOCH_VECTOR_METRIC", "l2"))}
	_, err := fmt.Sscanf(envOr("LOCH_VECTOR_BENCH", "100000x128"), "%dx%d", &e.n, &e.dim)
	require.NoError(b, err)
	e.prepare(ctx, b)
	defer e.ds.Close()
	np, _ := strconv.Atoi(strings.Split(envOr("LOCH_VECTOR_NPROBE", "0"), ",")[0])
	opts := Options{NProbe: np}
	ix, err := Open(ctx, e.ds, "embedding", e.metric, opts)
	require.NoError(b, err)
	s := NewSearcher(e.ds)
	_, err = s.Search(ctx, "embedding", e.metric, e.queries[:1], 10, opts) // opens the index it holds
	require.NoError(b, err)
	paths := []struct {
		name   string
		search func(q [][]float32) []Hit
	}{
		{"Index", func(q [][]float32) []Hit {
			hits, err := ix.Search(ctx, q, 10, opts)
			require.NoError(b, err)
			return hits[0]
		}},
		{"Searcher", func(q [][]float32) []Hit {
			res, ok := s.SearchOpen(ctx, "embedding", e.metric, q, 10, opts)
			require.True(b, ok)
			return res.Hits[0]
		}},
	}
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			found := 0
			cpu0 := cpuTime()
			for i := range b.N {
				j := i % len(e.queries)
				for _, h := range p.search(e.queries[j : j+1]) {
					if slices.Contains(e.truth[j], h.RowID) {
						found++
					}
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(found)/float64(10*b.N), "recall@10")
		})
	}
}
