package loch

import (
	"bytes"
	"testing"

	"github.com/lochdata/loch/internal/mediatest"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/media"
	"github.com/lochdata/loch/schema"
	"github.com/stretchr/testify/require"
)

func mediaSchema(chunkBytes int) schema.Schema {
	return schema.Schema{Columns: []schema.Column{
		{Name: "clip", Kind: schema.Video, DType: schema.Uint8, SampleCompression: schema.VideoCompression, ChunkBytes: chunkBytes},
		{Name: "sound", Kind: schema.Audio, DType: schema.Float32, SampleCompression: schema.AudioCompression, ChunkBytes: chunkBytes},
	}}
}

// TestMediaRoundTrip: container bytes come back unchanged, the header
// records shape, codec and rate, and decoded frames and samples equal
// ffmpeg's own decode.
func TestMediaRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, chunkBytes := range []int{0, 16 << 10} { // 16 KiB: videos split into pieces
		d, _ := mustCreate(t, mediaSchema(chunkBytes))
		vpath := mediatest.Video(t, dir, "v.webm", 64, 48, 25, 2, 10)
		apath := mediatest.Audio(t, dir, "a.flac", 16000, 2, 0.5)
		vb, ab := mediatest.Read(t, vpath), mediatest.Read(t, apath)
		require.NoError(t, d.Append(ctx, Row{"clip": Media(schema.VideoCompression, vb), "sound": Media(schema.AudioCompression, ab)}))
		require.NoError(t, d.Append(ctx, Row{}))
		_, err := d.Commit(ctx, "media")
		require.NoError(t, err)

		clip := mustColumn(t, d, "clip")
		enc, err := clip.ReadEncoded(ctx, 0)
		require.NoError(t, err)
		require.Equal(t, vb, enc.Data)
		require.Equal(t, schema.VideoCompression, enc.Encoding)
		require.Equal(t, []int{50, 48, 64, 3}, enc.Shape)

		m, err := clip.OpenMedia(ctx, 0)
		require.NoError(t, err)
		require.Equal(t, "webm", m.Container)
		require.Equal(t, "vp9", m.Codec)
		require.Equal(t, 25.0, m.Rate())
		require.Equal(t, 2.0, m.Duration().Seconds())

		full, err := clip.Read(ctx, 0, nil)
		require.NoError(t, err)
		require.Equal(t, mediatest.Frame(t, vpath, 37), full.Data[37*48*64*3:38*48*64*3])

		fr, err := clip.ReadFrames(ctx, 0, 20, 4, 3, 0, 0)
		require.NoError(t, err)
		require.Equal(t, []int{4, 48, 64, 3}, fr.Shape)
		require.Equal(t, mediatest.Frame(t, vpath, 29), fr.Data[3*48*64*3:])

		_, err = clip.ReadFrames(ctx, 0, 45, 4, 2, 0, 0)
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.ErrorContains(t, err, `column "clip" row 0`)
		_, err = clip.OpenMedia(ctx, 1)
		require.ErrorIs(t, err, ErrNotFound)

		sound := mustColumn(t, d, "sound")
		a, err := sound.Read(ctx, 0, nil)
		require.NoError(t, err)
		require.Equal(t, []int{8000, 2}, a.Shape)
		require.Equal(t, mediatest.Samples(t, apath, 0), a.Data)
		a8, err := sound.ReadAudio(ctx, 0, 8000)
		require.NoError(t, err)
		require.InDelta(t, 4000, a8.Shape[0], 2)
	}
}

// TestClipReadsByRange: a short clip from a long stored video reads a
// fraction of its chunk bytes.
func TestClipReadsByRange(t *testing.T) {
	d, _ := mustCreate(t, mediaSchema(0))
	vb := mediatest.Read(t, mediatest.Video(t, t.TempDir(), "long.mp4", 320, 240, 25, 20, 25))
	v, m := storeClip(t, d, vb)
	require.NoError(t, v.Frames(make([]byte, 8*112*112*3), 300, 8, 1, 112, 112))
	t.Logf("clip read %d of %d bytes", m.BytesRead(), len(vb))
	require.Less(t, m.BytesRead(), int64(len(vb))/4)
}

// TestAudioSegmentReadsByRange: a segment of a long stored wav, flac or
// mp3, on local disk and on MinIO, equals the whole decode cut at its
// start, and reads part of the stored bytes (a wav: its header and the
// segment's blocks, 4%; flac and mp3, whose demuxers search for the
// segment's frames, about half and most).
func TestAudioSegmentReadsByRange(t *testing.T) {
	dir := t.TempDir()
	names := []string{"long.wav", "long.flac", "long.mp3"}
	var files [][]byte
	for _, name := range names {
		files = append(files, mediatest.Read(t, mediatest.Audio(t, dir, name, 44100, 2, 20)))
	}
	for _, where := range testserver.Stores {
		t.Run(where, func(t *testing.T) {
			url := testserver.StoreURL(t, where)
			d, err := Create(ctx, url, mediaSchema(0))
			require.NoError(t, err)
			defer d.Close()
			for _, b := range files {
				require.NoError(t, d.Append(ctx, Row{"sound": Media(schema.AudioCompression, b)}))
			}
			_, err = d.Commit(ctx, "long")
			require.NoError(t, err)
			sound := mustColumn(t, d, "sound")
			for row, name := range names {
				whole, err := sound.ReadAudio(ctx, int64(row), 0)
				require.NoError(t, err)
				m, err := sound.OpenMedia(ctx, int64(row))
				require.NoError(t, err)
				a, err := media.OpenAudio(m, m.Bytes)
				require.NoError(t, err)
				pcm := make([]float32, 16000*2)
				k, err := a.Read(pcm, 0, 600000)
				require.NoError(t, err)
				a.Close()
				require.Equal(t, 16000, k)
				t.Logf("%s: a 16,000-sample segment read %d of %d bytes", name, m.BytesRead(), len(files[row]))
				if name == "long.wav" { // the header's block, the segment's bytes and a read-ahead
					require.LessOrEqual(t, m.BytesRead(), int64(16000*4+2*mediaReadAhead), name)
				} else { // flac and mp3 seeks search: less than the whole file
					require.Less(t, m.BytesRead(), int64(len(files[row])), name)
				}

				seg, err := sound.ReadAudioSegment(ctx, int64(row), 0, 600000, 16000)
				require.NoError(t, err)
				require.Equal(t, []int{16000, 2}, seg.Shape)
				require.Equal(t, whole.Data[600000*8:616000*8], seg.Data, name)
				tail, err := sound.ReadAudioSegment(ctx, int64(row), 0, whole.Shape[0]-10, 100)
				require.NoError(t, err)
				require.Equal(t, []int{10, 2}, tail.Shape, name)
			}
		})
	}
}

func TestBadMediaSample(t *testing.T) {
	d, _ := mustCreate(t, mediaSchema(0))
	vb := mediatest.Read(t, mediatest.Video(t, t.TempDir(), "v.mp4", 64, 48, 25, 1, 10))
	for name, row := range map[string]Row{
		"truncated": {"clip": Media(schema.VideoCompression, vb[:len(vb)/2])},
		"garbage":   {"sound": Media(schema.AudioCompression, bytes.Repeat([]byte("x"), 999))},
		"pixels":    {"clip": Sample{Shape: []int{1, 2, 2, 3}, Data: make([]byte, 12)}},
	} {
		err := d.Append(ctx, row)
		require.ErrorIs(t, err, ErrInvalidArgument, name)
	}
}

// TestClipReadsByRangeOnMinIO: the same on a real S3 server: a clip reads
// a fraction of the stored video by range requests.
func TestClipReadsByRangeOnMinIO(t *testing.T) {
	b := testserver.MinIO(t)
	d, err := Create(ctx, b.URL, mediaSchema(0))
	require.NoError(t, err)
	defer d.Close()
	path := mediatest.Video(t, t.TempDir(), "long.mp4", 320, 240, 25, 20, 25)
	vb := mediatest.Read(t, path)
	v, m := storeClip(t, d, vb)
	got := make([]byte, 2*240*320*3)
	require.NoError(t, v.Frames(got, 400, 2, 1, 0, 0))
	require.Equal(t, mediatest.Frame(t, path, 401), got[240*320*3:])
	t.Logf("clip read %d of %d bytes", m.BytesRead(), len(vb))
	require.Less(t, m.BytesRead(), int64(len(vb))/4)
}

// storeClip commits vb as the only row of d's "clip" column and opens it
// as a video read by range requests; m counts the bytes read. The video
// is closed when the test ends.
func storeClip(t *testing.T, d *Dataset, vb []byte) (*media.Video, *MediaSample) {
	t.Helper()
	require.NoError(t, d.Append(ctx, Row{"clip": Media(schema.VideoCompression, vb)}))
	_, err := d.Commit(ctx, "long")
	require.NoError(t, err)
	clip := mustColumn(t, d, "clip")
	m, err := clip.OpenMedia(ctx, 0)
	require.NoError(t, err)
	in, err := media.ProbeVideoBytes(vb)
	require.NoError(t, err)
	v, err := media.OpenVideo(m, m.Bytes, in)
	require.NoError(t, err)
	t.Cleanup(v.Close)
	return v, m
}
