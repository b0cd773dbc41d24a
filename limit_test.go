package loch

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/imaging/imagingtest"
	"github.com/lochdata/loch/internal/decodelimit/decodelimittest"
	"github.com/lochdata/loch/internal/mediatest"
	"github.com/lochdata/loch/schema"
)

// A png declaring 30000x30000 is refused by a write (no reader could
// decode it) and, stored by a writer with no limit, by every whole-sample
// read, from the shape its chunk header records: ErrTooLarge naming the
// column, the row and both sizes, not ErrCorrupt, without allocating its
// pixels.
func TestImageDecodeLimit(t *testing.T) {
	bomb := imagingtest.PNGBomb(30000, 30000)
	sch := schema.Schema{Columns: []schema.Column{
		{Name: "image", Kind: schema.Image, DType: schema.Uint8, Shape: schema.Shape{-1, -1, 1}, SampleCompression: schema.PNG},
	}}
	decodelimittest.Set(t, 512<<20)
	d, _ := mustCreate(t, sch)
	err := d.Append(ctx, Row{"image": Encoded(schema.PNG, bomb, nil)})
	require.ErrorIs(t, err, ErrTooLarge)
	require.ErrorContains(t, err, `column "image": png image of 30000x30000 pixels, 1 channel: 900000000 bytes, more than the decode limit of 536870912 bytes`)

	decodelimittest.Set(t, 0)
	require.NoError(t, d.Append(ctx, Row{"image": Encoded(schema.PNG, bomb, nil)}))
	require.NoError(t, d.Append(ctx, Row{"image": Encoded(schema.PNG, imagingtest.PNGBomb(40, 30), nil)}))
	_, err = d.Commit(ctx, "a bomb")
	require.NoError(t, err)

	decodelimittest.Set(t, 512<<20)
	c := mustColumn(t, d, "image")
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	_, err = c.Read(ctx, 0, nil)
	require.ErrorIs(t, err, ErrTooLarge)
	require.NotErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, `column "image" row 0: png image sample of shape [30000 30000 1]: 900000000 bytes, more than the decode limit of 536870912 bytes`)
	_, err = c.ReadRange(ctx, 0, 2)
	require.ErrorIs(t, err, ErrTooLarge)
	enc, err := c.ReadEncoded(ctx, 0)
	require.NoError(t, err, "the stored bytes are still served as they are")
	_, err = enc.Decode()
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = enc.DecodeInto(make([]byte, 10))
	require.ErrorIs(t, err, ErrTooLarge)
	runtime.ReadMemStats(&b)
	require.Less(t, b.TotalAlloc-a.TotalAlloc, uint64(64<<20))

	s, err := c.Read(ctx, 1, nil)
	require.NoError(t, err)
	require.Equal(t, []int{30, 40, 1}, s.Shape)
}

// Video and audio: a whole-sample read decodes frames x height x width x
// 3 (samples x channels x 4) bytes, refused past the limit, while a clip
// or a segment within it is read.
func TestMediaDecodeLimit(t *testing.T) {
	dir := t.TempDir()
	d, _ := mustCreate(t, mediaSchema(0))
	vb := mediatest.Read(t, mediatest.Video(t, dir, "v.mp4", 64, 48, 25, 2, 10))
	ab := mediatest.Read(t, mediatest.Audio(t, dir, "a.flac", 8000, 2, 1))
	require.NoError(t, d.Append(ctx, Row{"clip": Media(schema.VideoCompression, vb), "sound": Media(schema.AudioCompression, ab)}))
	_, err := d.Commit(ctx, "media")
	require.NoError(t, err)

	const frame = 48 * 64 * 3
	decodelimittest.Set(t, 10*frame) // 10 of the 50 frames
	clip := mustColumn(t, d, "clip")
	_, err = clip.Read(ctx, 0, nil)
	require.ErrorIs(t, err, ErrTooLarge)
	require.NotErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, `column "clip" row 0: video sample of shape [50 48 64 3]: 460800 bytes, more than the decode limit of 92160 bytes`)
	fr, err := clip.ReadFrames(ctx, 0, 5, 10, 1, 0, 0)
	require.NoError(t, err)
	require.Equal(t, []int{10, 48, 64, 3}, fr.Shape)
	_, err = clip.ReadFrames(ctx, 0, 5, 11, 1, 0, 0)
	require.ErrorIs(t, err, ErrTooLarge)
	require.ErrorContains(t, err, `column "clip" row 0: 11 video frames of 64x48 pixels (RGB): 101376 bytes`)

	decodelimittest.Set(t, 32000) // 4000 of the 8000 samples x 2 channels
	sound := mustColumn(t, d, "sound")
	_, err = sound.Read(ctx, 0, nil)
	require.ErrorIs(t, err, ErrTooLarge)
	require.ErrorContains(t, err, `column "sound" row 0: audio sample of shape [8000 2]: 64000 bytes`)
	_, err = sound.ReadAudio(ctx, 0, 0)
	require.ErrorIs(t, err, ErrTooLarge)
	require.ErrorContains(t, err, "audio of 8000 samples x 2 channels (float32): 64000 bytes, more than the decode limit of 32000 bytes")
	seg, err := sound.ReadAudioSegment(ctx, 0, 0, 100, 4000)
	require.NoError(t, err)
	require.Equal(t, []int{4000, 2}, seg.Shape)
}
