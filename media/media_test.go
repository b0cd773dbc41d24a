//go:build cgo && !noffmpeg

package media_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"sync/atomic"
	"testing"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/decodelimit/decodelimittest"
	"github.com/lochdata/loch/internal/mediatest"
	"github.com/lochdata/loch/media"
	"github.com/stretchr/testify/require"
)

// countingReader counts the bytes read through it.
type countingReader struct {
	r     *bytes.Reader
	bytes atomic.Int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.bytes.Add(int64(n))
	return n, err
}

func TestProbeVideo(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, codec string
	}{{"a.mp4", "h264"}, {"a.webm", "vp9"}, {"a.mkv", "h264"}, {"a.avi", "mpeg4"}} {
		t.Run(tc.name, func(t *testing.T) {
			b := mediatest.Read(t, mediatest.Video(t, dir, tc.name, 64, 48, 25, 2, 10))
			in, err := media.ProbeVideoBytes(b)
			require.NoError(t, err)
			require.Equal(t, tc.codec, in.Codec)
			require.Equal(t, []int{50, 48, 64, 3}, in.Shape())
			require.Equal(t, 25.0, in.FPS())
			require.InDelta(t, 2.0, in.Duration.Seconds(), 0.05)
		})
	}
}

// TestFramesMatchFFmpeg: frame k decoded by loch (seeking to the keyframe
// before it) has the pixels that ffmpeg's own decode of the whole file
// gives frame k.
func TestFramesMatchFFmpeg(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"v.mp4", "v.webm"} {
		t.Run(name, func(t *testing.T) {
			path := mediatest.Video(t, dir, name, 64, 48, 25, 3, 12)
			b := mediatest.Read(t, path)
			in, err := media.ProbeVideoBytes(b)
			require.NoError(t, err)
			v, err := media.OpenVideo(bytes.NewReader(b), int64(len(b)), in)
			require.NoError(t, err)
			defer v.Close()
			for _, start := range []int{0, 5, 12, 31, 70} {
				dst := make([]byte, 3*48*64*3)
				require.NoError(t, v.Frames(dst, start, 3, 2, 0, 0))
				for k := 0; k < 3; k++ {
					want := mediatest.Frame(t, path, start+2*k)
					require.Equal(t, want, dst[k*48*64*3:(k+1)*48*64*3], "frame %d", start+2*k)
				}
			}
			err = v.Frames(make([]byte, 2*48*64*3), 74, 2, 1, 0, 0)
			require.ErrorIs(t, err, base.ErrInvalidArgument)
			require.ErrorContains(t, err, "needs frame 75, the video has 75 frames")
		})
	}
}

func TestFramesResize(t *testing.T) {
	b := mediatest.Read(t, mediatest.Video(t, t.TempDir(), "v.mp4", 64, 48, 25, 1, 10))
	in, err := media.ProbeVideoBytes(b)
	require.NoError(t, err)
	v, err := media.OpenVideo(bytes.NewReader(b), int64(len(b)), in)
	require.NoError(t, err)
	defer v.Close()
	dst := make([]byte, 2*16*32*3)
	require.NoError(t, v.Frames(dst, 3, 2, 1, 32, 16))
	require.NotEqual(t, dst[:16*32*3], dst[16*32*3:], "consecutive frames of testsrc2 differ")
}

// TestClipReadsFraction: a short clip from the middle of a long video
// reads a small part of the file (its index, and the packets from the
// keyframe before the clip).
func TestClipReadsFraction(t *testing.T) {
	b := mediatest.Read(t, mediatest.Video(t, t.TempDir(), "long.mp4", 320, 240, 25, 20, 25))
	in, err := media.ProbeVideoBytes(b)
	require.NoError(t, err)
	r := &countingReader{r: bytes.NewReader(b)}
	v, err := media.OpenVideo(r, int64(len(b)), in)
	require.NoError(t, err)
	defer v.Close()
	require.NoError(t, v.Frames(make([]byte, 8*240*320*3), 250, 8, 1, 0, 0))
	t.Logf("clip read %d of %d bytes", r.bytes.Load(), len(b))
	require.Less(t, r.bytes.Load(), int64(len(b))/4)
}

func TestBadVideo(t *testing.T) {
	b := mediatest.Read(t, mediatest.Video(t, t.TempDir(), "v.mp4", 64, 48, 25, 1, 10))
	for name, data := range map[string][]byte{
		"empty":     nil,
		"garbage":   bytes.Repeat([]byte("not a video "), 100),
		"truncated": b[:len(b)/3],
	} {
		t.Run(name, func(t *testing.T) {
			_, err := media.ProbeVideoBytes(data)
			require.ErrorIs(t, err, media.ErrDecode)
		})
	}
	// Audio only: no video stream.
	a := mediatest.Read(t, mediatest.Audio(t, t.TempDir(), "a.wav", 8000, 1, 0.5))
	_, err := media.ProbeVideoBytes(a)
	require.ErrorIs(t, err, media.ErrDecode)
	require.ErrorContains(t, err, "no video stream")
}

func floats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// TestAudioMatchesFFmpeg: decoded samples equal ffmpeg's own decode of the
// same file, as float32.
func TestAudioMatchesFFmpeg(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name      string
		channels  int
		exactLen  bool
		tolerance float64
	}{
		{"a.wav", 1, true, 0}, {"s.wav", 2, true, 0}, {"a.flac", 2, true, 0},
		{"a.mp3", 1, false, 1e-4}, {"a.ogg", 2, false, 1e-4}, {"a.opus", 1, false, 1e-4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := mediatest.Audio(t, dir, tc.name, 16000, tc.channels, 1)
			b := mediatest.Read(t, path)
			got, in, err := media.DecodeAudio(bytes.NewReader(b), int64(len(b)), 0)
			require.NoError(t, err)
			require.Equal(t, tc.channels, in.Channels)
			require.Len(t, got, in.Samples*in.Channels)
			if tc.exactLen {
				require.Equal(t, 16000, in.Samples)
			}
			want := floats(mediatest.Samples(t, path, 0))
			require.Len(t, got, len(want))
			require.InDeltaSlice(t, want, got, tc.tolerance)

			probe, err := media.ProbeAudioBytes(b)
			require.NoError(t, err)
			require.Equal(t, in, probe)
		})
	}
}

func TestAudioResample(t *testing.T) {
	path := mediatest.Audio(t, t.TempDir(), "a.wav", 16000, 2, 1)
	b := mediatest.Read(t, path)
	got, in, err := media.DecodeAudio(bytes.NewReader(b), int64(len(b)), 8000)
	require.NoError(t, err)
	require.Equal(t, 8000, in.SampleRate)
	require.InDelta(t, 8000, in.Samples, 2)
	require.Len(t, got, in.Samples*2)
}

func TestBadAudio(t *testing.T) {
	// A wav header (pcm s16le, mono, 8 kHz) with no samples.
	empty := []byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x40\x1f\x00\x00\x80\x3e\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00")
	for name, data := range map[string][]byte{
		"nothing":     nil,
		"zero-length": empty,
		"garbage":     bytes.Repeat([]byte{0xff, 0x00, 0x13}, 300),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := media.ProbeAudioBytes(data)
			require.ErrorIs(t, err, media.ErrDecode)
		})
	}
}

// FuzzProbe: no input crashes the demuxers or decoders, and none makes
// them allocate more than the decode limit (lowered to 4 MiB here): a
// header declaring huge frames or a long duration is refused.
func FuzzProbe(f *testing.F) {
	decodelimittest.Set(f, 4<<20)
	dir := f.TempDir()
	f.Add(mediatest.Read(f, mediatest.Video(f, dir, "v.mp4", 16, 16, 5, 0.4, 2)))
	f.Add(mediatest.Read(f, mediatest.Audio(f, dir, "a.wav", 8000, 1, 0.05)))
	f.Add(mediatest.Read(f, mediatest.Audio(f, dir, "a.flac", 8000, 1, 0.05)))
	f.Add(mediatest.Read(f, mediatest.Audio(f, dir, "a.mp3", 8000, 2, 0.2)))
	f.Add(mediatest.Read(f, mediatest.Audio(f, dir, "a.ogg", 8000, 1, 0.2)))
	f.Fuzz(func(t *testing.T, b []byte) {
		if in, err := media.ProbeVideoBytes(b); err == nil && media.CheckFrames(1, in.Height, in.Width) == nil {
			v, err := media.OpenVideo(bytes.NewReader(b), int64(len(b)), in)
			if err == nil {
				_ = v.Frames(make([]byte, in.Height*in.Width*3), 0, 1, 1, 0, 0)
				v.Close()
			}
		}
		_, _ = media.ProbeAudioBytes(b)
		if a, err := media.OpenAudio(bytes.NewReader(b), int64(len(b))); err == nil {
			if ch := a.Info().Channels; ch <= 16 {
				_, _ = a.Read(make([]float32, 64*ch), 0, 100)
				_, _ = a.Read(make([]float32, 64*ch), 8000, 50)
			}
			a.Close()
		}
	})
}
