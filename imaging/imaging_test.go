package imaging

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPNGRoundTrip encodes and decodes 1-, 3- and 4-channel tensors:
// pixel-exact, and Config reports the shape Decode gives.
func TestPNGRoundTrip(t *testing.T) {
	for _, c := range []int{1, 3, 4} {
		shape := []int{5, 7, c}
		pix := make([]byte, 5*7*c)
		for i := range pix {
			pix[i] = byte(i * 37)
		}
		if c == 4 {
			for i := 3; i < len(pix); i += 4 {
				pix[i] = 255 // NRGBA with alpha 255 keeps colours exact
			}
		}
		b, err := Encode("png", pix, shape, 0)
		require.NoError(t, err)
		got, gshape, err := DecodeAs(b, c)
		require.NoError(t, err)
		require.Equal(t, shape, gshape)
		require.Equal(t, pix, got)
		format, _, err := Config(b)
		require.NoError(t, err)
		require.Equal(t, "png", format)
	}
}

// TestConfigAgreesWithDecode checks inputs written by other encoders: the
// shape from the header is the shape of the decoded pixels.
func TestConfigAgreesWithDecode(t *testing.T) {
	rgba := image.NewRGBA(image.Rect(0, 0, 4, 3))
	nrgba := image.NewNRGBA(image.Rect(0, 0, 4, 3))
	nrgba.Set(1, 1, color.NRGBA{1, 2, 3, 4})
	gray := image.NewGray(image.Rect(0, 0, 4, 3))
	pal := image.NewPaletted(image.Rect(0, 0, 4, 3), color.Palette{color.Black, color.White})
	var inputs [][]byte
	for _, img := range []image.Image{rgba, nrgba, gray, pal} {
		var buf bytes.Buffer
		require.NoError(t, png.Encode(&buf, img))
		inputs = append(inputs, buf.Bytes())
	}
	for _, img := range []image.Image{rgba, gray} {
		var buf bytes.Buffer
		require.NoError(t, jpeg.Encode(&buf, img, nil))
		inputs = append(inputs, buf.Bytes())
	}
	for i, in := range inputs {
		_, cshape, err := Config(in)
		require.NoError(t, err)
		_, dshape, err := Decode(in)
		require.NoError(t, err)
		require.Equal(t, cshape, dshape, "input %d", i)
	}
	_, _, err := Decode([]byte("not an image"))
	require.ErrorIs(t, err, ErrDecode)
}
