package imagingtest

import (
	"bytes"
	"image"
	"image/png"
	"testing"

	"github.com/stretchr/testify/require"
)

// The bomb is a valid png: the standard library decodes a small one to
// the black pixels it declares.
func TestPNGBombDecodes(t *testing.T) {
	for _, size := range [][2]int{{1, 1}, {3, 2}, {300, 200}, {257, 1}, {1000, 1000}} {
		data := PNGBomb(size[0], size[1])
		img, err := png.Decode(bytes.NewReader(data))
		require.NoError(t, err, "%v", size)
		g, ok := img.(*image.Gray)
		require.True(t, ok)
		require.Equal(t, image.Rect(0, 0, size[0], size[1]), g.Rect)
		require.Equal(t, make([]byte, size[0]*size[1]), g.Pix)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(PNGBomb(30000, 30000)))
	require.NoError(t, err)
	require.Equal(t, 30000, cfg.Width)
	cfg2, _, err := image.DecodeConfig(bytes.NewReader(JPEGBomb(t, 30000, 20000)))
	require.NoError(t, err)
	require.Equal(t, [2]int{30000, 20000}, [2]int{cfg2.Width, cfg2.Height})
}
