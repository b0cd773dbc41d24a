//go:build cgo && !noffmpeg

package media_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/lochdata/loch/internal/mediatest"
	"github.com/lochdata/loch/media"
	"github.com/stretchr/testify/require"
)

// BenchmarkClip decodes 16-frame 112x112 clips (stride 2) at random starts
// from a 10-second 360p H.264 video (keyframe every 2 s), opening the video
// for each clip as the loader does, and reports bytes read per clip beside
// the file's size. The baseline in the same run, "from-start", decodes the
// same clips without seeking (every frame from the first).
func BenchmarkClip(b *testing.B) {
	data := mediatest.Read(b, mediatest.Video(b, b.TempDir(), "v.mp4", 640, 360, 25, 10, 50))
	in, err := media.ProbeVideoBytes(data)
	require.NoError(b, err)
	dst := make([]byte, 16*112*112*3)
	for _, mode := range []string{"seek", "from-start"} {
		b.Run(mode, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			var read int64
			for i := 0; i < b.N; i++ {
				start := rng.IntN(in.Frames - 32)
				r := &countingReader{r: bytes.NewReader(data)}
				v, err := media.OpenVideo(r, int64(len(data)), in)
				require.NoError(b, err)
				if mode == "seek" {
					require.NoError(b, v.Frames(dst, start, 16, 2, 112, 112))
				} else {
					all := make([]byte, (start+32)*112*112*3)
					require.NoError(b, v.Frames(all, 0, start+32, 1, 112, 112))
				}
				v.Close()
				read += r.bytes.Load()
			}
			b.ReportMetric(float64(read)/float64(b.N), "bytes/clip")
			b.ReportMetric(float64(len(data)), "file-bytes")
		})
	}
}

// BenchmarkAudio decodes 10 s of 44.1 kHz stereo audio in each format:
// "whole" decodes the whole file (DecodeAudio); "segment" opens the file
// and decodes a 16,000-sample segment at a random start (Audio.Read,
// seeking), and reports the bytes read per segment.
func BenchmarkAudio(b *testing.B) {
	dir := b.TempDir()
	for _, name := range []string{"a.wav", "a.flac", "a.mp3", "a.ogg"} {
		data := mediatest.Read(b, mediatest.Audio(b, dir, name, 44100, 2, 10))
		b.Run(name+"/whole", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				_, _, err := media.DecodeAudio(bytes.NewReader(data), int64(len(data)), 0)
				require.NoError(b, err)
			}
		})
		b.Run(name+"/segment", func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			dst := make([]float32, 16000*2)
			var read int64
			for i := 0; i < b.N; i++ {
				r := &countingReader{r: bytes.NewReader(data)}
				a, err := media.OpenAudio(r, int64(len(data)))
				require.NoError(b, err)
				n, err := a.Read(dst, 0, rng.IntN(441000-16000))
				require.NoError(b, err)
				require.Equal(b, 16000, n)
				a.Close()
				read += r.bytes.Load()
			}
			b.ReportMetric(float64(read)/float64(b.N), "bytes/segment")
			b.ReportMetric(float64(len(data)), "file-bytes")
		})
	}
}
