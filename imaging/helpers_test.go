package imaging

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/imaging/imagingtest"
)

var jpegSizes = [][2]int{{1, 1}, {7, 5}, {17, 33}, {224, 224}, {257, 131}}

var (
	photo      = imagingtest.Photo
	encodeJPEG = imagingtest.EncodeJPEG
	stdDecode  = imagingtest.StdDecode
	diff       = imagingtest.Diff
)

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
