package transform

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/lochdata/loch/schema"
	"github.com/stretchr/testify/require"
)

func TestParseMediaSteps(t *testing.T) {
	for _, spec := range []string{
		"clip=16", "clip=16:stride=2", "clip=8:fps=5", "clip=4:start=10:size=112x112:float",
		"resample=16000", "segment=48000", "segment=100:start=7", "mono",
	} {
		p, err := Parse(spec)
		require.NoError(t, err, spec)
		require.Equal(t, spec, p.String())
	}
	p, err := Parse("clip=16:stride=2:size=112x112")
	require.NoError(t, err)
	require.True(t, p.Random())
	out, err := p.Out(Image{Shape: []int{250, 360, 640, 3}, DType: schema.Uint8, Encoded: "video"})
	require.NoError(t, err)
	require.Equal(t, []int{16, 112, 112, 3}, out.Shape)
	for _, bad := range []string{"clip", "clip=0", "clip=4:stride=0", "clip=4:speed=2", "resample=x", "segment=-1", "mono=1", "segment=4:end=2"} {
		_, err := Parse(bad)
		require.ErrorIs(t, err, ErrSpec, bad)
	}
}

func floatBytes(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// TestAudioSteps on decoded float32 [samples, channels]: a fixed segment
// padded with zeros, then a mono mixdown.
func TestAudioSteps(t *testing.T) {
	in := Image{Shape: []int{3, 2}, DType: schema.Float32, Data: floatBytes(1, 3, 2, 4, 5, 7)}
	p, err := Parse("segment=3:start=1,mono")
	require.NoError(t, err)
	out, err := p.Apply(in, nil, nil)
	require.NoError(t, err)
	require.Equal(t, []int{3, 1}, out.Shape)
	require.Equal(t, floatBytes(3, 6, 0), out.Data)

	_, err = Parse("segment=2,mono")
	require.NoError(t, err)
	_, err = mustParse("resample=8000").Apply(in, nil, nil)
	require.ErrorIs(t, err, ErrInput)
	_, err = mustParse("clip=2").Apply(in, nil, nil)
	require.ErrorIs(t, err, ErrInput)
}

func mustParse(spec string) Pipeline {
	p, err := Parse(spec)
	if err != nil {
		panic(err)
	}
	return p
}
