package sqlcat

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/schema"
)

// seedCreate is the CREATE TABLE of seed 002 (a Deeplake article), as
// written there.
const seedCreate = `
CREATE TABLE IF NOT EXISTS training_samples (
id SERIAL PRIMARY KEY,
text TEXT,
embedding VECTOR(1536),
image BLOB,
label INT,
metadata JSONB
)
`

// seedQuery is seed 002's curation query, as written there.
const seedQuery = `
SELECT embedding, image, label
FROM training_samples
WHERE metadata->>'quality' = 'high'
AND label IN (0, 1, 2)
ORDER BY RANDOM()
`

// seedVector is a 1536-dimensional embedding: sin(i * (k + 1)) / 8.
func seedVector(k int) []float64 {
	v := make([]float64, 1536)
	for i := range v {
		v[i] = math.Sin(float64(i*(k+1))) / 8
	}
	return v
}

func vectorText(v []float64) string {
	parts := make([]string, len(v))
	for i, f := range v {
		parts[i] = fmt.Sprint(float32(f))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// TestSeed002 runs seed 002's CREATE TABLE, an INSERT of rows of its
// shape (a text, a 1536-d embedding as pgvector's '[...]' text, image
// bytes, a label, JSONB metadata; the id left to SERIAL) and its queries
// as written: the curation query (->> before AND, and after it), as a
// result and as a selection, the dataloader's filter, and pgvector's
// ORDER BY embedding <=> '[...]' LIMIT k, with and without the filter.
func TestSeed002(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, seedCreate)
	run(t, s, seedCreate) // IF NOT EXISTS
	d, err := s.cat.OpenTable(ctx, "training_samples")
	require.NoError(t, err)
	sch := d.Schema()
	d.Close()
	id, _ := sch.Column("id")
	require.Equal(t, schema.KeyPrimary, id.Key)
	require.True(t, id.Serial)
	emb, _ := sch.Column("embedding")
	require.Equal(t, schema.Embedding, emb.Kind)
	require.Equal(t, schema.Shape{1536}, emb.Shape)
	img, _ := sch.Column("image")
	require.Equal(t, schema.Bytes, img.DType)
	meta, _ := sch.Column("metadata")
	require.Equal(t, schema.JSON, meta.DType)

	qualities := []string{"high", "low", "high", "high", "medium", "high"}
	labels := []string{"0", "1", "2", "7", "0", "NULL"}
	var rows []string
	for k := range qualities {
		rows = append(rows, fmt.Sprintf("('sample %d', '%s', '\\x89PNG%02d'::BLOB, %s, '{\"quality\": \"%s\", \"source\": \"seed\"}')",
			k, vectorText(seedVector(k)), k, labels[k], qualities[k]))
	}
	r := run(t, s, "INSERT INTO training_samples (text, embedding, image, label, metadata) VALUES "+strings.Join(rows, ", "))
	require.EqualValues(t, 6, r.Rows)

	got := rowsOf(t, s, seedQuery) // high quality, label 0, 1 or 2: samples 0 and 2
	require.Len(t, got, 2)
	var gotLabels []float64
	for _, r := range got {
		gotLabels = append(gotLabels, r["label"].(float64))
		require.Len(t, r["embedding"], 1536)
	}
	require.ElementsMatch(t, []float64{0, 2}, gotLabels)
	for _, q := range []string{
		"SELECT id FROM training_samples WHERE label IN (0, 1, 2) AND metadata->>'quality' = 'high' ORDER BY id",
		"SELECT id FROM training_samples WHERE metadata->>'quality' = 'high' AND label IN (0, 1, 2) ORDER BY id",
	} {
		got := rowsOf(t, s, q)
		require.Len(t, got, 2, q)
		require.EqualValues(t, 1, got[0]["id"], q)
		require.EqualValues(t, 3, got[1]["id"], q)
	}

	sel, table, err := s.Select(ctx, seedQuery, nil, "")
	require.NoError(t, err)
	require.Equal(t, "training_samples", table)
	require.Len(t, sel.RowIDs, 2)
	require.Len(t, rowsOf(t, s, "SELECT id FROM training_samples WHERE label IS NOT NULL"), 5)

	// ids were filled 1..6, and the image bytes kept
	got = rowsOf(t, s, "SELECT id, text, octet_length(image) AS n FROM training_samples ORDER BY id")
	for k, r := range got {
		require.EqualValues(t, k+1, r["id"])
		require.Equal(t, fmt.Sprintf("sample %d", k), r["text"])
		require.EqualValues(t, 6, r["n"])
	}

	// pgvector: nearest to sample 3's embedding by cosine distance
	q := vectorText(seedVector(3))
	got = rowsOf(t, s, "SELECT id, embedding <=> '"+q+"' AS d FROM training_samples ORDER BY embedding <=> '"+q+"' LIMIT 2")
	require.Len(t, got, 2)
	require.EqualValues(t, 4, got[0]["id"])
	require.InDelta(t, 0, got[0]["d"], 1e-6)
	// with the seed's filter: the nearest among high-quality samples
	got = rowsOf(t, s, "SELECT id FROM training_samples WHERE metadata->>'quality' = 'high' AND label IN (0, 1, 2) ORDER BY embedding <=> '"+q+"' LIMIT 5")
	require.Len(t, got, 2)
	require.ElementsMatch(t, []any{1.0, 3.0}, []any{got[0]["id"], got[1]["id"]})
}
