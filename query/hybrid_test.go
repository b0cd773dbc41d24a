package query

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/hybrid"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/vector"
)

// TestHybridSearchSQL: hybrid_search answers as hybrid.Search does, with
// its filter, fusion and either side alone; a result's SQL (its
// selection's text) runs and gives the same rows; bad input is one line.
func TestHybridSearchSQL(t *testing.T) {
	d, err := loch.Create(ctx, filepath.Join(t.TempDir(), "hyb"), schema.Schema{Columns: []schema.Column{
		{Name: "embedding", DType: schema.Float32, Shape: schema.Shape{4}},
		{Name: "caption", DType: schema.Text},
		{Name: "label", DType: schema.Int64, Shape: schema.Shape{}},
	}})
	require.NoError(t, err)
	defer d.Close()
	r := rand.New(rand.NewPCG(3, 3))
	words := []string{"red", "car", "blue", "truck", "boat"}
	var vecs [][]float32
	for i := range 200 {
		v := []float32{float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())}
		vecs = append(vecs, v)
		caption := words[r.IntN(5)] + " " + words[r.IntN(5)]
		require.NoError(t, d.Append(ctx, loch.Row{"embedding": loch.Tensor([]int{4}, v), "caption": loch.String(caption), "label": loch.Scalar(int64(i % 4))}))
	}
	_, err = d.Commit(ctx, "rows")
	require.NoError(t, err)
	e, err := New(ctx, d, Options{})
	require.NoError(t, err)
	defer e.Close()

	q := hybrid.Query{Vector: vecs[9], Text: "red car", K: 8, Window: 20, Fusion: hybrid.Weighted(0.3)}
	want, err := hybrid.Search(ctx, d, q, hybrid.Options{Allow: vector.NewRowSet(filterIDs(t, d, "label = 1"))})
	require.NoError(t, err)
	call := fmt.Sprintf("hybrid_search('embedding', %s, 'caption', 'red car', k := 8, rank_window := 20, filter := 'label = 1', fusion := 'weighted', weight := 0.3)", sqlVector(vecs[9]))
	rows := queryRows(t, e, "SELECT _rowid, rank, score, vector_rank, text_rank FROM "+call+" ORDER BY rank")
	require.Len(t, rows, len(want.Hits))
	for i, h := range want.Hits {
		require.Equal(t, h.RowID, rows[i][0])
		require.Equal(t, int64(i+1), rows[i][1])
		require.InDelta(t, h.Score, rows[i][2], 1e-6) // the vector crosses as text
		require.Equal(t, h.RowID%4, uint64(1))
	}
	// The result's own SQL runs, as a selection, in fused order.
	sel, err := e.Select(ctx, want.SQL("label = 1"))
	require.NoError(t, err)
	require.Equal(t, want.RowIDs(), sel.RowIDs)
	// Joined to ds.
	sel, err = e.Select(ctx, "SELECT ds._rowid, label FROM "+call+" h JOIN ds USING (_rowid) ORDER BY h.rank")
	require.NoError(t, err)
	require.Equal(t, want.RowIDs(), sel.RowIDs)

	// The text side alone (NULL vector, the column found), RRF.
	text, err := hybrid.Search(ctx, d, hybrid.Query{Text: "boat", K: 5}, hybrid.Options{})
	require.NoError(t, err)
	rows = queryRows(t, e, "SELECT _rowid, vector_rank, distance, text_rank FROM hybrid_search('', NULL, '', 'boat', k := 5) ORDER BY rank")
	require.Len(t, rows, 5)
	for i, h := range text.Hits {
		require.Equal(t, []any{h.RowID, nil, nil, int64(i + 1)}, rows[i])
	}

	for q, msg := range map[string]string{
		"SELECT * FROM hybrid_search('embedding', NULL, 'caption', NULL)":                                     "no query",
		"SELECT * FROM hybrid_search('embedding', [1, 2], 'caption', 'red')":                                  "has 2 dimensions, the column has 4",
		"SELECT * FROM hybrid_search('embedding', NULL, 'caption', 'red', fusion := 'max')":                   `fusion "max", want rrf or weighted`,
		"SELECT * FROM hybrid_search('embedding', NULL, 'caption', 'red', weight := 2, fusion := 'weighted')": "weight = 2, want a number in [0, 1]",
		"SELECT * FROM hybrid_search('embedding', NULL, 'label', 'red')":                                      "want a text or json column",
		"SELECT * FROM hybrid_search('embedding', NULL, 'caption', 'red', k := 0)":                            "k = 0",
	} {
		_, err := e.Select(ctx, q)
		require.ErrorContains(t, err, msg, q)
	}
}

func filterIDs(t *testing.T, d *loch.Dataset, where string) []uint64 {
	t.Helper()
	ids, err := Filter(ctx, d, where, Options{})
	require.NoError(t, err)
	return ids
}
