// Package imagingtest has the test images and comparisons that the tests
// of imaging and transform share: photo-like pixels, JPEG encoding, a
// reference decode with the standard library, and pixel differences.
package imagingtest

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// Photo makes a photo-like RGB (or gray) image: smooth gradients and
// blobs with per-pixel noise, deterministic in seed.
func Photo(w, h, c int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	pix := make([]byte, w*h*c)
	fx, fy := 2+r.Float64()*4, 2+r.Float64()*4
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			u, v := float64(x)/float64(w), float64(y)/float64(h)
			for k := 0; k < c; k++ {
				base := 128 + 60*math.Sin(fx*u+float64(k)) + 50*math.Cos(fy*v*(1+float64(k)/3))
				n := r.NormFloat64() * 6
				pix[(y*w+x)*c+k] = uint8(max(0, min(255, base+n)))
			}
		}
	}
	return pix
}

// EncodeJPEG encodes HWC pixels (1 or 3 channels) with Go's image/jpeg.
func EncodeJPEG(t testing.TB, pix []byte, w, h, c, quality int) []byte {
	t.Helper()
	var img image.Image
	if c == 1 {
		img = &image.Gray{Pix: pix, Stride: w, Rect: image.Rect(0, 0, w, h)}
	} else {
		rgba := image.NewRGBA(image.Rect(0, 0, w, h))
		for i := 0; i < w*h; i++ {
			rgba.Pix[4*i], rgba.Pix[4*i+1], rgba.Pix[4*i+2], rgba.Pix[4*i+3] = pix[3*i], pix[3*i+1], pix[3*i+2], 255
		}
		img = rgba
	}
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality}))
	return buf.Bytes()
}

// StdDecode decodes with image/jpeg into c-channel HWC pixels.
func StdDecode(t testing.TB, data []byte, c int) []byte {
	t.Helper()
	img, err := jpeg.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	b := img.Bounds()
	out := make([]byte, 0, b.Dx()*b.Dy()*c)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if c == 1 {
				out = append(out, color.GrayModel.Convert(img.At(x, y)).(color.Gray).Y)
				continue
			}
			r, g, bb, _ := img.At(x, y).RGBA()
			out = append(out, uint8(r>>8), uint8(g>>8), uint8(bb>>8))
		}
	}
	return out
}

// Diff returns the largest and the mean absolute difference.
func Diff(a, b []byte) (maxd int, mean float64) {
	sum := 0
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < 0 {
			d = -d
		}
		maxd = max(maxd, d)
		sum += d
	}
	return maxd, float64(sum) / float64(len(a))
}

// Noise makes n bytes of uniform noise, deterministic in seed.
func Noise(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 11))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
