package imaging

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/imaging/imagingtest"
	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/decodelimit"
	"github.com/lochdata/loch/internal/decodelimit/decodelimittest"
)

// A png declaring 30000x30000 (a real 5.7 MB zlib stream of 900 MB of
// pixels) is refused by the default limit from its header, before the
// decoder allocates the image.
func TestDecodeRefusesPNGBombByDefault(t *testing.T) {
	decodelimittest.Set(t, decodelimit.Default)
	bomb := imagingtest.PNGBomb(30000, 30000)
	for name, decode := range map[string]func() error{
		"Decode":     func() error { _, _, err := Decode(bomb); return err },
		"DecodeAs 3": func() error { _, _, err := DecodeAs(bomb, 3); return err },
		"DecodeInto": func() error { return DecodeInto(make([]byte, 30), bomb, 30000, 30000, 1) },
	} {
		var err error
		n := decodelimittest.Allocated(func() { err = decode() })
		if name == "DecodeInto" {
			require.Error(t, err) // the buffer is checked first
			continue
		}
		require.ErrorIs(t, err, ErrTooLarge, name)
		require.NotErrorIs(t, err, base.ErrCorrupt, name)
		require.ErrorContains(t, err, "png image of 30000x30000 pixels", name)
		require.ErrorContains(t, err, "more than the decode limit of 536870912 bytes", name)
		require.Less(t, n, uint64(1<<20), "%s allocated %d bytes for a refused bomb", name, n)
	}
}

// A jpeg whose SOF declares 30000x30000 is refused the same way, by the
// same limit.
func TestDecodeRefusesJPEGBombByDefault(t *testing.T) {
	decodelimittest.Set(t, decodelimit.Default)
	bomb := imagingtest.JPEGBomb(t, 30000, 30000)
	var err error
	n := decodelimittest.Allocated(func() { _, _, err = DecodeAs(bomb, 3) })
	require.ErrorIs(t, err, ErrTooLarge)
	require.ErrorContains(t, err, "jpeg image of 30000x30000 pixels, 3 channels: 2700000000 bytes, more than the decode limit of 536870912 bytes")
	require.Less(t, n, uint64(1<<20))
	err = DecodeJPEG(make([]byte, 3750*3750), bomb, 3750, 3750, 1) // 1/8 scale
	require.ErrorIs(t, err, ErrTooLarge)
}

// With the limit lowered, every decoder refuses a real image that is
// larger, png and jpeg alike, naming both sizes; the same image decodes
// within the limit.
func TestDecodeLimitSetting(t *testing.T) {
	const w, h = 120, 80
	pngData, err := Encode("png", photo(w, h, 3, 1), []int{h, w, 3}, 0)
	require.NoError(t, err)
	jpegData := encodeJPEG(t, photo(w, h, 3, 1), w, h, 3, 90)
	decodelimittest.Set(t, w*h*3-1)
	for _, tc := range []struct {
		name, format string
		data         []byte
	}{{"png", "png", pngData}, {"jpeg", "jpeg", jpegData}} {
		_, _, err := Decode(tc.data)
		require.ErrorIs(t, err, ErrTooLarge, tc.name)
		require.EqualError(t, err, tc.format+" image of 120x80 pixels, 3 channels: 28800 bytes, more than the decode limit of 28799 bytes (LOCH_MAX_DECODE_BYTES or --max-decode-bytes sets it)")
		if tc.format == "jpeg" && TurboJPEG { // decoded straight to 1 channel, 9600 bytes
			_, _, err = DecodeAs(tc.data, 1)
			require.NoError(t, err, tc.name)
		}
		_, _, err = DecodeAs(tc.data, 4)
		require.ErrorIs(t, err, ErrTooLarge, tc.name)
		require.ErrorIs(t, DecodeInto(make([]byte, w*h*3), tc.data, h, w, 3), ErrTooLarge, tc.name)
	}
	require.ErrorIs(t, DecodeJPEG(make([]byte, w*h*3), jpegData, w, h, 3), ErrTooLarge)
	decodelimittest.Set(t, w*h*3)
	for _, data := range [][]byte{pngData, jpegData} {
		_, _, err := Decode(data)
		require.NoError(t, err)
	}
}
