package loader

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/schema"
)

// TestPlainBatchesMatchGeneral: plain collation (plain.go) delivers the
// batches the general path builds, column by column: images and scalar
// labels in small chunks (batches that cross chunk boundaries), codec
// none and lz4, every shuffle, with and without drop_last (a last partial
// batch), beside a column with nulls and a ragged one (collated by the
// general path), read mapped and into buffers.
func TestPlainBatchesMatchGeneral(t *testing.T) {
	for _, codec := range []schema.ChunkCodec{schema.CodecNone, schema.LZ4} {
		d := plainDataset(t, codec, 333)
		for _, mode := range []order.Mode{order.ModeNone, order.ModeBlock, order.ModeFull} {
			for _, dropLast := range []bool{false, true} {
				for _, mapped := range []bool{true, false} {
					cfg := Config{BatchSize: 20, Shuffle: mode, Seed: 7, DropLast: dropLast, Workers: 2, PrefetchBytes: 256 << 10}
					msg := fmt.Sprintf("codec %s, shuffle %s, drop_last %v, mapped %v", codec, mode, dropLast, mapped)
					general, none := plainEpoch(t, d, cfg, false, mapped)
					plain, cols := plainEpoch(t, d, cfg, true, mapped)
					require.Zero(t, none, msg)
					// image and label in every batch; score in those without a null
					require.GreaterOrEqual(t, cols, int64(2*len(plain)+1), msg)
					require.Less(t, cols, int64(3*len(plain)), msg)
					want := 333 / 20
					if !dropLast {
						want++
						require.Equal(t, 333%20, general[len(general)-1].Len(), msg)
					}
					require.Len(t, general, want, msg)
					require.Equal(t, general, plain, msg)
				}
			}
		}
	}
}

// plainEpoch drains one epoch of d with plain collation on or off.
// It returns the batches and the number of columns of them collated
// plainly.
func plainEpoch(t *testing.T, d *loch.Dataset, cfg Config, plain, mapped bool) ([]*Batch, int64) {
	t.Helper()
	defer func(p, m bool) { plainCollation, mapChunks = p, m }(plainCollation, mapChunks)
	plainCollation, mapChunks = plain, mapped
	l, err := New(ctx, d.Scan(), cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, l.Close()) }()
	return drain(t, l), l.plainCols.Load()
}

// plainDataset makes n rows of 8x8x3 images, int64 labels, a score that is
// null in every 100th row and a ragged vector, in chunks of 60 (images)
// and 128 (labels, scores) rows.
func plainDataset(t *testing.T, codec schema.ChunkCodec, n int) *loch.Dataset {
	t.Helper()
	d, err := loch.Create(ctx, filepath.Join(t.TempDir(), "ds"), schema.Schema{Columns: []schema.Column{
		{Name: "image", DType: schema.Uint8, Shape: schema.Shape{8, 8, 3}, ChunkBytes: 60 * 192, ChunkCompression: codec},
		{Name: "label", DType: schema.Int64, Shape: schema.Shape{}, ChunkBytes: 1 << 10, ChunkCompression: codec},
		{Name: "score", DType: schema.Float32, Shape: schema.Shape{2}, ChunkBytes: 1 << 10},
		{Name: "vec", DType: schema.Int32, Shape: schema.Shape{-1}, ChunkBytes: 1 << 10},
	}})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	r := rand.New(rand.NewPCG(1, 2))
	rows := make([]loch.Row, n)
	for i := range rows {
		pix := make([]byte, 8*8*3)
		for k := range pix[:len(pix)/2] {
			pix[k] = byte(r.Uint32())
		}
		vec := make([]byte, 4*(1+i%5))
		rows[i] = loch.Row{"image": loch.Tensor([]int{8, 8, 3}, pix), "label": loch.Scalar(int64(i)),
			"vec": loch.Tensor([]int{1 + i%5}, vec)}
		if i%100 != 3 {
			rows[i]["score"] = loch.Tensor([]int{2}, make([]byte, 8))
		}
	}
	require.NoError(t, d.Extend(ctx, rows))
	_, err = d.Commit(ctx, "rows")
	require.NoError(t, err)
	return d
}
