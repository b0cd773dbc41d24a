package transform

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/imaging/imagingtest"
	"github.com/lochdata/loch/schema"
)

// u8 makes a uint8 HWC image.
func u8(h, w, c int, data ...byte) Image {
	return Image{Shape: []int{h, w, c}, DType: schema.Uint8, Data: data}
}

// f32 makes a float32 image from values.
func f32(shape []int, l Layout, vals ...float32) Image {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		putF32(b, i, v)
	}
	return Image{Shape: shape, DType: schema.Float32, Layout: l, Data: b}
}

func floats(im Image) []float32 {
	out := make([]float32, len(im.Data)/4)
	for i := range out {
		out[i] = getF32(im.Data, i)
	}
	return out
}

// apply runs a spec on in with a fixed rng.
func apply(t testing.TB, spec string, in Image, seed uint64) Image {
	t.Helper()
	p, err := Parse(spec)
	require.NoError(t, err)
	out, err := p.Apply(in, rand.New(rand.NewPCG(seed, 0)), nil)
	require.NoError(t, err)
	return out
}

// photo, encodeJPEG, stdDecode and diff are imagingtest's, shared with
// imaging's tests.
var (
	photo      = imagingtest.Photo
	encodeJPEG = imagingtest.EncodeJPEG
	stdDecode  = imagingtest.StdDecode
	diff       = imagingtest.Diff
)
