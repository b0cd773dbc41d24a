package imaging

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"sync"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/decodelimit"
	"golang.org/x/image/draw"
)

// ErrDecode marks bytes that are not a decodable image. It matches
// loch.ErrCorrupt too.
var ErrDecode = base.Mark(base.ErrCorrupt, "cannot decode image", nil)

// Config returns an encoded image's format ("png" or "jpeg") and its decoded
// shape [height, width, channels] without decoding the pixels.
func Config(data []byte) (format string, shape []int, err error) {
	if h, w, c, ok := jpegConfig(data); ok {
		return "jpeg", []int{h, w, c}, nil
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return "", nil, base.Markf(ErrDecode, "decode image: %v", err)
	}
	return format, []int{cfg.Height, cfg.Width, channels(cfg.ColorModel)}, nil
}

func channels(m color.Model) int {
	switch m {
	case color.GrayModel, color.Gray16Model:
		return 1
	case color.NRGBAModel, color.NRGBA64Model:
		return 4
	}
	// RGBA models come from opaque truecolor PNGs; palettes, YCbCr and CMYK
	// are stored as RGB.
	return 3
}

// Decode decodes a png or jpeg image into HWC uint8 pixels. Grayscale
// images give 1 channel, images with alpha 4, others 3. 16-bit images are
// reduced to 8 bits.
//
// JPEG goes through DecodeJPEG, as in DecodeAs.
func Decode(data []byte) (pix []byte, shape []int, err error) {
	if isJPEG(data) {
		return DecodeAs(data, 0)
	}
	return decodeStdImage(data, 0)
}

// decodeStdImage is Decode with the standard library's decoders, which
// allocate the whole image first: its header is checked against the decode
// limit before (CheckSize), with the channels of the output (the file's,
// or channels when that is more).
func decodeStdImage(data []byte, channels int) (pix []byte, shape []int, err error) {
	format, cshape, err := Config(data)
	if err != nil {
		return nil, nil, err
	}
	if err := CheckSize(format, cshape[0], cshape[1], max(cshape[2], channels)); err != nil {
		return nil, nil, err
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, nil, base.Markf(ErrDecode, "decode image: %v", err)
	}
	return FromImage(img)
}

// DecodeAs decodes an image and converts it to the given number of channels
// (1, 3 or 4). Encoders drop an alpha channel that is fully opaque, so a
// 4-channel tensor stored as png may decode to 3 channels: DecodeAs gives
// back the 4 channels the tensor had.
//
// JPEG is decoded by DecodeJPEG (libjpeg-turbo unless built without it),
// png by the standard library: every reader of loch decodes through here
// and gets the same pixels.
func DecodeAs(data []byte, channels int) ([]byte, []int, error) {
	if !isJPEG(data) {
		return decodeAsStd(data, channels)
	}
	info, err := JPEGHeader(data)
	if err != nil {
		return nil, nil, err
	}
	c := channels
	if c != 1 && c != 3 && c != 4 {
		c = info.Channels
	}
	if err := CheckSize("jpeg", info.Height, info.Width, c); err != nil {
		return nil, nil, err
	}
	pix := make([]byte, info.Height*info.Width*c)
	if err := DecodeJPEG(pix, data, info.Width, info.Height, c); err != nil {
		return nil, nil, err
	}
	return pix, []int{info.Height, info.Width, c}, nil
}

// ErrTooLarge marks an image whose decoded size is more than the decode
// limit (loch.MaxDecodeBytes, $LOCH_MAX_DECODE_BYTES). It matches
// loch.ErrTooLarge and loch.ErrInvalidArgument, not ErrDecode.
var ErrTooLarge = decodelimit.ErrTooLarge

// CheckSize checks the size an image's header declares, height x width
// pixels of the given channels decoded as uint8, against the decode limit
// before anything is allocated for it: an empty size is ErrDecode, one
// over the limit ErrTooLarge naming format (png or jpeg), both sizes and
// the limit. Every decoder of this package calls it first; a caller that
// sizes a buffer from a header calls it before allocating.
func CheckSize(format string, height, width, channels int) error {
	if height <= 0 || width <= 0 {
		return base.Markf(ErrDecode, "decode image: %s of %dx%d pixels", format, width, height)
	}
	what := fmt.Sprintf("%s image of %dx%d pixels, %d %s", format, width, height, channels, plural(channels, "channel", "channels"))
	return decodelimit.Check(what, decodelimit.Size(1, height, width, channels))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// JPEGInfo is what a JPEG header says.
type JPEGInfo struct {
	Width, Height int
	Channels      int  // natural channels: 1 or 3
	Scalable      bool // whether DecodeJPEG can shrink it in the DCT domain
}

// Scaled is the size of a dimension decoded at 1/denom (TJSCALED).
func Scaled(dim, denom int) int { return (dim + denom - 1) / denom }

// DecodeInto decodes a png or jpeg image into dst, which holds exactly
// height x width x channels bytes, converting channels as DecodeAs does. An
// image of another size is ErrDecode.
func DecodeInto(dst, data []byte, height, width, channels int) error {
	if len(dst) != height*width*channels {
		return fmt.Errorf("decode image: %d-byte buffer for %dx%dx%d pixels", len(dst), height, width, channels)
	}
	if isJPEG(data) {
		return DecodeJPEG(dst, data, width, height, channels)
	}
	return decodeStd(dst, data, width, height, channels)
}

// isJPEG reports whether data starts like a JPEG file (SOI marker).
func isJPEG(data []byte) bool { return len(data) >= 2 && data[0] == 0xff && data[1] == 0xd8 }

// decodeStd decodes with the standard library into dst, which holds w x h
// pixels of c channels.
func decodeStd(dst, data []byte, w, h, c int) error {
	pix, shape, err := decodeAsStd(data, c)
	if err != nil {
		return err
	}
	if shape[0] != h || shape[1] != w || len(pix) != len(dst) {
		return base.Markf(ErrDecode, "decode image: decoded %v, want %v", shape, []int{h, w, c})
	}
	copy(dst, pix)
	return nil
}

// decodeAsStd is DecodeAs with the standard library's decoders.
func decodeAsStd(data []byte, channels int) ([]byte, []int, error) {
	pix, shape, err := decodeStdImage(data, channels)
	if err != nil || shape[2] == channels || !validChannels(channels) {
		return pix, shape, err
	}
	out := make([]byte, shape[0]*shape[1]*channels)
	if err := ConvertChannels(out, pix, shape[2], channels); err != nil {
		return nil, nil, err
	}
	return out, []int{shape[0], shape[1], channels}, nil
}

// FromImage converts an image.Image to HWC uint8 pixels.
func FromImage(img image.Image) ([]byte, []int, error) {
	b := img.Bounds()
	h, w := b.Dy(), b.Dx()
	switch m := img.(type) {
	case *image.Gray:
		pix := make([]byte, h*w)
		for y := 0; y < h; y++ {
			copy(pix[y*w:(y+1)*w], m.Pix[y*m.Stride:y*m.Stride+w])
		}
		return pix, []int{h, w, 1}, nil
	case *image.NRGBA:
		pix := make([]byte, h*w*4)
		for y := 0; y < h; y++ {
			copy(pix[y*w*4:(y+1)*w*4], m.Pix[y*m.Stride:y*m.Stride+w*4])
		}
		return pix, []int{h, w, 4}, nil
	case *image.RGBA:
		if m.Opaque() {
			return rgbaToRGB(m), []int{h, w, 3}, nil
		}
	}
	c := channels(img.ColorModel())
	if c == 1 {
		g := image.NewGray(image.Rect(0, 0, w, h))
		draw.Draw(g, g.Bounds(), img, b.Min, draw.Src)
		return FromImage(g)
	}
	if c == 4 {
		n := image.NewNRGBA(image.Rect(0, 0, w, h))
		draw.Draw(n, n.Bounds(), img, b.Min, draw.Src)
		return FromImage(n)
	}
	rgba := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(rgba, rgba.Bounds(), img, b.Min, draw.Src)
	return rgbaToRGB(rgba), []int{h, w, 3}, nil
}

// rgbaToRGB drops the alpha of an RGBA image's pixels.
func rgbaToRGB(m *image.RGBA) []byte {
	h, w := m.Rect.Dy(), m.Rect.Dx()
	pix := make([]byte, h*w*3)
	for y := 0; y < h; y++ { // cannot fail: whole rows of pixels
		_ = ConvertChannels(pix[y*w*3:(y+1)*w*3], m.Pix[y*m.Stride:y*m.Stride+w*4], 4, 3)
	}
	return pix
}

// ToImage wraps HWC uint8 pixels (1, 3 or 4 channels) as an image.Image.
func ToImage(pix []byte, shape []int) (image.Image, error) {
	if len(shape) != 3 || shape[0]*shape[1]*shape[2] != len(pix) {
		return nil, fmt.Errorf("image tensor shape %v does not match %d bytes", shape, len(pix))
	}
	h, w, c := shape[0], shape[1], shape[2]
	r := image.Rect(0, 0, w, h)
	switch c {
	case 1:
		return &image.Gray{Pix: pix, Stride: w, Rect: r}, nil
	case 4:
		return &image.NRGBA{Pix: pix, Stride: 4 * w, Rect: r}, nil
	case 3:
		out := image.NewNRGBA(r)
		_ = ConvertChannels(out.Pix, pix, 3, 4) // sizes checked above
		return out, nil
	}
	return nil, fmt.Errorf("image tensor with %d channels, want 1, 3 or 4", c)
}

// pngEncoder reuses its compression buffers across calls (safe for
// concurrent use through the pool).
var pngEncoder = png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: &bufferPool{}}

type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() *png.EncoderBuffer {
	if e, ok := b.p.Get().(*png.EncoderBuffer); ok {
		return e
	}
	return nil
}

func (b *bufferPool) Put(e *png.EncoderBuffer) { b.p.Put(e) }

// Encode encodes HWC uint8 pixels as "png" (lossless) or "jpeg" (quality 1..100).
func Encode(format string, pix []byte, shape []int, quality int) ([]byte, error) {
	img, err := ToImage(pix, shape)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	switch format {
	case "png":
		err = pngEncoder.Encode(&buf, img)
	case "jpeg":
		if shape[2] == 4 {
			return nil, fmt.Errorf("jpeg cannot hold an alpha channel (shape %v)", shape)
		}
		if quality <= 0 {
			quality = 90
		}
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality})
	default:
		return nil, fmt.Errorf("unknown image format %q (want png or jpeg)", format)
	}
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", format, err)
	}
	return buf.Bytes(), nil
}
