package query

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/vector"
)

// TestKNNOrderBy: SELECT ... ORDER BY embedding <op> vector LIMIT k is
// answered from vector.Search (exactly without an index, through the index
// with one) and DuckDB reads only those k rows; the distances in the
// SELECT list are exact; with a WHERE, the nearest among the rows that
// pass; DESC or a WHERE calling random() is computed by DuckDB over every
// row, with the same answer as exact search.
func TestKNNOrderBy(t *testing.T) {
	d, vecs := vectorDataset(t)
	q := vecs[17]
	e, err := New(ctx, d, Options{})
	require.NoError(t, err)
	defer e.Close()
	ids := func(sql string) ([]uint64, []float64, int64) {
		t.Helper()
		before := e.emitted.Load()
		rows, done, err := e.Rows(ctx, sql)
		require.NoError(t, err, sql)
		defer done()
		var got []uint64
		var dist []float64
		for rows.Next() {
			var id uint64
			var x float64
			require.NoError(t, rows.Scan(&id, &x))
			got, dist = append(got, id), append(dist, x)
		}
		require.NoError(t, rows.Err())
		return got, dist, e.emitted.Load() - before
	}
	exact := func(m vector.Metric, k int) []uint64 { return exactIDs(t, d, m, q, k, vector.Options{}) }
	for op, m := range map[string]vector.Metric{L2DistanceOp: vector.L2, CosineDistanceOp: vector.Cosine, NegInnerProductOp: vector.Dot} {
		got, dist, emitted := ids(fmt.Sprintf("SELECT _rowid, embedding %s '%s' AS d FROM ds ORDER BY embedding %s '%s' LIMIT 5", op, sqlVector(q), op, sqlVector(q)))
		require.Equal(t, exact(m, 5), got, op)
		require.EqualValues(t, 5, emitted, "%s: DuckDB read only the 5 nearest rows", op)
		for i, id := range got {
			require.InDelta(t, exactDistance(m, vecs[id], q), dist[i], 1e-5, op)
		}
		// LIMIT with OFFSET, a qualified column, a list literal
		got, _, emitted = ids(fmt.Sprintf("SELECT t._rowid, 0::DOUBLE FROM ds t ORDER BY t.embedding %s %s LIMIT 3 OFFSET 2", op, sqlVector(q)))
		require.Equal(t, exact(m, 5)[2:], got, op)
		require.EqualValues(t, 5, emitted, op)
	}
	// A WHERE: the nearest among the rows that pass; DuckDB reads the 75
	// rows of label 2 (pushed down) for their ids, then 5 rows.
	want := exactIDs(t, d, vector.L2, q, 5, vector.Options{Allow: vector.NewRowSet(label2Rows())})
	got, _, emitted := ids(fmt.Sprintf("SELECT _rowid, 0::DOUBLE FROM ds WHERE label = 2 ORDER BY embedding <-> '%s' LIMIT 5", sqlVector(q)))
	require.Equal(t, want, got)
	require.EqualValues(t, 75+5, emitted)
	got, _, emitted = ids(fmt.Sprintf("SELECT _rowid, 0::DOUBLE FROM ds WHERE label = 9 ORDER BY embedding <-> '%s' LIMIT 5", sqlVector(q)))
	require.Empty(t, got)
	require.EqualValues(t, 0, emitted)
	// Not served by the search: DESC, a WHERE with random(); the answer is
	// DuckDB's over every row.
	_, _, emitted = ids(fmt.Sprintf("SELECT _rowid, 0::DOUBLE FROM ds ORDER BY embedding <-> '%s' DESC LIMIT 5", sqlVector(q)))
	require.EqualValues(t, 300, emitted)
	got, _, emitted = ids(fmt.Sprintf("SELECT _rowid, 0::DOUBLE FROM ds WHERE random() >= 0 ORDER BY embedding <-> '%s' LIMIT 5", sqlVector(q)))
	require.Equal(t, exact(vector.L2, 5), got)
	require.EqualValues(t, 300, emitted)

	// With an index: the index's candidates, re-ranked exactly.
	_, err = vector.Build(ctx, d, "embedding", vector.BuildOptions{Metric: vector.Cosine, NList: 8, Seed: 1})
	require.NoError(t, err)
	res, err := vector.Search(ctx, d, "embedding", vector.Cosine, [][]float32{q}, 10, vector.Options{})
	require.NoError(t, err)
	require.NotEmpty(t, res.Index)
	want = make([]uint64, len(res.Hits[0]))
	for i, h := range res.Hits[0] {
		want[i] = h.RowID
	}
	slices.SortStableFunc(want, func(a, b uint64) int {
		return cmpFloat(exactDistance(vector.Cosine, vecs[a], q), exactDistance(vector.Cosine, vecs[b], q))
	})
	got, _, emitted = ids(fmt.Sprintf("SELECT _rowid, 0::DOUBLE FROM ds ORDER BY embedding <=> '%s' LIMIT 10", sqlVector(q)))
	require.Equal(t, want, got)
	require.EqualValues(t, 10, emitted)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// exactDistance is metric m between a and b, in float64.
func exactDistance(m vector.Metric, a, b []float32) float64 {
	var dot, na, nb, l2 float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot, na, nb, l2 = dot+x*y, na+x*x, nb+y*y, l2+(x-y)*(x-y)
	}
	switch m {
	case vector.L2:
		return math.Sqrt(l2)
	case vector.Cosine:
		return 1 - dot/math.Sqrt(na*nb)
	}
	return -dot
}
