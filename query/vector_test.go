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
	want, err := vector.Exact(ctx, d.Scan(), "embedding", vector.L2, [][]float32{q}, 5, vector.Options{})
	require.NoError(t, err)
	var wantIDs []uint64
	for _, h := range want[0] {
		wantIDs = append(wantIDs, h.RowID)
	}
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
	var allowed []uint64
	for i := range 300 {
		if i%4 == 2 {
			allowed = append(allowed, uint64(i))
		}
	}
	fw, err := vector.Exact(ctx, d.Scan(), "embedding", vector.Cosine, [][]float32{q}, 4, vector.Options{Allow: vector.NewRowSet(allowed)})
	require.NoError(t, err)
	var fIDs []uint64
	for _, h := range fw[0] {
		fIDs = append(fIDs, h.RowID)
	}
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
