package ingest_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/ingest"
)

func ExampleJSONL() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "captions.jsonl")
	data := `{"id": 1, "caption": "a cat", "score": 0.9, "tags": ["cat"]}
{"id": 2, "caption": "two dogs", "score": 1, "source": "s3://bucket/2.jpg"}
`
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	res, err := ingest.JSONL(ctx, file, "mem://example/captions", ingest.Options{LinkFields: []string{"source"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("rows:", res.Rows, "created:", res.Created)

	d, err := loch.Open(ctx, "mem://example/captions")
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	s := d.Schema()
	for _, c := range s.Columns {
		fmt.Println(c.Name, c.Kind, c.DType)
	}
	// Output:
	// rows: 2 created: true
	// id generic int64
	// caption text text
	// score generic float64
	// tags json json
	// source link text
}

func ExampleExpandBraces() {
	names, err := ingest.ExpandBraces("s3://bucket/{train,val}-{000..002}.tar")
	if err != nil {
		log.Fatal(err)
	}
	for _, n := range names {
		fmt.Println(n)
	}
	// Output:
	// s3://bucket/train-000.tar
	// s3://bucket/train-001.tar
	// s3://bucket/train-002.tar
	// s3://bucket/val-000.tar
	// s3://bucket/val-001.tar
	// s3://bucket/val-002.tar
}
