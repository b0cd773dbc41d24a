package loader

import (
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/mediatest"
	"github.com/lochdata/loch/schema"
)

func mediaDataset(t *testing.T, videos int) (*loch.Dataset, []string) {
	t.Helper()
	d, err := loch.Create(ctx, filepath.Join(t.TempDir(), "ds"), schema.Schema{Columns: []schema.Column{
		{Name: "clip", Kind: schema.Video, DType: schema.Uint8, SampleCompression: schema.VideoCompression, ChunkBytes: 64 << 10},
		{Name: "sound", Kind: schema.Audio, DType: schema.Float32, SampleCompression: schema.AudioCompression},
	}})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	dir := t.TempDir()
	var paths []string
	for i := 0; i < videos; i++ {
		v := mediatest.Video(t, dir, fmt.Sprintf("v%d.mp4", i), 64, 48, 25, 1+0.2*float64(i), 10)
		a := mediatest.Audio(t, dir, fmt.Sprintf("a%d.wav", i), 16000, 2, 0.5+0.1*float64(i))
		paths = append(paths, v)
		require.NoError(t, d.Append(ctx, loch.Row{
			"clip":  loch.Media(schema.VideoCompression, mediatest.Read(t, v)),
			"sound": loch.Media(schema.AudioCompression, mediatest.Read(t, a)),
		}))
	}
	_, err = d.Commit(ctx, "media")
	require.NoError(t, err)
	return d, paths
}

// TestMediaTransforms: clips and audio segments decoded in the workers,
// with seeded random starts that are the same whatever the worker count
// and, for a fixed start, frames equal to ffmpeg's own decode.
func TestMediaTransforms(t *testing.T) {
	d, paths := mediaDataset(t, 6)
	run := func(workers int, spec string) [][]byte {
		l, err := New(ctx, d.Scan(), Config{BatchSize: 4, Shuffle: "block", Seed: 7, Workers: workers,
			Transforms: map[string]string{"clip": spec, "sound": "resample=8000,segment=2000,mono"}})
		require.NoError(t, err)
		defer l.Close()
		var out [][]byte
		for _, b := range drain(t, l) {
			c, s := b.Columns["clip"], b.Columns["sound"]
			require.Equal(t, []int{b.Len(), 2000, 1}, s.Shape)
			require.Equal(t, schema.Float32, s.DType)
			out = append(out, append(append([]byte(nil), c.Data...), s.Data...))
		}
		return out
	}
	random := "clip=4:stride=2:size=32x24"
	require.Equal(t, run(1, random), run(3, random))

	l, err := New(ctx, d.Scan(), Config{BatchSize: 6, Columns: []string{"clip"}, Transforms: map[string]string{"clip": "clip=2:stride=3:start=5"}})
	require.NoError(t, err)
	defer l.Close()
	bs := drain(t, l)
	require.Len(t, bs, 1)
	c := bs[0].Columns["clip"]
	require.Equal(t, []int{6, 2, 48, 64, 3}, c.Shape)
	frame := 48 * 64 * 3
	for i, p := range paths {
		require.Equal(t, mediatest.Frame(t, p, 8), c.Data[(2*i+1)*frame:(2*i+2)*frame], "row %d", i)
	}

	l, err = New(ctx, d.Scan(), Config{BatchSize: 2, Columns: []string{"clip"}, Transforms: map[string]string{"clip": "clip=2:size=8x8:float"}})
	require.NoError(t, err)
	defer l.Close()
	for _, b := range drain(t, l) {
		require.Equal(t, []int{b.Len(), 2, 3, 8, 8}, b.Columns["clip"].Shape)
		require.Equal(t, schema.Float32, b.Columns["clip"].DType)
	}
}

// TestClipTooLong: a clip longer than a video stops the loader naming the
// row and column, or with SkipBadSamples skips that row.
func TestClipTooLong(t *testing.T) {
	d, _ := mediaDataset(t, 3) // 25, 30 and 35 frames
	spec := map[string]string{"clip": "clip=30:size=8x8"}
	l, err := New(ctx, d.Scan(), Config{BatchSize: 1, Columns: []string{"clip"}, Transforms: spec})
	require.NoError(t, err)
	defer l.Close()
	for err == nil {
		_, err = l.Next(ctx)
	}
	require.NotErrorIs(t, err, io.EOF)
	t.Log(err)
	require.ErrorContains(t, err, "clip")
	require.ErrorContains(t, err, "needs frame 29, the video has 25 frames")

	l, err = New(ctx, d.Scan(), Config{BatchSize: 1, Columns: []string{"clip"}, Transforms: spec, SkipBadSamples: true})
	require.NoError(t, err)
	defer l.Close()
	rows := 0
	for _, b := range drain(t, l) {
		rows += b.Len()
	}
	require.Equal(t, 2, rows)
}
