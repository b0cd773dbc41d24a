package hybrid_test

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/fts"
	"github.com/lochdata/loch/hybrid"
	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/query"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/vector"
)

// words of the captions: row i's caption is three words drawn from them.
var words = []string{"red", "car", "blue", "truck", "green", "bicycle", "fast", "old", "small", "scooter", "train", "boat"}

// corpus is a dataset of n rows: "vec" [dim] float32 from a Gaussian
// mixture, "caption" text, "label" int64 (row id % 5); with the vectors
// and captions as written, by row id. With nlist > 0 "vec" has an IVF
// index of nlist lists.
type corpus struct {
	ds   *loch.Dataset
	vecs [][]float32
	caps []string
}

func newCorpus(t *testing.T, r *rand.Rand, n, dim, nlist int) *corpus {
	t.Helper()
	ctx := context.Background()
	ds, err := loch.Create(ctx, filepath.Join(t.TempDir(), "ds"), schema.Schema{Columns: []schema.Column{
		{Name: "vec", DType: schema.Float32, Shape: schema.Shape{dim}},
		{Name: "caption", DType: schema.Text},
		{Name: "label", DType: schema.Int64, Shape: schema.Shape{}},
	}})
	require.NoError(t, err)
	t.Cleanup(func() { ds.Close() })
	centres := make([][]float64, 8)
	for i := range centres {
		centres[i] = make([]float64, dim)
		for j := range centres[i] {
			centres[i][j] = r.NormFloat64()
		}
	}
	c := &corpus{ds: ds}
	rows := make([]loch.Row, n)
	for i := range rows {
		v := make([]float32, dim)
		cent := centres[r.IntN(len(centres))]
		for j := range v {
			v[j] = float32(cent[j] + 0.5*r.NormFloat64())
		}
		caption := fmt.Sprintf("%s %s %s", words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))])
		c.vecs, c.caps = append(c.vecs, v), append(c.caps, caption)
		rows[i] = loch.Row{"vec": loch.Tensor([]int{dim}, v), "caption": loch.String(caption), "label": loch.Scalar(int64(i % 5))}
	}
	require.NoError(t, ds.Extend(ctx, rows))
	_, err = ds.Commit(ctx, "rows")
	require.NoError(t, err)
	if nlist > 0 {
		_, err = vector.Build(ctx, ds, "vec", vector.BuildOptions{NList: nlist, Seed: 1})
		require.NoError(t, err)
	}
	return c
}

// bruteForce is the exact fused ranking of a query: every row's cosine
// distance and every matching row's BM25 score, each side's window best,
// fused by RRF computed here, best first (ties by row id).
func (c *corpus) bruteForce(t *testing.T, q []float32, text string, window, k int, allow func(uint64) bool) []uint64 {
	t.Helper()
	type scored struct {
		id uint64
		s  float64
	}
	var vs []scored
	for id, v := range c.vecs {
		if allow(uint64(id)) {
			vs = append(vs, scored{uint64(id), -cosine(v, q)})
		}
	}
	ix, _, err := fts.NewSearcher(c.ds).Index(context.Background(), "caption", fts.Options{})
	require.NoError(t, err)
	matched, err := ix.Match(context.Background(), text, fts.Options{})
	require.NoError(t, err)
	var ts []scored
	for _, h := range matched {
		if allow(h.RowID) {
			ts = append(ts, scored{h.RowID, h.Score})
		}
	}
	fused := map[uint64]float64{}
	for _, list := range [][]scored{vs, ts} {
		slices.SortFunc(list, func(a, b scored) int {
			return cmp.Or(cmp.Compare(b.s, a.s), cmp.Compare(a.id, b.id))
		})
		for rank, x := range list[:min(window, len(list))] {
			fused[x.id] += 1 / (60 + float64(rank+1))
		}
	}
	var out []scored
	for id, s := range fused {
		out = append(out, scored{id, s})
	}
	slices.SortFunc(out, func(a, b scored) int { return cmp.Or(cmp.Compare(b.s, a.s), cmp.Compare(a.id, b.id)) })
	ids := make([]uint64, 0, k)
	for _, x := range out[:min(k, len(out))] {
		ids = append(ids, x.id)
	}
	return ids
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return 1 - dot/math.Sqrt(na*nb)
}

func overlap(a, b []uint64) float64 {
	n := 0
	for _, x := range a {
		if slices.Contains(b, x) {
			n++
		}
	}
	return float64(n) / float64(max(len(b), 1))
}

// TestHybridRecall: the hybrid answer through an IVF index and the BM25
// index against the exact fused ranking computed by brute force; exact
// vector search gives that ranking.
func TestHybridRecall(t *testing.T) {
	ctx := context.Background()
	r := testseed.Rand(t, 1)
	c := newCorpus(t, r, 3000, 16, 32)
	_, err := fts.Build(ctx, c.ds, "caption", fts.BuildOptions{})
	require.NoError(t, err)
	s := hybrid.NewSearcher(c.ds)
	const k, window, queries = 10, 40, 20
	total, exactSame := 0.0, 0
	for i := range queries {
		q := c.vecs[r.IntN(len(c.vecs))]
		text := words[r.IntN(len(words))] + " " + words[r.IntN(len(words))]
		hq := hybrid.Query{Vector: q, Text: text, K: k, Window: window}
		want := c.bruteForce(t, q, text, window, k, func(uint64) bool { return true })
		res, err := s.Search(ctx, hq, hybrid.Options{NProbe: 8})
		require.NoError(t, err)
		require.NotEmpty(t, res.VectorIndex, "query %d", i)
		require.NotEmpty(t, res.TextIndex, "query %d", i)
		total += overlap(res.RowIDs(), want)
		exact, err := s.Search(ctx, hq, hybrid.Options{Exact: true})
		require.NoError(t, err)
		if overlap(exact.RowIDs(), want) == 1 {
			exactSame++
		}
	}
	recall := total / queries
	t.Logf("hybrid recall@%d against brute force: %.3f; exact vector side equal in %d of %d", k, recall, exactSame, queries)
	require.GreaterOrEqual(t, recall, 0.9)
	require.GreaterOrEqual(t, exactSame, queries-1) // float32 against float64 distances may swap a tie
}

// TestHybridFilter: no row that fails the where filter is returned, and
// the answer is the brute-force ranking among the rows that pass.
func TestHybridFilter(t *testing.T) {
	ctx := context.Background()
	r := testseed.Rand(t, 2)
	c := newCorpus(t, r, 1500, 8, 16)
	ids, err := query.Filter(ctx, c.ds, "label = 3", query.Options{})
	require.NoError(t, err)
	allow := vector.NewRowSet(ids)
	for _, f := range []hybrid.Fusion{{}, hybrid.Weighted(0.5)} {
		q := c.vecs[7]
		res, err := hybrid.Search(ctx, c.ds, hybrid.Query{Vector: q, Text: "red car", K: 25, Fusion: f}, hybrid.Options{Allow: allow})
		require.NoError(t, err)
		require.Len(t, res.Hits, 25)
		for _, h := range res.Hits {
			require.Equal(t, uint64(3), h.RowID%5, "row %d fails label = 3", h.RowID)
			require.True(t, h.VectorRank > 0 || h.TextRank > 0)
		}
		if f.Method == hybrid.MethodRRF {
			want := c.bruteForce(t, q, "red car", 25, 25, func(id uint64) bool { return id%5 == 3 })
			require.GreaterOrEqual(t, overlap(res.RowIDs(), want), 0.9)
		}
	}
	// Either side alone, filtered too.
	res, err := hybrid.Search(ctx, c.ds, hybrid.Query{Text: "boat", K: 5}, hybrid.Options{Allow: allow})
	require.NoError(t, err)
	require.NotEmpty(t, res.Hits)
	for i, h := range res.Hits {
		require.Equal(t, uint64(3), h.RowID%5)
		require.Equal(t, i+1, h.TextRank)
		require.Zero(t, h.VectorRank)
		require.Contains(t, c.caps[h.RowID], "boat")
	}
	res, err = hybrid.Search(ctx, c.ds, hybrid.Query{Vector: c.vecs[3], K: 5}, hybrid.Options{Allow: allow})
	require.NoError(t, err)
	require.Equal(t, uint64(3), res.Hits[0].RowID)
	require.Equal(t, 1, res.Hits[0].VectorRank)
	require.Empty(t, res.TextIndex)
}

// TestHybridSelection: the answer is a selection that saves and loads
// like a query's, its rows in fused order.
func TestHybridSelection(t *testing.T) {
	ctx := context.Background()
	c := newCorpus(t, testseed.Rand(t, 3), 200, 4, 0)
	res, err := hybrid.Search(ctx, c.ds, hybrid.Query{Vector: c.vecs[0], Text: "red", K: 7, Fusion: hybrid.Weighted(0.25)}, hybrid.Options{})
	require.NoError(t, err)
	sel := res.Selection("label = 3")
	require.Equal(t, c.ds.Version(), sel.Version)
	require.Equal(t, res.RowIDs(), sel.RowIDs)
	require.Contains(t, sel.SQL, "hybrid_search('vec', [")
	require.Contains(t, sel.SQL, "'caption', 'red', k := 7, metric := 'cosine', filter := 'label = 3', fusion := 'weighted', weight := 0.25)")
	require.NoError(t, c.ds.SaveSelection(ctx, "hybrid", sel))
	got, err := c.ds.Selection(ctx, "hybrid")
	require.NoError(t, err)
	require.Equal(t, sel.RowIDs, got.RowIDs)
	require.Equal(t, sel.SQL, got.SQL)
}

func TestHybridBadInput(t *testing.T) {
	ctx := context.Background()
	c := newCorpus(t, testseed.Rand(t, 4), 20, 4, 0)
	for _, tc := range []struct {
		q    hybrid.Query
		want string
	}{
		{hybrid.Query{K: 5}, "no query: want a query vector, a text query or both"},
		{hybrid.Query{Text: "red", K: 0}, "k = 0, want k >= 1"},
		{hybrid.Query{Text: "red", K: 5, Window: 3}, "window = 3, want 0 (k) or at least k = 5"},
		{hybrid.Query{Text: "red", K: 5, Fusion: hybrid.Fusion{Method: "max"}}, `fusion "max", want rrf or weighted`},
		{hybrid.Query{Vector: []float32{1, 2}, Text: "red", K: 5}, "has 2 dimensions, the column has 4"},
		{hybrid.Query{Text: "red", TextColumn: "vec", K: 5}, `column "vec" is float32, want a text or json column`},
	} {
		_, err := hybrid.Search(ctx, c.ds, tc.q, hybrid.Options{})
		require.ErrorContains(t, err, tc.want)
	}
}

// TestHybridColumns: a column left out is the dataset's only one of its
// kind (a json column when there is no text column), else an error that
// names the candidates.
func TestHybridColumns(t *testing.T) {
	ctx := context.Background()
	ds, err := loch.Create(ctx, filepath.Join(t.TempDir(), "cols"), schema.Schema{Columns: []schema.Column{
		{Name: "a", DType: schema.Float32, Shape: schema.Shape{2}},
		{Name: "b", DType: schema.Float16, Shape: schema.Shape{2}},
		{Name: "meta", DType: schema.JSON},
	}})
	require.NoError(t, err)
	defer ds.Close()
	require.NoError(t, ds.Append(ctx, loch.Row{"a": loch.Tensor([]int{2}, []float32{1, 0}), "b": loch.Tensor([]int{2}, []uint16{0x3c00, 0}),
		"meta": loch.String(`{"tag": "red car"}`)}))
	_, err = ds.Commit(ctx, "row")
	require.NoError(t, err)
	res, err := hybrid.Search(ctx, ds, hybrid.Query{Text: "red", K: 1}, hybrid.Options{})
	require.NoError(t, err)
	require.Equal(t, "meta", res.Query.TextColumn)
	require.Len(t, res.Hits, 1)
	_, err = hybrid.Search(ctx, ds, hybrid.Query{Vector: []float32{1, 0}, K: 1}, hybrid.Options{})
	require.ErrorContains(t, err, "name the embedding column: the dataset has 2 (a, b)")
	res, err = hybrid.Search(ctx, ds, hybrid.Query{Vector: []float32{1, 0}, VectorColumn: "b", Text: "car", K: 1}, hybrid.Options{})
	require.NoError(t, err)
	require.Equal(t, hybrid.Hit{RowID: 0, Score: 2.0 / 61, VectorRank: 1, TextRank: 1, TextScore: res.Hits[0].TextScore}, res.Hits[0])
}
