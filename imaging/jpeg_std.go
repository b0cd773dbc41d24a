//go:build !cgo || noturbojpeg

package imaging

import "github.com/lochdata/loch/internal/base"

// TurboJPEG reports whether JPEG decoding uses libjpeg-turbo. It is false
// in this build: the package was built with the noturbojpeg tag or without
// cgo, and decodes JPEG with the standard library's image/jpeg (through
// decodeStd), 3 to 5 times slower and without DCT-domain downscaling.
const TurboJPEG = false

// JPEGHeader reads a JPEG header: its size and natural channels (never
// Scalable in this build).
func JPEGHeader(data []byte) (JPEGInfo, error) {
	format, shape, err := Config(data)
	if err != nil {
		return JPEGInfo{}, err
	}
	if format != "jpeg" {
		return JPEGInfo{}, base.Markf(ErrDecode, "decode image: declared jpeg, the data is %s", format)
	}
	return JPEGInfo{Height: shape[0], Width: shape[1], Channels: shape[2]}, nil
}

// DecodeJPEG decodes data into dst as w x h pixels of c channels.
func DecodeJPEG(dst, data []byte, w, h, c int) error {
	return decodeStd(dst, data, w, h, c)
}
