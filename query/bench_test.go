package query

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/loader"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// benchRows is the rows of the metadata benchmark's dataset:
// LOCH_QUERY_BENCH_ROWS, default 1,000,000 (bench/RESULTS.md has 10M).
func benchRows() int {
	if n, err := strconv.Atoi(os.Getenv("LOCH_QUERY_BENCH_ROWS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

var metaSchema = schema.Schema{Columns: []schema.Column{
	{Name: "id", DType: schema.Int64, Shape: schema.Shape{}},
	{Name: "score", DType: schema.Float32, Shape: schema.Shape{}},
	{Name: "cls", DType: schema.Int32, Shape: schema.Shape{}},
	{Name: "meta", Kind: schema.JSONKind, ChunkCompression: schema.LZ4},
}}

var (
	metaOnce sync.Once
	metaDir  string
	metaErr  error
)

// metaDataset builds (once per process) a dataset of n rows of scalar and
// json metadata, and the same rows in Parquet beside it.
func metaDataset(b *testing.B) (string, string) {
	metaOnce.Do(func() {
		n := benchRows()
		// LOCH_QUERY_BENCH_DIR keeps the dataset between runs (a directory
		// per row count), for profiling without rebuilding it each time.
		if keep := os.Getenv("LOCH_QUERY_BENCH_DIR"); keep != "" {
			metaDir = filepath.Join(keep, fmt.Sprint(n))
			if _, err := os.Stat(filepath.Join(metaDir, "meta.parquet")); err == nil {
				return
			}
			os.RemoveAll(metaDir)
			if metaErr = os.MkdirAll(metaDir, 0o755); metaErr != nil {
				return
			}
		} else if metaDir, metaErr = os.MkdirTemp("", "loch-query-bench-"); metaErr != nil {
			return
		}
		d, err := loch.Create(ctx, filepath.Join(metaDir, "meta"), metaSchema)
		if err != nil {
			metaErr = err
			return
		}
		defer d.Close()
		const batch = 100_000
		rows := make([]loch.Row, 0, batch)
		for i := range n {
			js := fmt.Sprintf(`{"src":"%c","q":%d}`, "abc"[i%3], i%10)
			rows = append(rows, loch.Row{"id": loch.Scalar(int64(i)), "score": loch.Scalar(float32(i%1000) / 1000),
				"cls": loch.Scalar(int32(i % 100)), "meta": loch.Sample{Shape: []int{len(js)}, Data: []byte(js)}})
			if len(rows) == batch || i == n-1 {
				if metaErr = d.Extend(ctx, rows); metaErr != nil {
					return
				}
				rows = rows[:0]
			}
		}
		if _, metaErr = d.Commit(ctx, "meta"); metaErr != nil {
			return
		}
		e, err := New(ctx, d, Options{})
		if err != nil {
			metaErr = err
			return
		}
		defer e.Close()
		pq := filepath.Join(metaDir, "meta.parquet")
		_, metaErr = e.conn.ExecContext(ctx, fmt.Sprintf("COPY (SELECT id, score, cls, meta FROM ds) TO %s (FORMAT parquet)", quoteString(pq)))
	})
	if metaErr != nil {
		b.Fatal(metaErr)
	}
	return filepath.Join(metaDir, "meta"), filepath.Join(metaDir, "meta.parquet")
}

// metaQueries are the metadata benchmarks' queries by name; $T stands for
// the table.
var metaQueries = map[string]string{
	"filter":  "SELECT count(*), sum(id) FROM $T WHERE score > 0.9 AND (meta->>'src') = 'b'",
	"groupby": "SELECT cls, count(*), avg(score), max(meta->>'q') FROM $T GROUP BY cls",
}

// metaEngine opens metaDataset's rows with an engine where, beside loch's
// table ds, pq reads the same rows from Parquet and native is DuckDB's own
// copy of them: the baselines of the same run.
func metaEngine(b *testing.B) (*loch.Dataset, *Engine) {
	url, pq := metaDataset(b)
	d, err := loch.Open(ctx, url)
	require.NoError(b, err)
	b.Cleanup(func() { d.Close() })
	e, err := New(ctx, d, Options{})
	require.NoError(b, err)
	b.Cleanup(func() { e.Close() })
	_, err = e.conn.ExecContext(ctx, fmt.Sprintf("CREATE VIEW pq AS SELECT * FROM read_parquet(%s); CREATE TABLE native AS SELECT * FROM pq", quoteString(pq)))
	require.NoError(b, err)
	return d, e
}

// BenchmarkMetadataQuery runs a filter and a group-by over rows of scalar
// and json metadata: loch's table, and as baselines in the same run
// DuckDB over the same rows in Parquet and in its own table.
func BenchmarkMetadataQuery(b *testing.B) {
	d, e := metaEngine(b)
	for _, q := range []string{"filter", "groupby"} {
		for _, table := range []string{"parquet", "native", "loch"} {
			name := map[string]string{"parquet": "pq", "native": "native", "loch": "ds"}[table]
			sqlText := replaceT(metaQueries[q], name)
			b.Run(q+"/"+table, func(b *testing.B) {
				for b.Loop() {
					_, err := e.Write(ctx, sqlText, FormatCSV, 0, io.Discard)
					require.NoError(b, err)
				}
				b.ReportMetric(float64(d.Len())/b.Elapsed().Seconds()*float64(b.N), "rows/s")
			})
		}
	}
}

func replaceT(q, name string) string { return strings.ReplaceAll(q, "$T", name) }

// BenchmarkMetadataQueryPaired runs the queries of BenchmarkMetadataQuery
// in rounds, each timing Parquet, the native table and loch back to back
// (in a rotating order), and reports the median of each and of the
// per-round ratio loch/Parquet: on a machine shared with other work, load
// that drifts over seconds skews the three sub-benchmarks of
// BenchmarkMetadataQuery apart, less the three timings of one round.
// b.N is the number of rounds; each round is logged.
func BenchmarkMetadataQueryPaired(b *testing.B) {
	d, e := metaEngine(b)
	for _, c := range d.Columns() {
		b.Logf("column %s: %d bytes stored, %d bytes of values", c.Name, c.StoredBytes, c.RawBytes)
	}
	tables := []string{"pq", "native", "ds"}
	for _, q := range []string{"filter", "groupby"} {
		b.Run(q, func(b *testing.B) {
			var times [3][]float64
			var ratios []float64
			round := 0
			for b.Loop() {
				var t [3]float64
				for k := range tables {
					i := (k + round) % len(tables) // rotate who goes first
					t0 := time.Now()
					_, err := e.Write(ctx, replaceT(metaQueries[q], tables[i]), FormatCSV, 0, io.Discard)
					require.NoError(b, err)
					t[i] = time.Since(t0).Seconds() * 1000
				}
				for i := range t {
					times[i] = append(times[i], t[i])
				}
				ratios = append(ratios, t[2]/t[0])
				b.Logf("round %d: parquet %.0f ms, native %.0f ms, loch %.0f ms: loch/parquet %.2f", round, t[0], t[1], t[2], t[2]/t[0])
				round++
			}
			b.ReportMetric(median(times[0]), "parquet-ms")
			b.ReportMetric(median(times[1]), "native-ms")
			b.ReportMetric(median(times[2]), "loch-ms")
			b.ReportMetric(median(ratios), "loch/parquet")
		})
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// BenchmarkMetadataOverImages runs a metadata-only query over an image
// dataset of LOCH_QUERY_BENCH_IMAGES rows (default 100,000) and reports
// the bytes it fetched against the metadata columns' stored bytes.
func BenchmarkMetadataOverImages(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("LOCH_QUERY_BENCH_IMAGES")); err == nil && v > 0 {
		n = v
	}
	url := filepath.Join(b.TempDir(), "imgs")
	st, err := storage.Open(ctx, url)
	require.NoError(b, err)
	defer st.Close()
	cs := newCounting(st)
	d := makeImagesN(b, url, cs, n, 16)
	defer d.Close()
	var meta int64
	for _, c := range d.Columns() {
		if c.Name != "image" {
			meta += c.StoredBytes
		}
	}
	for b.Loop() {
		cs.readOf(func(string) bool { return true })
		e, err := New(ctx, d, Options{})
		require.NoError(b, err)
		_, err = e.Write(ctx, "SELECT label, count(*) FROM ds WHERE (meta->>'quality') = 'high' GROUP BY label", FormatCSV, 0, io.Discard)
		require.NoError(b, err)
		e.Close()
	}
	got := cs.readOf(isChunk)
	b.ReportMetric(float64(got)/float64(meta), "fetched/metadata")
	b.ReportMetric(float64(meta), "metadata-bytes")
}

// makeImagesN is makeImages with n rows of side x side images.
func makeImagesN(b testing.TB, url string, st storage.Store, n, side int) *loch.Dataset {
	d, err := loch.Create(ctx, url, imageSchema, loch.WithStore(st))
	require.NoError(b, err)
	rows := make([]loch.Row, 0, 10_000)
	for i := range n {
		pix := make([]uint8, side*side*3)
		for k := range pix {
			pix[k] = uint8(i + k)
		}
		js, err := loch.JSON(map[string]any{"quality": []string{"low", "high"}[i%2], "i": i})
		require.NoError(b, err)
		rows = append(rows, loch.Row{"image": loch.Tensor([]int{side, side, 3}, pix), "label": loch.Scalar(int64(i % 3)), "meta": js})
		if len(rows) == cap(rows) || i == n-1 {
			require.NoError(b, d.Extend(ctx, rows))
			rows = rows[:0]
		}
	}
	_, err = d.Commit(ctx, "images")
	require.NoError(b, err)
	return d
}

// BenchmarkQueryToFirstBatch times a query over a 100,000-row image
// dataset on MinIO and the loader's first batch over its selection.
func BenchmarkQueryToFirstBatch(b *testing.B) {
	bucket := testserver.MinIO(b)
	st, err := storage.Open(ctx, bucket.URL)
	require.NoError(b, err)
	defer st.Close()
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("LOCH_QUERY_BENCH_IMAGES")); err == nil && v > 0 {
		n = v
	}
	d := makeImagesN(b, bucket.URL, st, n, 16)
	d.Close()
	for b.Loop() {
		t0 := time.Now()
		d, err := loch.Open(ctx, bucket.URL)
		require.NoError(b, err)
		sel, err := Select(ctx, d, "SELECT image, label FROM ds WHERE (meta->>'quality') = 'high' AND label IN ('cat', 'dog') ORDER BY random()", Options{})
		require.NoError(b, err)
		l, err := loader.New(ctx, d.Scan(), loader.Config{Rows: sel.RowIDs, Query: sel.SQL, Columns: sel.Columns, BatchSize: 64, Shuffle: order.ModeBlock})
		require.NoError(b, err)
		_, err = l.Next(ctx)
		require.NoError(b, err)
		b.ReportMetric(time.Since(t0).Seconds(), "s-to-first-batch")
		l.Close()
		d.Close()
	}
}
