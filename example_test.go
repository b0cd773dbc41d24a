package loch_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "loch-example")
	defer os.RemoveAll(dir)
	url := filepath.Join(dir, "robots") // or s3://bucket/robots, gs://..., az://...

	ds, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{
		{Name: "angles", DType: schema.Float32, Shape: schema.Shape{3}},
		{Name: "label", Kind: schema.ClassLabel, ClassNames: []string{"idle", "grasp"}},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ds.Close()
	for i := 0; i < 3; i++ {
		_ = ds.Append(ctx, loch.Row{
			"angles": loch.Tensor([]int{3}, []float32{float32(i), 0.5, -1}),
			"label":  loch.Scalar(int64(i % 2)),
		})
	}
	if _, err := ds.Commit(ctx, "three rows"); err != nil {
		fmt.Println(err)
		return
	}

	again, _ := loch.Open(ctx, url)
	defer again.Close()
	col, _ := again.Column("angles")
	s, _ := col.Read(ctx, 2, nil)
	v, _ := loch.As[float32](s.Data)
	fmt.Println(again.Len(), s.Shape, v)
	// Output: 3 [3] [2 0.5 -1]
}

// Writers on many machines stage their rows; one committer publishes
// them all in one commit. Committing the same descriptions again (a
// retried driver) adds nothing.
func ExampleDataset_CommitStaged() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "loch-example")
	defer os.RemoveAll(dir)
	url := filepath.Join(dir, "ds")
	ds, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{{Name: "n", DType: schema.Int64}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ds.Close()

	var descs []*loch.Staged
	for w := 0; w < 3; w++ { // on three machines
		writer, _ := loch.Open(ctx, url)
		_ = writer.Extend(ctx, []loch.Row{{"n": loch.Scalar(int64(w))}, {"n": loch.Scalar(int64(10 + w))}})
		desc, err := writer.Stage(ctx) // json.Marshal(desc) travels to the committer
		if err != nil {
			fmt.Println(err)
			return
		}
		descs = append(descs, desc)
		writer.Close()
	}
	v1, _ := ds.CommitStaged(ctx, "three writers", descs...)
	v2, _ := ds.CommitStaged(ctx, "retried", descs...)
	fmt.Println(ds.Len(), v1.Version == v2.Version, len(v2.Skipped))
	// Output: 6 true 3
}

// Two writers change one dataset at once. The second commit rebases onto
// the first by row id, unless both changed the same row: then it names
// the row and commits nothing, and the writer refreshes, drops the
// conflicting change and commits the rest.
func ExampleDataset_DiscardConflicts() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "loch-example")
	defer os.RemoveAll(dir)
	url := filepath.Join(dir, "ds")
	ds, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{{Name: "n", DType: schema.Int64}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ds.Close()
	for i := 0; i < 3; i++ {
		_ = ds.Append(ctx, loch.Row{"n": loch.Scalar(int64(i))}) // row ids 0, 1, 2
	}
	if _, err := ds.Commit(ctx, "three rows"); err != nil {
		fmt.Println(err)
		return
	}
	other, _ := loch.Open(ctx, url)
	defer other.Close()

	_ = ds.Update(ctx, 0, loch.Row{"n": loch.Scalar(int64(10))})
	_ = ds.Update(ctx, 1, loch.Row{"n": loch.Scalar(int64(11))})
	_ = other.Delete(ctx, 1)
	_, _ = other.Commit(ctx, "delete row 1")

	_, err = ds.Commit(ctx, "update rows 0 and 1")
	var ce *loch.RowConflictError
	if errors.As(err, &ce) {
		fmt.Println("conflicting rows:", ce.IDs)
		_ = ds.Refresh(ctx)
		fmt.Println("dropped:", ds.DiscardConflicts())
		_, err = ds.Commit(ctx, "update row 0")
	}
	fmt.Println(err, ds.Len())
	// Output:
	// conflicting rows: [1]
	// dropped: [1]
	// <nil> 2
}
