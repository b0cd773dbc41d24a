package imaging

import (
	"bytes"
	"image"
	"testing"

	"github.com/stretchr/testify/require"
)

// stdConfig is Config as image.DecodeConfig alone answers it.
func stdConfig(data []byte) (string, []int, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return "", nil, err
	}
	return format, []int{cfg.Height, cfg.Width, channels(cfg.ColorModel)}, nil
}

// jpegConfig answers for the usual JPEGs (every JPEG of testdata, gray,
// colour, CMYK, progressive, with restart markers) and, where it answers,
// agrees with image/jpeg's DecodeConfig.
func TestJPEGConfigMatchesStd(t *testing.T) {
	files := inspectFiles(t)
	files["encoded"] = encodeJPEG(t, photo(33, 17, 3, 1), 33, 17, 3, 90)
	files["encoded gray"] = encodeJPEG(t, photo(5, 7, 1, 1), 5, 7, 1, 90)
	for name, data := range files {
		if !isJPEG(data) {
			continue
		}
		h, w, c, ok := jpegConfig(data)
		require.True(t, ok, name)
		format, shape, err := stdConfig(data)
		require.NoError(t, err, name)
		require.Equal(t, "jpeg", format)
		require.Equal(t, shape, []int{h, w, c}, name)
	}
}

// Files jpegConfig leaves to DecodeConfig: what it cannot be sure of,
// and what DecodeConfig refuses.
func TestJPEGConfigDefers(t *testing.T) {
	data := inspectFiles(t)["baseline.jpg"]
	sof := bytes.Index(data, []byte{0xff, 0xc0})
	require.Positive(t, sof)
	withFrame := func(edit func(seg []byte)) []byte {
		b := bytes.Clone(data)
		edit(b[sof+4:])
		return b
	}
	for name, bad := range map[string][]byte{
		"truncated before the frame": data[:sof+3],
		"12-bit samples":             withFrame(func(seg []byte) { seg[0] = 12 }),
		"zero height":                withFrame(func(seg []byte) { seg[1], seg[2] = 0, 0 }),
		"quantization table 4":       withFrame(func(seg []byte) { seg[8] = 4 }),
		"sampling 3x1":               withFrame(func(seg []byte) { seg[7] = 0x31 }),
		"arithmetic coding (SOF9)":   append(append(bytes.Clone(data[:sof+1]), 0xc9), data[sof+2:]...),
		"extraneous byte":            append(append(bytes.Clone(data[:2]), 0x00), data[2:]...),
		"not a jpeg":                 []byte("GIF89a"),
	} {
		_, _, _, ok := jpegConfig(bad)
		require.False(t, ok, name)
	}
}

// FuzzJPEGConfig: jpegConfig never panics, and where it answers,
// image/jpeg's DecodeConfig succeeds with the same answer.
func FuzzJPEGConfig(f *testing.F) {
	for _, data := range inspectFiles(f) {
		if isJPEG(data) {
			f.Add(data[:min(len(data), 2048)])
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, w, c, ok := jpegConfig(data)
		if !ok {
			return
		}
		format, shape, err := stdConfig(data)
		require.NoError(t, err)
		require.Equal(t, "jpeg", format)
		require.Equal(t, shape, []int{h, w, c})
	})
}
