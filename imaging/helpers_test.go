package imaging

import (
	"bytes"
	"image/color"
	"image/jpeg"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

var jpegSizes = [][2]int{{1, 1}, {7, 5}, {17, 33}, {224, 224}, {257, 131}}

// photo makes a photo-like RGB (or gray) image, deterministic in seed.
func photo(w, h, c int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	pix := make([]byte, w*h*c)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for k := 0; k < c; k++ {
				base := 128 + 60*math.Sin(3*float64(x)/float64(w)+float64(k)) + 50*math.Cos(4*float64(y)/float64(h))
				pix[(y*w+x)*c+k] = uint8(max(0, min(255, base+r.NormFloat64()*6)))
			}
		}
	}
	return pix
}

// encodeJPEG encodes HWC pixels (1 or 3 channels) with image/jpeg.
func encodeJPEG(t testing.TB, pix []byte, w, h, c, quality int) []byte {
	t.Helper()
	shape := []int{h, w, c}
	img, err := ToImage(pix, shape)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality}))
	return buf.Bytes()
}

// stdDecode decodes with image/jpeg into c-channel HWC pixels.
func stdDecode(t testing.TB, data []byte, c int) []byte {
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

// diff returns the largest and the mean absolute difference.
func diff(a, b []byte) (maxd int, mean float64) {
	sum := 0
	for i := range a {
		d := max(int(a[i])-int(b[i]), int(b[i])-int(a[i]))
		maxd = max(maxd, d)
		sum += d
	}
	return maxd, float64(sum) / float64(len(a))
}

// Every path decodes through DecodeInto: DecodeAs gives the same pixels,
// for JPEG (gray and colour, odd sizes, any requested channels) and PNG.
func TestDecodeAsMatchesDecodeInto(t *testing.T) {
	var images [][]byte
	for _, c := range []int{1, 3} {
		for _, sz := range jpegSizes {
			images = append(images, encodeJPEG(t, photo(sz[0], sz[1], c, 1), sz[0], sz[1], c, 85))
			png, err := Encode("png", photo(sz[0], sz[1], c, 2), []int{sz[1], sz[0], c}, 0)
			require.NoError(t, err)
			images = append(images, png)
		}
	}
	opaque, err := Encode("png", bytes.Repeat([]byte{10, 20, 30, 255}, 12), []int{3, 4, 4}, 0)
	require.NoError(t, err)
	images = append(images, opaque)
	for i, data := range images {
		for _, c := range []int{1, 3, 4} {
			pix, shape, err := DecodeAs(data, c)
			require.NoError(t, err, "image %d", i)
			require.Equal(t, c, shape[2])
			dst := make([]byte, len(pix))
			require.NoError(t, DecodeInto(dst, data, shape[0], shape[1], c))
			require.Equal(t, pix, dst, "image %d, %d channels", i, c)
		}
	}
	require.ErrorIs(t, DecodeInto(make([]byte, 12), images[0], 2, 2, 3), ErrDecode, "a 1x1 image is not 2x2")
}
