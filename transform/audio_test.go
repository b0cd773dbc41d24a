//go:build cgo && !noffmpeg

package transform

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lochdata/loch/internal/mediatest"
	"github.com/lochdata/loch/media"
	"github.com/lochdata/loch/schema"
	"github.com/stretchr/testify/require"
)

// TestAudioSegmentOfEncoded: a segment of an encoded sample (decoded by
// seeking to it) has the samples of the whole decode cut at the same
// start, fixed or drawn from the same rng, with and without resampling;
// a segment past the end is padded with zeros.
func TestAudioSegmentOfEncoded(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.wav", "a.flac", "a.mp3", "a.ogg"} {
		b := mediatest.Read(t, mediatest.Audio(t, dir, name, 22050, 2, 2))
		probe, err := media.ProbeAudioBytes(b)
		require.NoError(t, err)
		in := Image{Encoded: encAudio, Shape: probe.Shape(), DType: schema.Float32, Data: b}
		for _, tc := range []struct {
			spec  string
			rate  int
			start int // -1: drawn
		}{
			{"segment=4000:start=9000", 0, 9000},
			{"segment=4000", 0, -1},
			{"resample=16000,segment=3000,mono", 16000, -1},
			{"resample=8000,segment=2000:start=500", 8000, 500},
		} {
			whole, info, err := media.DecodeAudio(bytes.NewReader(b), int64(len(b)), tc.rate)
			require.NoError(t, err)
			p, err := Parse(tc.spec)
			require.NoError(t, err)
			out, err := p.Apply(in, rand.New(rand.NewPCG(5, 6)), nil)
			require.NoError(t, err, "%s %s", name, tc.spec)
			steps := p.Steps()
			seg := steps[len(steps)-1].(AudioStep)
			if len(steps) == 3 {
				seg = steps[1].(AudioStep)
			}
			start := tc.start
			if start < 0 {
				n := in.Shape[0]
				if tc.rate > 0 {
					n = n * tc.rate / probe.SampleRate
				}
				start = seg.start(n, rand.New(rand.NewPCG(5, 6)))
			}
			ch := info.Channels
			want := whole[start*ch : (start+seg.Segment)*ch]
			if steps[len(steps)-1].(AudioStep).Mono {
				m := make([]float32, seg.Segment)
				for i := range m {
					m[i] = (want[2*i] + want[2*i+1]) / 2
				}
				want = m
			}
			require.Equal(t, want, decodeFloats(out.Data), "%s %s", name, tc.spec)
		}
		// Past the end: the last 100 samples, then zeros.
		out, err := mustParse("segment=1000:start=44000").Apply(in, nil, nil)
		require.NoError(t, err)
		got := decodeFloats(out.Data)
		whole, _, err := media.DecodeAudio(bytes.NewReader(b), int64(len(b)), 0)
		require.NoError(t, err)
		require.Equal(t, whole[44000*2:], got[:100*2], name)
		require.Equal(t, make([]float32, 900*2), got[100*2:], name)
	}
}

func decodeFloats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}
