package hybrid_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/hybrid"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/vector"
)

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "loch-hybrid-example")
	defer os.RemoveAll(dir)
	ds, err := loch.Create(ctx, filepath.Join(dir, "pets"), schema.Schema{Columns: []schema.Column{
		{Name: "embedding", DType: schema.Float32, Shape: schema.Shape{2}},
		{Name: "caption", DType: schema.Text},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ds.Close()
	rows := []struct {
		v []float32
		c string
	}{{[]float32{1, 0}, "a cat"}, {[]float32{0.9, 0.1}, "a red car"}, {[]float32{0, 1}, "a red car and a dog"}, {[]float32{0.5, 0.5}, "a boat"}}
	for _, r := range rows {
		_ = ds.Append(ctx, loch.Row{"embedding": loch.Tensor([]int{2}, r.v), "caption": loch.String(r.c)})
	}
	_, _ = ds.Commit(ctx, "rows")

	// Near [1, 0] and about a red car, among rows 1, 2 and 3 (as
	// query.Filter would give them for an SQL condition).
	q := hybrid.Query{Vector: []float32{1, 0}, Text: "red car", K: 3}
	res, err := hybrid.Search(ctx, ds, q, hybrid.Options{Allow: vector.NewRowSet([]uint64{1, 2, 3})})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range res.Hits {
		fmt.Printf("row %d score %.5f vector rank %d text rank %d\n", h.RowID, h.Score, h.VectorRank, h.TextRank)
	}
	fmt.Println(len(res.Selection("").RowIDs), "rows in the selection")
	// Output:
	// row 1 score 0.03279 vector rank 1 text rank 1
	// row 2 score 0.03200 vector rank 3 text rank 2
	// row 3 score 0.01613 vector rank 2 text rank 0
	// 3 rows in the selection
}
