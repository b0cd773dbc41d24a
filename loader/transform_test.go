package loader

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// TestTransforms streams jpeg images through a decode/crop/normalize/CHW
// pipeline: float32 [batch, 3, 16, 16] batches, the same for the same seed
// and epoch whatever the concurrency.
func TestTransforms(t *testing.T) {
	d, err := loch.Create(ctx, filepath.Join(t.TempDir(), "ds"), schema.Schema{Columns: []schema.Column{
		{Name: "img", Kind: schema.Image, SampleCompression: schema.JPEG, ChunkBytes: 8192},
	}})
	require.NoError(t, err)
	defer d.Close()
	for i := 0; i < 40; i++ {
		m := image.NewRGBA(image.Rect(0, 0, 40+i, 30+i))
		for y := 0; y < m.Rect.Dy(); y++ {
			for x := 0; x < m.Rect.Dx(); x++ {
				m.Set(x, y, color.RGBA{uint8(x * 5), uint8(y * 7), uint8(i * 6), 255})
			}
		}
		var buf bytes.Buffer
		require.NoError(t, jpeg.Encode(&buf, m, &jpeg.Options{Quality: 90}))
		require.NoError(t, d.Append(ctx, loch.Row{"img": loch.Encoded(schema.JPEG, buf.Bytes(), []int{30 + i, 40 + i, 3})}))
	}
	_, err = d.Commit(ctx, "jpegs")
	require.NoError(t, err)
	run := func(workers int) [][]byte {
		l, err := New(ctx, d.Scan(), Config{BatchSize: 8, Shuffle: "block", Seed: 1, Workers: workers,
			Transforms: map[string]string{"img": "resize=20,random_crop=16,flip,to_float,normalize=imagenet,chw"}})
		require.NoError(t, err)
		defer l.Close()
		var out [][]byte
		for _, b := range drain(t, l) {
			tn := b.Columns["img"]
			require.Equal(t, schema.Float32, tn.DType)
			require.Equal(t, []int{b.Len(), 3, 16, 16}, tn.Shape)
			out = append(out, append([]byte(nil), tn.Data...))
		}
		return out
	}
	require.Equal(t, run(1), run(4))
	_, err = New(ctx, d.Scan(), Config{Transforms: map[string]string{"img": "explode"}})
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
}

// TestEncoded delivers a jpeg column's samples as their stored bytes
// (Config.Encoded), byte for byte, nulls as null items, and refuses an
// encoded column that is not loaded, not png or jpeg, or transformed.
func TestEncoded(t *testing.T) {
	d, err := loch.Create(ctx, filepath.Join(t.TempDir(), "ds"), schema.Schema{Columns: []schema.Column{
		{Name: "img", Kind: schema.Image, SampleCompression: schema.JPEG, ChunkBytes: 8192},
		{Name: "n", DType: schema.Int64, Shape: schema.Shape{}},
	}})
	require.NoError(t, err)
	defer d.Close()
	var stored [][]byte
	for i := 0; i < 20; i++ {
		m := image.NewGray(image.Rect(0, 0, 10+i, 8))
		var buf bytes.Buffer
		require.NoError(t, jpeg.Encode(&buf, m, nil))
		row := loch.Row{"n": loch.Scalar(int64(i))}
		if i%7 == 3 {
			stored = append(stored, nil)
		} else {
			stored = append(stored, buf.Bytes())
			row["img"] = loch.Encoded(schema.JPEG, buf.Bytes(), []int{8, 10 + i, 1})
		}
		require.NoError(t, d.Append(ctx, row))
	}
	_, err = d.Commit(ctx, "jpegs")
	require.NoError(t, err)
	l, err := New(ctx, d.Scan(), Config{BatchSize: 6, Shuffle: "none", Encoded: []string{"img"}})
	require.NoError(t, err)
	defer l.Close()
	var got [][]byte
	for _, b := range drain(t, l) {
		tn := b.Columns["img"]
		require.Equal(t, schema.Bytes, tn.DType)
		require.Equal(t, []int{b.Len()}, tn.Shape)
		for k, it := range tn.Items {
			require.Equal(t, stored[b.RowIDs[k]] == nil, tn.Null != nil && tn.Null[k])
			got = append(got, it)
		}
	}
	require.Len(t, got, len(stored))
	for i := range stored {
		require.Equal(t, len(stored[i]), len(got[i]), "row %d", i)
		require.True(t, bytes.Equal(stored[i], got[i]), "row %d", i)
	}
	for _, bad := range []Config{
		{Encoded: []string{"nope"}},
		{Encoded: []string{"n"}},
		{Encoded: []string{"img"}, Transforms: map[string]string{"img": "decode"}},
	} {
		_, err := New(ctx, d.Scan(), bad)
		require.ErrorIs(t, err, loch.ErrInvalidArgument, "%+v", bad)
	}
}
