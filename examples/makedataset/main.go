// Command makedataset writes a synthetic image-classification dataset
// straight into loch (no image files in between), for loader benchmarks:
//
//	go run ./examples/makedataset -n 100000 -size 64 -codec lz4 /tmp/bench-lz4
//
// Rows hold an "image" (uint8 [size, size, 3], smooth patterns with noise,
// stored with the chunk codec -codec) and a "label" class_label.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

func main() {
	n := flag.Int("n", 100000, "rows")
	size := flag.Int("size", 64, "image width and height")
	codec := flag.String("codec", "lz4", "chunk codec: none, lz4 or zstd")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: makedataset [flags] URL")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *n, *size, schema.ChunkCodec(*codec)); err != nil {
		fmt.Fprintln(os.Stderr, "makedataset:", err)
		os.Exit(1)
	}
}

func run(url string, n, size int, codec schema.ChunkCodec) error {
	ctx := context.Background()
	d, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{
		{Name: "image", Kind: schema.Image, Shape: schema.Shape{size, size, 3}, ChunkCompression: codec},
		{Name: "label", Kind: schema.ClassLabel, ClassNames: []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"}},
	}})
	if err != nil {
		return err
	}
	defer d.Close()
	r := rand.New(rand.NewPCG(1, 1))
	rows := make([]loch.Row, 0, 512)
	for i := 0; i < n; i++ {
		pix := make([]byte, size*size*3)
		c := i % 10
		for k := range pix {
			pix[k] = byte((k/3)%size*c) + byte(r.IntN(16))
		}
		rows = append(rows, loch.Row{"image": loch.Tensor([]int{size, size, 3}, pix), "label": loch.Scalar(int64(c))})
		if len(rows) == cap(rows) || i == n-1 {
			if err := d.Extend(ctx, rows); err != nil {
				return err
			}
			rows = rows[:0]
		}
	}
	v, err := d.Commit(ctx, fmt.Sprintf("%d synthetic images", n))
	if err != nil {
		return err
	}
	fmt.Printf("wrote %d rows to %s, version %s\n", n, d.URL(), v)
	return nil
}
