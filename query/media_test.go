package query

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/mediatest"
	"github.com/lochdata/loch/schema"
)

// TestMediaColumns: a video and an audio column are STRUCTs with the media
// entry of their chunk headers (container, codec, rate, duration).
func TestMediaColumns(t *testing.T) {
	d := mediaDataset(t, nil, nil)
	e, err := New(ctx, d, Options{})
	require.NoError(t, err)
	defer e.Close()
	var out bytes.Buffer
	_, err = e.Write(ctx, "SELECT clip.shape, clip.container, clip.codec, clip.rate, clip.duration, sound.shape, sound.codec, sound.rate, sound.duration FROM ds ORDER BY clip.duration NULLS LAST", FormatCSV, 0, &out)
	require.NoError(t, err)
	require.Contains(t, out.String(), `"[50,24,32,3]",mp4,h264,25,2,"[4000,2]",pcm_s16le,8000,0.5`)
}

// mediaDataset makes a dataset of a video and an audio column, then
// extra's, with a row of a clip, a sound and row's values, and an empty
// row.
func mediaDataset(t *testing.T, extra []schema.Column, row loch.Row) *loch.Dataset {
	t.Helper()
	dir := t.TempDir()
	d, err := loch.Create(ctx, filepath.Join(dir, "ds"), schema.Schema{Columns: append([]schema.Column{
		{Name: "clip", Kind: schema.Video, DType: schema.Uint8, SampleCompression: schema.VideoCompression},
		{Name: "sound", Kind: schema.Audio, DType: schema.Float32, SampleCompression: schema.AudioCompression},
	}, extra...)})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	v := mediatest.Read(t, mediatest.Video(t, dir, "v.mp4", 32, 24, 25, 2, 10))
	a := mediatest.Read(t, mediatest.Audio(t, dir, "a.wav", 8000, 2, 0.5))
	first := loch.Row{"clip": loch.Media(schema.VideoCompression, v), "sound": loch.Media(schema.AudioCompression, a)}
	for k, s := range row {
		first[k] = s
	}
	require.NoError(t, d.Append(ctx, first))
	require.NoError(t, d.Append(ctx, loch.Row{}))
	_, err = d.Commit(ctx, "media")
	require.NoError(t, err)
	return d
}
