package transform

import (
	"math/rand/v2"

	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/schema"
)

// Decode returns the step "decode": a jpeg or png image to uint8 HWC
// pixels. The channel count is the one the image was declared with
// (Image.Shape), converted as imaging.DecodeAs does, or the file's own
// (1 for grayscale, 3 for colour, 4 for png with alpha) when Shape is nil.
// Pixels that are already decoded pass through unchanged.
//
// JPEG goes through libjpeg-turbo unless the package was built with the
// noturbojpeg tag (or without cgo). Followed by resize, decode shrinks a
// JPEG in the DCT domain by 1/2, 1/4 or 1/8 as long as the result stays at
// least as large as the resize target: much faster, and a good
// (area-averaging) downscale, but not bit-identical to decoding at full
// size. FullDecode ("decode=full") never does.
//
// Corrupt or truncated data is an error wrapping ErrDecode: libjpeg-turbo's
// warnings count as errors, as does a file whose size differs from its
// declared Shape. A file whose full-size decode is more than the decode
// limit is ErrTooLarge, refused from its header.
func Decode() Step { return decodeStep{} }

// FullDecode returns the step "decode=full": decode without DCT-domain
// downscaling.
func FullDecode() Step { return decodeStep{full: true} }

type decodeStep struct {
	full bool
	then *resizeStep // the resize that follows, set by New
}

func (s decodeStep) String() string {
	if s.full {
		return "decode=full"
	}
	return "decode"
}

func (decodeStep) Random() bool { return false }

// scaled is a dimension decoded at 1/denom.
func scaled(dim, denom int) int { return imaging.Scaled(dim, denom) }

func (s decodeStep) Out(in Image) (Image, error) {
	switch in.Encoded {
	case "":
		h, w, c, err := need(in, onlyUint8, onlyHWC)
		if err != nil {
			return Image{}, err
		}
		return pixels(schema.Uint8, HWC, h, w, c), nil
	case "jpeg", "png":
	default:
		return Image{}, inputErr("unknown image encoding %q (want jpeg or png)", in.Encoded)
	}
	if in.Shape != nil && (len(in.Shape) != 3 || !validChannels(in.Shape[2])) {
		return Image{}, inputErr("declared shape %v, want [height, width, 1|3|4]", in.Shape)
	}
	if len(in.Data) == 0 { // describing a column: trust its shape
		if in.Shape == nil {
			return Image{}, inputErr("an encoded image needs its data or its shape")
		}
		return pixels(schema.Uint8, HWC, in.Shape[0], in.Shape[1], in.Shape[2]), nil
	}
	h, w, c, denom, err := s.header(in)
	if err != nil {
		return Image{}, err
	}
	return pixels(schema.Uint8, HWC, scaled(h, denom), scaled(w, denom), c), nil
}

func validChannels(c int) bool { return c == 1 || c == 3 || c == 4 || c == -1 }

// header reads the file's size and checks it against the declared shape;
// it returns the full size, the channels of the output and the DCT scale
// denominator to decode at.
func (s decodeStep) header(in Image) (h, w, c, denom int, err error) {
	denom = 1
	var scalable bool
	if in.Encoded == "jpeg" {
		info, err := imaging.JPEGHeader(in.Data)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		h, w, c, scalable = info.Height, info.Width, info.Channels, info.Scalable
	} else {
		format, shape, err := imaging.Config(in.Data)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		if format != "png" {
			return 0, 0, 0, 0, base.Markf(ErrDecode, "decode image: declared png, the data is %s", format)
		}
		h, w, c = shape[0], shape[1], shape[2]
	}
	if in.Shape != nil {
		if (in.Shape[0] >= 0 && in.Shape[0] != h) || (in.Shape[1] >= 0 && in.Shape[1] != w) {
			return 0, 0, 0, 0, base.Markf(ErrDecode, "decode image: %s is %dx%d, declared shape %v", in.Encoded, w, h, in.Shape)
		}
		if in.Shape[2] > 0 {
			c = in.Shape[2]
		}
	}
	// At full size: a jpeg shrunk while decoding still holds full-size
	// buffers (a progressive file's coefficients).
	if err := imaging.CheckSize(in.Encoded, h, w, c); err != nil {
		return 0, 0, 0, 0, err
	}
	if scalable {
		denom = s.scale(h, w)
	}
	return h, w, c, denom, nil
}

// scale is the DCT scale denominator for an h x w JPEG: the largest of 8,
// 4 and 2 at which the image is still at least as large as the resize
// that follows and that resize gives exactly the size it gives from the
// full image; 1 when none is, or no resize follows.
func (s decodeStep) scale(h, w int) int {
	if s.then == nil {
		return 1
	}
	th, tw := s.then.target(h, w)
	for _, d := range []int{8, 4, 2} {
		sh, sw := scaled(h, d), scaled(w, d)
		if sh < th || sw < tw {
			continue
		}
		if h2, w2 := s.then.target(sh, sw); h2 == th && w2 == tw {
			return d
		}
	}
	return 1
}

func (s decodeStep) Apply(in, out Image, _ *rand.Rand) error {
	if in.Encoded == "" {
		copy(out.Data, in.Data)
		return nil
	}
	h, w, c, _ := out.Dims()
	if in.Encoded == "jpeg" {
		return imaging.DecodeJPEG(out.Data, in.Data, w, h, c)
	}
	return imaging.DecodeInto(out.Data, in.Data, h, w, c)
}
