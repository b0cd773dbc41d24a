package query

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	d, err := loch.Create(ctx, filepath.Join(t.TempDir(), "pets"), schema.Schema{Columns: []schema.Column{
		{Name: "label", Kind: schema.ClassLabel, Shape: schema.Shape{}, ClassNames: []string{"cat", "dog", "fox"}},
		{Name: "meta", Kind: schema.JSONKind},
		{Name: "emb", Kind: schema.Embedding, Shape: schema.Shape{3}},
		{Name: "img", Kind: schema.Image, SampleCompression: schema.PNG},
	}})
	require.NoError(t, err)
	for i := 0; i < 10; i++ {
		js, _ := loch.JSON(map[string]any{"q": []string{"low", "high"}[i%2], "i": i})
		require.NoError(t, d.Append(ctx, loch.Row{"label": loch.Scalar(int64(i % 3)), "meta": js,
			"emb": loch.Tensor([]int{3}, []float32{float32(i), 1, 0}), "img": loch.Tensor([]int{4, 5, 3}, make([]uint8, 60))}))
	}
	_, err = d.Commit(ctx, "ten")
	require.NoError(t, err)
	e, err := New(ctx, d, Options{})
	require.NoError(t, err)
	defer e.Close()
	var buf bytes.Buffer
	_, err = e.Write(ctx, "SELECT * FROM pets WHERE meta->>'q' = 'high' ORDER BY _pos", "table", 0, &buf)
	require.NoError(t, err)
	t.Log("\n" + buf.String())
	sel, err := e.Select(ctx, "SELECT label, img WHERE label = 'dog' ORDER BY random()")
	require.NoError(t, err)
	t.Logf("%+v", sel)
	_, err = e.Select(ctx, "SELEC x")
	t.Log(err)
	_, err = e.Select(ctx, "SELECT nope FROM ds")
	t.Log(err)
	buf.Reset()
	_, err = e.Write(ctx, "SELECT label, count(*) n, avg(array_cosine_similarity(emb, [1,0,0]::FLOAT[3])) FROM ds GROUP BY ALL ORDER BY 1", "csv", 0, &buf)
	require.NoError(t, err)
	t.Log("\n" + buf.String())
}
