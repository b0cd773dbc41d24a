//go:build cgo && !noffmpeg

package media_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/lochdata/loch/internal/mediatest"
	"github.com/lochdata/loch/media"
	"github.com/stretchr/testify/require"
)

// TestWAVMatchesFFmpeg: PCM wav files, read without FFmpeg, give the
// samples ffmpeg's own decode gives, bit for bit, for every sample format
// the fast path takes (and a 6-channel WAVE_FORMAT_EXTENSIBLE file); a
// segment reads the header and its own bytes only; resampling goes
// through FFmpeg and equals its whole decode cut.
func TestWAVMatchesFFmpeg(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		codec    string
		channels int
	}{
		{"pcm_u8", 1}, {"pcm_s16le", 2}, {"pcm_s24le", 2}, {"pcm_s32le", 1}, {"pcm_f32le", 2}, {"pcm_s16le", 6},
	} {
		name := fmt.Sprintf("%s-%d", tc.codec, tc.channels)
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".wav")
			mediatest.Run(t, "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000:duration=1.5",
				"-af", "volume=0.9", "-ac", fmt.Sprint(tc.channels), "-c:a", tc.codec, path)
			b := mediatest.Read(t, path)
			want := floats(mediatest.Samples(t, path, 0))
			r := &countingReader{r: bytes.NewReader(b)}
			a, err := media.OpenAudio(r, int64(len(b)))
			require.NoError(t, err)
			defer a.Close()
			require.Equal(t, tc.codec, a.Info().Codec)
			require.Equal(t, tc.channels, a.Info().Channels)
			all, err := a.All(0)
			require.NoError(t, err)
			require.Equal(t, want, all)

			r.bytes.Store(0)
			seg := make([]float32, 1000*tc.channels)
			n, err := a.Read(seg, 0, 7000)
			require.NoError(t, err)
			require.Equal(t, 1000, n)
			require.Equal(t, all[7000*tc.channels:8000*tc.channels], seg)
			require.Equal(t, int64(1000*tc.channels*bytesPerSample(tc.codec)), r.bytes.Load(), "a segment reads its bytes only")

			// Resampled: FFmpeg, a segment equal to the whole decode's.
			all8, err := a.All(8000)
			require.NoError(t, err)
			n, err = a.Read(seg, 8000, 3000)
			require.NoError(t, err)
			require.Equal(t, 1000, n)
			require.Equal(t, all8[3000*tc.channels:4000*tc.channels], seg)

			probe, err := media.ProbeAudioBytes(b)
			require.NoError(t, err)
			require.Equal(t, 24000, probe.Samples)
		})
	}
}

func bytesPerSample(codec string) int {
	switch codec {
	case "pcm_u8":
		return 1
	case "pcm_s16le":
		return 2
	case "pcm_s24le":
		return 3
	}
	return 4
}

// TestAbsurdSampleRateRefused: a WAV header declaring 805,314,368 Hz (found
// by make chaos's fuzzing of FuzzProbe) is refused when opened, instead of
// taking seconds and gigabytes to resample to 8 kHz; a read at such a rate
// is refused too.
func TestAbsurdSampleRateRefused(t *testing.T) {
	wav := []byte("RIFF0000WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x000\x80>\x00\x00\x02\x00\x10\x00data \x03\x00\x00")
	wav = append(wav, make([]byte, 131-len(wav))...)
	a, err := media.OpenAudio(bytes.NewReader(wav), int64(len(wav)))
	if err == nil {
		defer a.Close()
		_, err = a.Read(make([]float32, 50), 8000, 0)
	}
	require.Error(t, err)

	good := mediatest.Read(t, mediatest.Audio(t, t.TempDir(), "a.wav", 8000, 1, 0.1))
	a, err = media.OpenAudio(bytes.NewReader(good), int64(len(good)))
	require.NoError(t, err)
	defer a.Close()
	_, err = a.Read(make([]float32, 50), media.MaxSampleRate+1, 0)
	require.Error(t, err)
	_, err = a.All(media.MaxSampleRate + 1)
	require.Error(t, err)
}
