package fts_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/fts"
	"github.com/lochdata/loch/schema"
)

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "loch-fts-example")
	defer os.RemoveAll(dir)
	ds, err := loch.Create(ctx, filepath.Join(dir, "captions"), schema.Schema{Columns: []schema.Column{
		{Name: "caption", DType: schema.Text},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ds.Close()
	for _, c := range []string{"a red car", "a blue truck", "red cars and red trucks", "a green bicycle"} {
		_ = ds.Append(ctx, loch.Row{"caption": loch.String(c)})
	}
	_, _ = ds.Commit(ctx, "captions")

	// Every row analysed, then the same through a stored index.
	res, _ := fts.Search(ctx, ds, "caption", "red", 10, fts.Options{})
	fmt.Println("no index:", res.Hits[0].RowID, res.Hits[1].RowID)

	_, _ = fts.Build(ctx, ds, "caption", fts.BuildOptions{})
	res, _ = fts.Search(ctx, ds, "caption", `"red car" OR truck -blue`, 10, fts.Options{})
	for _, h := range res.Hits {
		fmt.Printf("%d %.3f\n", h.RowID, h.Score)
	}
	fmt.Println("index:", res.Index != "")
	// Output:
	// no index: 2 0
	// 2 1.670
	// 0 1.510
	// index: true
}
