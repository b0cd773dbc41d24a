package transform

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lochdata/loch/internal/decodelimit"
	"github.com/lochdata/loch/internal/mediatest"

	"github.com/lochdata/loch/schema"
	"github.com/stretchr/testify/require"
)

func TestParseMediaSteps(t *testing.T) {
	for _, spec := range []string{
		"clip=16", "clip=16:stride=2", "clip=8:fps=5", "clip=4:start=10:size=112x112:float",
		"clip=16:size=128x128:crop=112x112", "clip=8:stride=2:random_crop=100x80:float",
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
	p, err = Parse("clip=16:start=0:size=128x128:crop=112")
	require.NoError(t, err)
	require.False(t, p.Random(), "a centre crop from a fixed start draws nothing")
	require.Equal(t, "clip=16:start=0:size=128x128:crop=112x112", p.String())
	require.True(t, mustParse("clip=16:start=0:random_crop=112").Random())
	out, err = mustParse("clip=16:crop=112:float").Out(Image{Shape: []int{250, 360, 640, 3}, DType: schema.Uint8, Encoded: "video"})
	require.NoError(t, err)
	require.Equal(t, []int{16, 3, 112, 112}, out.Shape)
	_, err = mustParse("clip=16:crop=400").Out(Image{Shape: []int{250, 360, 640, 3}, DType: schema.Uint8, Encoded: "video"})
	require.ErrorIs(t, err, ErrInput)
	for _, bad := range []string{"clip", "clip=0", "clip=4:stride=0", "clip=4:speed=2", "resample=x", "segment=-1", "mono=1", "segment=4:end=2",
		"clip=4:crop=0", "clip=4:size=64x64:crop=112", "clip=4:random_crop=x"} {
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

// cropFrames crops each [h, w, 3] frame of frames to ch x cw at (top, left).
func cropFrames(frames [][]byte, h, w, top, left, ch, cw int) []byte {
	var out []byte
	for _, f := range frames {
		for y := 0; y < ch; y++ {
			off := ((top+y)*w + left) * 3
			out = append(out, f[off:off+cw*3]...)
		}
	}
	return out
}

// TestClipCrop: clip crops are the frames ffmpeg decodes, cropped: centred
// (as center_crop rounds) and random (offsets drawn from the sample's rng
// after the start, top before left), in uint8 and float output.
func TestClipCrop(t *testing.T) {
	path := mediatest.Video(t, t.TempDir(), "v.mp4", 64, 48, 25, 2, 10)
	vb := mediatest.Read(t, path)
	in := Image{Shape: []int{50, 48, 64, 3}, DType: schema.Uint8, Encoded: "video", Data: vb}
	frames := func(start, n, stride int) [][]byte {
		var out [][]byte
		for k := 0; k < n; k++ {
			out = append(out, mediatest.Frame(t, path, start+k*stride))
		}
		return out
	}

	out, err := mustParse("clip=3:start=7:stride=2:crop=32x16").Apply(in, nil, nil)
	require.NoError(t, err)
	require.Equal(t, []int{3, 16, 32, 3}, out.Shape)
	require.Equal(t, cropFrames(frames(7, 3, 2), 48, 64, 16, 16, 16, 32), out.Data)

	// Odd margins: center_crop's rounding (half to even).
	out, err = mustParse("clip=1:start=3:crop=61x45").Apply(in, nil, nil)
	require.NoError(t, err)
	require.Equal(t, cropFrames(frames(3, 1, 1), 48, 64, 2, 2, 45, 61), out.Data)

	for seed := uint64(0); seed < 4; seed++ {
		rng := func() *rand.Rand { return rand.New(rand.NewPCG(seed, 99)) }
		r := rng()
		start, top, left := r.IntN(50-4+1), r.IntN(48-20+1), r.IntN(64-24+1)
		want := cropFrames(frames(start, 4, 1), 48, 64, top, left, 20, 24)
		out, err := mustParse("clip=4:random_crop=24x20").Apply(in, rng(), nil)
		require.NoError(t, err)
		require.Equal(t, want, out.Data, "seed %d: start %d, crop at (%d, %d)", seed, start, top, left)

		out, err = mustParse("clip=4:random_crop=24x20:float").Apply(in, rng(), nil)
		require.NoError(t, err)
		require.Equal(t, []int{4, 3, 20, 24}, out.Shape)
		plane := 20 * 24
		for k := 0; k < len(want); k++ {
			f, p, c := k/(plane*3), (k/3)%plane, k%3
			got := math.Float32frombits(binary.LittleEndian.Uint32(out.Data[4*((f*3+c)*plane+p):]))
			require.Equal(t, float32(want[k])/255, got, "seed %d: value %d", seed, k)
		}
	}

	// With a resize: the crop of the resized frames.
	full, err := mustParse("clip=2:start=4:size=40x30").Apply(in, nil, nil)
	require.NoError(t, err)
	out, err = mustParse("clip=2:start=4:size=40x30:crop=20x10").Apply(in, nil, nil)
	require.NoError(t, err)
	f := full.Data[:30*40*3]
	require.Equal(t, cropFrames([][]byte{f, full.Data[30*40*3:]}, 30, 40, 10, 10, 10, 20), out.Data)

	// From a reader instead of bytes: the same pixels.
	src := in
	src.Data, src.Source = nil, io.NewSectionReader(bytes.NewReader(vb), 0, int64(len(vb)))
	again, err := mustParse("clip=2:start=4:size=40x30:crop=20x10").Apply(src, nil, nil)
	require.NoError(t, err)
	require.Equal(t, out.Data, again.Data)
}

// TestDecodesPart: the pipelines whose first step decodes part of a media
// sample, which the loader reads by range.
func TestDecodesPart(t *testing.T) {
	for spec, want := range map[string]string{
		"clip=4":                     "video",
		"clip=4:size=8x8,hflip":      "video",
		"segment=100":                "audio",
		"resample=16000,segment=100": "audio",
		"mono,segment=100:start=5":   "audio",
		"resample=16000":             "",
		"resample=16000,mono":        "",
		"mono":                       "",
		"decode,resize=8":            "",
	} {
		p, err := Parse(spec)
		require.NoError(t, err, spec)
		require.Equal(t, want, p.DecodesPart(), spec)
	}
}

// A clip whose frames are more than the decode limit is refused before
// anything is decoded, by Out (which sizes the loader's buffers) and by
// Apply, with ErrTooLarge (not ErrDecode); so is a whole audio decode.
func TestMediaDecodeLimit(t *testing.T) {
	dir := t.TempDir()
	in := Image{Shape: []int{50, 48, 64, 3}, DType: schema.Uint8, Encoded: "video", Data: mediatest.Read(t, mediatest.Video(t, dir, "v.mp4", 64, 48, 25, 2, 10))}
	t.Cleanup(decodelimit.Save())
	_, err := decodelimit.Set(4 * 48 * 64 * 3)
	require.NoError(t, err)
	for _, spec := range []string{"clip=4:start=0", "clip=4:start=0:crop=32x16", "clip=2:start=0:size=80x60:float"} {
		_, err := mustParse(spec).Apply(in, nil, nil)
		require.NoError(t, err, spec)
	}
	for _, spec := range []string{"clip=5:start=0", "clip=5:start=0:crop=32x16", "clip=2:start=0:size=128x96:float"} {
		p := mustParse(spec)
		_, err := p.Out(in)
		require.ErrorIs(t, err, ErrTooLarge, spec)
		require.NotErrorIs(t, err, ErrDecode, spec)
		require.ErrorContains(t, err, "more than the decode limit of 36864 bytes", spec)
		_, err = p.Apply(in, nil, nil)
		require.ErrorIs(t, err, ErrTooLarge, spec)
	}

	audio := Image{Shape: []int{8000, 1}, DType: schema.Float32, Encoded: "audio", Data: mediatest.Read(t, mediatest.Audio(t, dir, "a.flac", 8000, 1, 1))}
	_, err = decodelimit.Set(16000)
	require.NoError(t, err)
	_, err = mustParse("mono").Apply(audio, nil, nil)
	require.ErrorIs(t, err, ErrTooLarge)
	require.NotErrorIs(t, err, ErrDecode)
	_, err = mustParse("segment=4000:start=100").Apply(audio, nil, nil)
	require.NoError(t, err, "a segment within the limit")
}
