//go:build !cgo || noturbojpeg

package transform

import (
	"fmt"

	"github.com/lochdata/loch/imaging"
)

// TurboJPEG reports whether JPEG decoding uses libjpeg-turbo. It is false
// in this build: the package was built with the noturbojpeg tag or without
// cgo, and decodes JPEG with the standard library's image/jpeg (through
// imaging), 3 to 5 times slower and without DCT-domain downscaling.
const TurboJPEG = false

func jpegHeader(data []byte) (jpegInfo, error) {
	format, shape, err := imaging.Config(data)
	if err != nil {
		return jpegInfo{}, err
	}
	if format != "jpeg" {
		return jpegInfo{}, fmt.Errorf("%w: declared jpeg, the data is %s", ErrDecode, format)
	}
	return jpegInfo{h: shape[0], w: shape[1], c: shape[2]}, nil
}

// decodeJPEG decodes data into dst as w x h pixels of c channels.
func decodeJPEG(dst, data []byte, w, h, c int) error {
	return decodeStd(dst, data, w, h, c)
}
