package catalog_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/catalog"
	"github.com/lochdata/loch/schema"
)

func Example() {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, "mem://example-lake", catalog.WithCreate()) // or a path, s3://, gs://, az://
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cat.Close()

	frames, err := cat.CreateTable(ctx, "Frames", schema.Schema{Columns: []schema.Column{
		{Name: "episode", DType: schema.Int64},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range 3 {
		_ = frames.Append(ctx, loch.Row{"episode": loch.Scalar(int64(i))})
	}
	if _, err := frames.Commit(ctx, "three frames"); err != nil {
		fmt.Println(err)
		return
	}
	frames.Close()

	_, err = cat.CreateTable(ctx, "frames", schema.Schema{})
	fmt.Println("again:", err != nil && errors.Is(err, loch.ErrExists))

	tables, _ := cat.Tables(ctx) // reads the catalog's log, never the tables
	for _, t := range tables {
		fmt.Println(t.Name)
	}
	t, _ := cat.OpenTable(ctx, "frames") // names compare case-insensitively
	defer t.Close()
	fmt.Println(t.Len(), "rows")
	// Output:
	// again: true
	// Frames
	// 3 rows
}
