package transform

import (
	"fmt"
	"io"

	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/schema"
)

// Errors that callers branch on, tested with errors.Is.
var (
	// ErrSpec marks a transform spec that Parse cannot read, or step
	// arguments that New rejects. It matches loch.ErrInvalidArgument too.
	ErrSpec = base.Mark(base.ErrInvalidArgument, "invalid transform spec", nil)
	// ErrInput marks an image that a step cannot take: the wrong dtype,
	// layout or channel count, or too small for a crop. It matches
	// loch.ErrInvalidArgument too.
	ErrInput = base.Mark(base.ErrInvalidArgument, "unsupported input", nil)
	// ErrDecode marks encoded bytes that are not a decodable image, or whose
	// size disagrees with the shape they were declared with. It is
	// imaging.ErrDecode, so either name matches, and it matches
	// loch.ErrCorrupt too.
	ErrDecode = imaging.ErrDecode
)

// ErrTooLarge marks an image, video clip or audio whose decoded size, or
// a resize whose output, is more than the decode limit
// (loch.MaxDecodeBytes, $LOCH_MAX_DECODE_BYTES): checked from the header,
// before anything is allocated for it. It is imaging.ErrTooLarge and
// matches loch.ErrTooLarge and loch.ErrInvalidArgument (not ErrDecode).
var ErrTooLarge = imaging.ErrTooLarge

// TurboJPEG reports whether JPEG decoding uses libjpeg-turbo (see
// imaging.TurboJPEG, where the decoders live).
const TurboJPEG = imaging.TurboJPEG

// Layout is the order of an image's dimensions.
type Layout uint8

// The layouts. The zero value is HWC, the layout of loch's image tensors.
const (
	HWC Layout = iota // [height, width, channels]
	CHW               // [channels, height, width], made by the chw step
)

func (l Layout) String() string {
	if l == CHW {
		return "chw"
	}
	return "hwc"
}

// An Image is one sample flowing through a Pipeline: either pixels, or
// encoded bytes with the shape they decode to.
//
// Pixels (Encoded == "") are stored densely in Data in Layout order; Shape
// has three dimensions; DType is schema.Uint8 or schema.Float32, and
// float32 values are little-endian. Encoded images ("jpeg" or "png") hold
// the file's bytes in Data; Shape, when not nil, is the declared decoded
// shape [height, width, channels] (decode checks it against the file and
// converts to that channel count), and DType is schema.Uint8.
//
// A dimension of -1 is unknown: Out and OutShape accept them and give -1
// wherever the output depends on them; Apply needs real dimensions.
//
// An encoded video or audio sample may leave Data empty and give Source
// instead: its container bytes, read by range (the loader passes a reader
// over the stored sample to a pipeline that DecodesPart, so that a clip or
// an audio segment fetches only the byte ranges it decodes).
type Image struct {
	Shape   []int
	DType   schema.DType
	Layout  Layout
	Encoded string
	Data    []byte
	Source  *io.SectionReader
}

// Dims returns the height, width and channels of a three-dimensional image
// in either layout, and false when the shape has another rank.
func (im Image) Dims() (h, w, c int, ok bool) {
	if len(im.Shape) != 3 {
		return 0, 0, 0, false
	}
	if im.Layout == CHW {
		return im.Shape[1], im.Shape[2], im.Shape[0], true
	}
	return im.Shape[0], im.Shape[1], im.Shape[2], true
}

// Size is the number of bytes of the image's pixels, or -1 when the image
// is encoded or a dimension is unknown.
func (im Image) Size() int {
	if im.Encoded != "" || len(im.Shape) == 0 {
		return -1
	}
	n := im.DType.Size()
	for _, d := range im.Shape {
		if d < 0 {
			return -1
		}
		n *= d
	}
	return n
}

// describe names an image in error messages: "uint8 [100 120 3] hwc",
// "jpeg [480 640 3]".
func (im Image) describe() string {
	if im.Encoded != "" {
		if im.Shape == nil {
			return fmt.Sprintf("%s (%d bytes)", im.Encoded, len(im.Data))
		}
		return fmt.Sprintf("%s %v", im.Encoded, im.Shape)
	}
	return fmt.Sprintf("%s %v %s", im.DType, im.Shape, im.Layout)
}

// pixels builds the descriptor of a pixel image in HWC or CHW order.
func pixels(dt schema.DType, l Layout, h, w, c int) Image {
	if l == CHW {
		return Image{Shape: []int{c, h, w}, DType: dt, Layout: CHW}
	}
	return Image{Shape: []int{h, w, c}, DType: dt}
}

// A StepError reports the step that failed and the image it was given.
type StepError struct {
	Step  string // the step as written in a spec, e.g. "center_crop=224x224"
	Input Image  // the step's input, without its Data
	Err   error

	desc string // Input described while it had its Data
}

func (e *StepError) Error() string {
	return fmt.Sprintf("transform %s on %s: %v", e.Step, e.desc, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

func stepError(s Step, in Image, err error) error {
	if se, ok := err.(*StepError); ok { // from a step inside a fused one
		return se
	}
	desc := in.describe()
	in.Data = nil
	return &StepError{Step: s.String(), Input: in, Err: err, desc: desc}
}

// inputErr makes an ErrInput error with a message.
func inputErr(format string, args ...any) error {
	return base.Markf(ErrInput, "%s", fmt.Sprintf(format, args...))
}

// need checks that in is a pixel image of one of the dtypes and layouts
// given (a nil list allows any) with 1 to 4 channels, and returns its
// dimensions.
func need(in Image, dtypes []schema.DType, layouts []Layout) (h, w, c int, err error) {
	if in.Encoded != "" {
		return 0, 0, 0, inputErr("the image is %s-encoded: decode it first", in.Encoded)
	}
	h, w, c, ok := in.Dims()
	if !ok {
		return 0, 0, 0, inputErr("want a 3-dimensional image, got shape %v", in.Shape)
	}
	if dtypes != nil && !contains(dtypes, in.DType) {
		return 0, 0, 0, inputErr("want %s pixels, got %s", orList(dtypes), in.DType)
	}
	if layouts != nil && !contains(layouts, in.Layout) {
		return 0, 0, 0, inputErr("want %s layout, got %s", orList(layouts), in.Layout)
	}
	if in.DType != schema.Uint8 && in.DType != schema.Float32 {
		return 0, 0, 0, inputErr("want uint8 or float32 pixels, got %s", in.DType)
	}
	if c == 0 || c > 4 || h == 0 || w == 0 || h < -1 || w < -1 || c < -1 {
		return 0, 0, 0, inputErr("want height, width >= 1 and 1 to 4 channels, got %v %s", in.Shape, in.Layout)
	}
	return h, w, c, nil
}

var (
	anyDType  = []schema.DType{schema.Uint8, schema.Float32}
	onlyUint8 = []schema.DType{schema.Uint8}
	onlyFloat = []schema.DType{schema.Float32}
	onlyHWC   = []Layout{HWC}
)

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func orList[T fmt.Stringer](s []T) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " or "
		}
		out += x.String()
	}
	return out
}
