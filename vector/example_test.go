package vector_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/vector"
)

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "loch-vector-example")
	defer os.RemoveAll(dir)
	ds, err := loch.Create(ctx, filepath.Join(dir, "points"), schema.Schema{Columns: []schema.Column{
		{Name: "embedding", Kind: schema.Embedding, DType: schema.Float32, Shape: schema.Shape{2}},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ds.Close()
	for i := range 100 {
		_ = ds.Append(ctx, loch.Row{"embedding": loch.Tensor([]int{2}, []float32{float32(i % 10), float32(i / 10)})})
	}
	_, _ = ds.Commit(ctx, "a 10 x 10 grid")

	// Exact search, then the same through a stored index.
	q := [][]float32{{3.1, 4.2}}
	hits, _ := vector.Exact(ctx, ds.Scan(), "embedding", vector.L2, q, 3, vector.Options{})
	fmt.Println("exact:", hits[0][0].RowID, hits[0][1].RowID, hits[0][2].RowID)

	_, _ = vector.Build(ctx, ds, "embedding", vector.BuildOptions{Metric: vector.L2, NList: 4, Seed: 1})
	res, _ := vector.Search(ctx, ds, "embedding", vector.L2, q, 3, vector.Options{NProbe: 4})
	fmt.Println("index:", res.Hits[0][0].RowID, res.Hits[0][1].RowID, res.Hits[0][2].RowID, res.Index != "")
	// Output:
	// exact: 43 53 44
	// index: 43 53 44 true
}
