//go:build cgo && !noffmpeg

package media_test

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/mediatest"
	"github.com/lochdata/loch/media"
	"github.com/stretchr/testify/require"
)

// TestAudioSegments: a segment decoded by seeking (Audio.Read) has the
// samples of the whole stream's decode (Audio.All) cut at its start, at
// the stream's rate and resampled, at a fixed start, near the end and at
// seeded random starts; and both agree with ffmpeg's own decode of the
// file (the reference of TestAudioMatchesFFmpeg). Seeking is bit-exact
// for PCM, FLAC, mp3 and vorbis; opus's decoder converges to within 1e-4
// of the whole decode after its 80 ms preroll.
func TestAudioSegments(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 16))
	dir := t.TempDir()
	for _, tc := range []struct {
		name      string
		exact     bool
		tolerance float64 // against ffmpeg's decode
	}{
		{"a.wav", true, 0}, {"a.flac", true, 0}, {"a.mp3", true, 1e-4},
		{"a.ogg", true, 1e-4}, {"a.opus", false, 1e-4}, {"a.m4a", true, 1e-4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := mediatest.Audio(t, dir, tc.name, 44100, 2, 4)
			b := mediatest.Read(t, path)
			ref := floats(mediatest.Samples(t, path, 0))
			for _, rate := range []int{0, 16000, 48000} {
				r := &countingReader{r: bytes.NewReader(b)}
				a, err := media.OpenAudio(r, int64(len(b)))
				require.NoError(t, err)
				ch := a.Info().Channels
				all, err := a.All(rate)
				require.NoError(t, err)
				if rate == 0 {
					require.Len(t, all, len(ref))
					require.InDeltaSlice(t, ref, all, tc.tolerance)
				}
				n := len(all) / ch
				const seg = 3000
				for _, start := range []int{0, 1, 777, n / 2, n - seg, rng.IntN(n - seg), rng.IntN(n - seg), rng.IntN(n - seg)} {
					got := make([]float32, seg*ch)
					k, err := a.Read(got, rate, start)
					require.NoError(t, err)
					require.Equal(t, seg, k, "rate %d start %d", rate, start)
					want := all[start*ch : (start+seg)*ch]
					if tc.exact {
						require.Equal(t, want, got, "rate %d start %d", rate, start)
					} else {
						require.InDeltaSlice(t, want, got, 1e-4, "rate %d start %d", rate, start)
					}
					if rate == 0 {
						require.InDeltaSlice(t, ref[start*ch:(start+seg)*ch], got, tc.tolerance)
					}
				}
				// Past the end: the samples that are there, then nothing.
				tail := make([]float32, 2*seg*ch)
				k, err := a.Read(tail, rate, n-seg)
				require.NoError(t, err)
				require.Equal(t, seg, k)
				k, err = a.Read(tail, rate, n+10)
				require.NoError(t, err)
				require.Zero(t, k)
				_, err = a.Read(tail, rate, -1)
				require.ErrorIs(t, err, base.ErrInvalidArgument)
				a.Close()
			}
		})
	}
}

// TestAudioSegmentReadsRange: a short segment from the middle of a long
// wav or flac reads a part of the file (the headers the demuxer probes,
// a flac seek's search, the segment's packets).
func TestAudioSegmentReadsRange(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"long.wav", "long.flac"} {
		b := mediatest.Read(t, mediatest.Audio(t, dir, name, 44100, 2, 30))
		r := &countingReader{r: bytes.NewReader(b)}
		a, err := media.OpenAudio(r, int64(len(b)))
		require.NoError(t, err)
		k, err := a.Read(make([]float32, 16000*2), 0, 20*44100)
		require.NoError(t, err)
		require.Equal(t, 16000, k)
		a.Close()
		t.Logf("%s: a 16,000-sample segment read %d of %d bytes", name, r.bytes.Load(), len(b))
		require.Less(t, r.bytes.Load(), int64(len(b))/3, name)
	}
}
