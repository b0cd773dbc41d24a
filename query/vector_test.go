package query

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/vector"
)

// vectorDataset has 300 rows of 8-dimensional embeddings and a label
// (row % 4).
func vectorDataset(t *testing.T) (*loch.Dataset, [][]float32) {
	t.Helper()
	d, err := loch.Create(ctx, filepath.Join(t.TempDir(), "emb"), schema.Schema{Columns: []schema.Column{
		{Name: "embedding", Kind: schema.Embedding, DType: schema.Float32, Shape: schema.Shape{8}},
		{Name: "label", DType: schema.Int64, Shape: schema.Shape{}},
	}})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	r := rand.New(rand.NewPCG(5, 5))
	var vecs [][]float32
	for i := range 300 {
		v := make([]float32, 8)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		vecs = append(vecs, v)
		require.NoError(t, d.Append(ctx, loch.Row{"embedding": loch.Tensor([]int{8}, v), "label": loch.Scalar(int64(i % 4))}))
	}
	_, err = d.Commit(ctx, "rows")
	require.NoError(t, err)
	return d, vecs
}

// exactIDs are the ids of the k rows of d nearest to q by exact search.
func exactIDs(t *testing.T, d *loch.Dataset, m vector.Metric, q []float32, k int, opts vector.Options) []uint64 {
	t.Helper()
	hits, err := vector.Exact(ctx, d.Scan(), "embedding", m, [][]float32{q}, k, opts)
	require.NoError(t, err)
	var ids []uint64
	for _, h := range hits[0] {
		ids = append(ids, h.RowID)
	}
	return ids
}

// label2Rows are the ids of vectorDataset's rows of label 2.
func label2Rows() []uint64 {
	var ids []uint64
	for i := 2; i < 300; i += 4 {
		ids = append(ids, uint64(i))
	}
	return ids
}

func sqlVector(v []float32) string {
	parts := make([]string, len(v))
	for i, f := range v {
		parts[i] = fmt.Sprint(f)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// TestVectorSearchSQL: vector_search equals vector.Exact, joins ds, is a
// selection, takes a filter, and reports bad input on one line.
func TestVectorSearchSQL(t *testing.T) {
	d, vecs := vectorDataset(t)
	q := vecs[17]
	wantIDs := exactIDs(t, d, vector.L2, q, 5, vector.Options{})
	require.Equal(t, uint64(17), wantIDs[0])

	e, err := New(ctx, d, Options{})
	require.NoError(t, err)
	defer e.Close()
	call := fmt.Sprintf("vector_search('embedding', %s, k := 5, metric := 'l2')", sqlVector(q))
	sel, err := e.Select(ctx, "SELECT _rowid, distance FROM "+call+" ORDER BY distance")
	require.NoError(t, err)
	require.Equal(t, wantIDs, sel.RowIDs)

	// Joined to ds for its columns; the result is still a selection.
	sel, err = e.Select(ctx, "SELECT ds._rowid, label FROM "+call+" v JOIN ds USING (_rowid) ORDER BY v.distance")
	require.NoError(t, err)
	require.Equal(t, wantIDs, sel.RowIDs)

	// filter := gives the top k among the rows that pass.
	fIDs := exactIDs(t, d, vector.Cosine, q, 4, vector.Options{Allow: vector.NewRowSet(label2Rows())})
	sel, err = e.Select(ctx, fmt.Sprintf("SELECT _rowid FROM vector_search('embedding', %s, k := 4, filter := 'label = 2') ORDER BY distance", sqlVector(q)))
	require.NoError(t, err)
	require.Equal(t, fIDs, sel.RowIDs)

	// With an index the answer is the same when every list is probed.
	_, err = vector.Build(ctx, d, "embedding", vector.BuildOptions{Metric: vector.L2, NList: 4})
	require.NoError(t, err)
	sel, err = e.Select(ctx, fmt.Sprintf("SELECT _rowid FROM vector_search('embedding', %s, k := 5, metric := 'l2', nprobe := 4) ORDER BY distance", sqlVector(q)))
	require.NoError(t, err)
	require.Equal(t, wantIDs, sel.RowIDs)

	for q, msg := range map[string]string{
		"SELECT * FROM vector_search('embedding', [1, 2], k := 3)":                      "has 2 dimensions, the column has 8",
		"SELECT * FROM vector_search('label', " + sqlVector(q) + ")":                    `column "label" has shape []`,
		"SELECT * FROM vector_search('embedding', " + sqlVector(q) + ", k := 0)":        "k = 0",
		"SELECT * FROM vector_search('embedding', " + sqlVector(q) + ", metric := 'x')": `metric "x"`,
	} {
		_, err := e.Select(ctx, q)
		require.ErrorContains(t, err, msg, q)
	}
}
