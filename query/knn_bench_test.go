package query

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/vector"
)

// BenchmarkKNNOrderBy measures pgvector's SELECT id ORDER BY embedding <=>
// '[...]' LIMIT 10 over N x D float32 vectors (LOCH_KNN_BENCH=NxD,
// default 100000x128; Gaussian, one label of 4 per row) on local disk, in
// one run: DuckDB over every row (pushdown off: the baseline), served by
// an exact search in Go (no index), and served by the IVF index; each with
// and without WHERE label = 1. Median of 5 queries. Run it alone:
// go test -run '^$' -bench KNNOrderBy -benchtime 1x ./query
func BenchmarkKNNOrderBy(b *testing.B) {
	n, dim := 100000, 128
	if s := os.Getenv("LOCH_KNN_BENCH"); s != "" {
		_, err := fmt.Sscanf(s, "%dx%d", &n, &dim)
		require.NoError(b, err)
	}
	for range b.N {
		knnReport(b, n, dim)
	}
}

func knnReport(b *testing.B, n, dim int) {
	r := rand.New(rand.NewPCG(3, 4))
	d, err := loch.Create(ctx, filepath.Join(b.TempDir(), "emb"), schema.Schema{Columns: []schema.Column{
		{Name: "embedding", Kind: schema.Embedding, DType: schema.Float32, Shape: schema.Shape{dim}},
		{Name: "label", DType: schema.Int64, Shape: schema.Shape{}},
	}})
	require.NoError(b, err)
	defer d.Close()
	vec := func() []float32 {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		return v
	}
	for lo := 0; lo < n; lo += 10000 {
		rows := make([]loch.Row, 0, 10000)
		for i := lo; i < min(lo+10000, n); i++ {
			rows = append(rows, loch.Row{"embedding": loch.Tensor([]int{dim}, vec()), "label": loch.Scalar(int64(i % 4))})
		}
		require.NoError(b, d.Extend(ctx, rows))
	}
	_, err = d.Commit(ctx, "vectors")
	require.NoError(b, err)
	e, err := New(ctx, d, Options{})
	require.NoError(b, err)
	defer e.Close()
	lit := sqlVector(vec())
	run := func(where string, pushdown bool) time.Duration {
		e.noPushdown = !pushdown
		q := fmt.Sprintf("SELECT _rowid FROM ds %s ORDER BY embedding <=> '%s' LIMIT 10", where, lit)
		return medianTime(5, func() time.Duration {
			t := time.Now()
			rows, done, err := e.Rows(ctx, q)
			require.NoError(b, err)
			k := 0
			for rows.Next() {
				k++
			}
			require.NoError(b, rows.Err())
			done()
			require.Equal(b, 10, k)
			return time.Since(t)
		})
	}
	fmt.Printf("# ORDER BY embedding <=> q LIMIT 10, %d x %d float32, GOMAXPROCS %d\n", n, dim, runtime.GOMAXPROCS(0))
	fmt.Println("| served by | no WHERE | WHERE label = 1 |")
	fmt.Println("|---|---|---|")
	row := func(name string, pushdown bool) {
		fmt.Printf("| %s | %s | %s |\n", name, run("", pushdown).Round(time.Microsecond), run("WHERE label = 1", pushdown).Round(time.Microsecond))
	}
	row("DuckDB, every row (baseline)", false)
	row("exact search in Go (no index)", true)
	_, err = vector.Build(ctx, d, "embedding", vector.BuildOptions{Metric: vector.Cosine, Seed: 1})
	require.NoError(b, err)
	row("IVF index (default nprobe)", true)
	e.noPushdown = false
	sr := vector.NewSearcher(d)
	q := make([]float32, dim)
	search := medianTime(5, func() time.Duration {
		t := time.Now()
		_, err := sr.Search(ctx, "embedding", vector.Cosine, [][]float32{q}, 10, vector.Options{})
		require.NoError(b, err)
		return time.Since(t)
	})
	fmt.Printf("vector.Searcher.Search alone (the index kept open): %s\n", search.Round(time.Microsecond))
}
