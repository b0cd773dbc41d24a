package transform

import (
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/decodelimit"
	"github.com/lochdata/loch/schema"
)

// size is a width x height, or a shorter side when only s is set.
type size struct{ w, h, s int }

func (z size) String() string {
	if z.s > 0 {
		return strconv.Itoa(z.s)
	}
	return fmt.Sprintf("%dx%d", z.w, z.h)
}

func (z size) valid() bool {
	const maxDim = 1 << 16
	if z.s != 0 {
		return z.s > 0 && z.s <= maxDim && z.w == 0 && z.h == 0
	}
	return z.w > 0 && z.h > 0 && z.w <= maxDim && z.h <= maxDim
}

// Resize returns the step "resize=WxH": bilinear resampling
// (imaging.Bilinear) of uint8 HWC pixels to width w and height h.
// Shrinking widens the filter to average every input pixel
// (antialiasing), as Pillow and torchvision's antialias=True do. An output
// larger than the decode limit is ErrTooLarge.
func Resize(w, h int) Step { return resizeStep{size{w: w, h: h}} }

// ResizeShorter returns the step "resize=S": bilinear resampling of uint8
// HWC pixels so that the shorter side is s and the aspect ratio is kept,
// the longer side rounded down as torchvision's Resize(s) does.
func ResizeShorter(s int) Step { return resizeStep{size{s: s}} }

type resizeStep struct{ to size }

func (r resizeStep) String() string { return "resize=" + r.to.String() }
func (r resizeStep) Random() bool   { return false }

// target is the output height and width for an input of h x w (-1 when
// unknown).
func (r resizeStep) target(h, w int) (int, int) {
	if r.to.s == 0 {
		return r.to.h, r.to.w
	}
	switch {
	case h < 0 || w < 0:
		return -1, -1
	case h <= w:
		return r.to.s, r.to.s * w / h
	default:
		return r.to.s * h / w, r.to.s
	}
}

func (r resizeStep) Out(in Image) (Image, error) {
	h, w, c, err := need(in, onlyUint8, onlyHWC)
	if err != nil {
		return Image{}, err
	}
	th, tw := r.target(h, w)
	if err := checkOutput(fmt.Sprintf("resizing %dx%d to", w, h), th, tw, c); err != nil {
		return Image{}, err
	}
	return pixels(schema.Uint8, HWC, th, tw, c), nil
}

func (r resizeStep) Apply(in, out Image, _ *rand.Rand) error {
	h, w, c, _ := in.Dims()
	th, tw, _, _ := out.Dims()
	return imaging.Resize(out.Data, in.Data, h, w, th, tw, c, imaging.Bilinear)
}

// CenterCrop returns the step "center_crop=WxH": the w x h rectangle at
// the centre of the image (offsets rounded as torchvision does). Any dtype
// and layout; an image smaller than the crop is an error.
func CenterCrop(w, h int) Step { return cropStep{w: w, h: h} }

// RandomCrop returns the step "random_crop=WxH": a w x h rectangle at a
// uniformly random offset, top drawn before left.
func RandomCrop(w, h int) Step { return cropStep{w: w, h: h, random: true} }

type cropStep struct {
	w, h   int
	random bool
}

func (s cropStep) String() string {
	if s.random {
		return fmt.Sprintf("random_crop=%dx%d", s.w, s.h)
	}
	return fmt.Sprintf("center_crop=%dx%d", s.w, s.h)
}

func (s cropStep) Random() bool { return s.random }

func (s cropStep) Out(in Image) (Image, error) {
	h, w, c, err := need(in, anyDType, nil)
	if err != nil {
		return Image{}, err
	}
	if (h >= 0 && h < s.h) || (w >= 0 && w < s.w) {
		return Image{}, inputErr("the image (%dx%d) is smaller than the %dx%d crop", w, h, s.w, s.h)
	}
	return pixels(in.DType, in.Layout, s.h, s.w, c), nil
}

func (s cropStep) Apply(in, out Image, rng *rand.Rand) error {
	h, w, _, _ := in.Dims()
	top, left := s.offset(h, w, rng)
	crop(out.Data, in, top, left, s.h, s.w)
	return nil
}

// offset places the crop in an image of h x w.
func (s cropStep) offset(h, w int, rng *rand.Rand) (top, left int) {
	if s.random {
		top = rng.IntN(h - s.h + 1)
		left = rng.IntN(w - s.w + 1)
		return top, left
	}
	return int(math.RoundToEven(float64(h-s.h) / 2)), int(math.RoundToEven(float64(w-s.w) / 2))
}

// resizeCrop is resize fused with the crop that follows it: only the
// pixels that the crop keeps are computed, with the same values.
type resizeCrop struct {
	resize resizeStep
	crop   cropStep
}

func (s resizeCrop) String() string { return s.resize.String() + "," + s.crop.String() }
func (s resizeCrop) Random() bool   { return s.crop.random }

func (s resizeCrop) Out(in Image) (Image, error) {
	mid, err := s.resize.Out(in)
	if err != nil {
		return Image{}, stepError(s.resize, in, err)
	}
	out, err := s.crop.Out(mid)
	if err != nil {
		return Image{}, stepError(s.crop, mid, err)
	}
	return out, nil
}

func (s resizeCrop) Apply(in, out Image, rng *rand.Rand) error {
	h, w, c, _ := in.Dims()
	th, tw := s.resize.target(h, w)
	top, left := s.crop.offset(th, tw, rng)
	win := image.Rect(left, top, left+s.crop.w, top+s.crop.h)
	return imaging.ResizeRegion(out.Data, in.Data, h, w, th, tw, c, imaging.Bilinear, imaging.Region{Dst: win})
}

// crop copies the ch x cw rectangle at (top, left) of in into dst.
func crop(dst []byte, in Image, top, left, ch, cw int) {
	h, w, c, _ := in.Dims()
	es := in.DType.Size()
	if in.Layout == CHW {
		for p := 0; p < c; p++ {
			plane := in.Data[p*h*w*es:]
			for y := 0; y < ch; y++ {
				off := ((top+y)*w + left) * es
				copy(dst[((p*ch)+y)*cw*es:], plane[off:off+cw*es])
			}
		}
		return
	}
	row := cw * c * es
	for y := 0; y < ch; y++ {
		off := ((top+y)*w + left) * c * es
		copy(dst[y*row:(y+1)*row], in.Data[off:off+row])
	}
}

// RandomResizedCrop returns the step "random_resized_crop=WxH": a crop of
// random area (a fraction of the image's area uniform in scale) and aspect
// ratio (log-uniform in ratio, width over height), resized to w x h, as
// torchvision's RandomResizedCrop; after ten failed draws it falls back to a
// centre crop clamped to the ratio range. uint8 HWC input. A zero scale or
// ratio means the default: scale [0.08, 1], ratio [3/4, 4/3].
func RandomResizedCrop(w, h int, scale, ratio [2]float64) Step {
	if scale == [2]float64{} {
		scale = defaultScale
	}
	if ratio == [2]float64{} {
		ratio = defaultRatio
	}
	return rrcStep{w: w, h: h, scale: scale, ratio: ratio}
}

var (
	defaultScale = [2]float64{0.08, 1}
	defaultRatio = [2]float64{3.0 / 4, 4.0 / 3}
)

type rrcStep struct {
	w, h         int
	scale, ratio [2]float64
}

func (s rrcStep) String() string {
	out := fmt.Sprintf("random_resized_crop=%dx%d", s.w, s.h)
	if s.scale != defaultScale {
		out += fmt.Sprintf(":scale=%s-%s", fmtFloat(s.scale[0]), fmtFloat(s.scale[1]))
	}
	if s.ratio != defaultRatio {
		out += fmt.Sprintf(":ratio=%s-%s", fmtFloat(s.ratio[0]), fmtFloat(s.ratio[1]))
	}
	return out
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func (s rrcStep) Random() bool { return true }

func (s rrcStep) Out(in Image) (Image, error) {
	_, _, c, err := need(in, onlyUint8, onlyHWC)
	if err != nil {
		return Image{}, err
	}
	if err := checkOutput(s.String()+" to", s.h, s.w, c); err != nil {
		return Image{}, err
	}
	return pixels(schema.Uint8, HWC, s.h, s.w, c), nil
}

// region draws the crop: its top, left, height and width.
func (s rrcStep) region(h, w int, rng *rand.Rand) (top, left, ch, cw int) {
	area := float64(h * w)
	logLo, logHi := math.Log(s.ratio[0]), math.Log(s.ratio[1])
	for range 10 {
		target := area * (s.scale[0] + rng.Float64()*(s.scale[1]-s.scale[0]))
		aspect := math.Exp(logLo + rng.Float64()*(logHi-logLo))
		cw := int(math.RoundToEven(math.Sqrt(target * aspect)))
		ch := int(math.RoundToEven(math.Sqrt(target / aspect)))
		if 0 < cw && cw <= w && 0 < ch && ch <= h {
			return rng.IntN(h - ch + 1), rng.IntN(w - cw + 1), ch, cw
		}
	}
	inRatio := float64(w) / float64(h)
	cw, ch = w, h
	switch {
	case inRatio < s.ratio[0]:
		ch = int(math.RoundToEven(float64(cw) / s.ratio[0]))
	case inRatio > s.ratio[1]:
		cw = int(math.RoundToEven(float64(ch) * s.ratio[1]))
	}
	ch, cw = max(min(ch, h), 1), max(min(cw, w), 1)
	return (h - ch) / 2, (w - cw) / 2, ch, cw
}

func (s rrcStep) Apply(in, out Image, rng *rand.Rand) error {
	h, w, c, _ := in.Dims()
	top, left, ch, cw := s.region(h, w, rng)
	region := image.Rect(left, top, left+cw, top+ch)
	return imaging.ResizeRegion(out.Data, in.Data, h, w, s.h, s.w, c, imaging.Bilinear, imaging.Region{Src: region})
}

// Flip returns the step "flip" (p = 0.5) or "flip=P": a horizontal
// mirror with probability p, decided by one rng.Float64() draw per sample.
// Any dtype and layout.
func Flip(p float64) Step { return flipStep{p: p} }

// HFlip returns the step "hflip": an unconditional horizontal mirror.
func HFlip() Step { return flipStep{p: 1, always: true} }

type flipStep struct {
	p      float64
	always bool
}

func (s flipStep) String() string {
	switch {
	case s.always:
		return "hflip"
	case s.p == 0.5:
		return "flip"
	}
	return "flip=" + fmtFloat(s.p)
}

func (s flipStep) Random() bool { return !s.always }

func (s flipStep) Out(in Image) (Image, error) {
	if _, _, _, err := need(in, anyDType, nil); err != nil {
		return Image{}, err
	}
	return Image{Shape: append([]int(nil), in.Shape...), DType: in.DType, Layout: in.Layout}, nil
}

func (s flipStep) Apply(in, out Image, rng *rand.Rand) error {
	if !s.always && rng.Float64() >= s.p {
		copy(out.Data, in.Data)
		return nil
	}
	h, w, c, _ := in.Dims()
	es := in.DType.Size()
	if in.Layout == CHW {
		for r := 0; r < c*h; r++ {
			mirror(out.Data[r*w*es:(r+1)*w*es], in.Data[r*w*es:(r+1)*w*es], es)
		}
		return nil
	}
	row := w * c * es
	for y := 0; y < h; y++ {
		mirror(out.Data[y*row:(y+1)*row], in.Data[y*row:(y+1)*row], c*es)
	}
	return nil
}

// mirror writes src's pixels of pb bytes into dst in reverse order.
func mirror(dst, src []byte, pb int) {
	n := len(src) / pb
	switch pb {
	case 1:
		for x, v := range src {
			dst[n-1-x] = v
		}
	case 3:
		for x := 0; x < n; x++ {
			s, d := src[x*3:x*3+3], dst[(n-1-x)*3:(n-x)*3]
			d[0], d[1], d[2] = s[0], s[1], s[2]
		}
	default:
		for x := 0; x < n; x++ {
			copy(dst[(n-1-x)*pb:(n-x)*pb], src[x*pb:(x+1)*pb])
		}
	}
}

// checkOutput checks a step's uint8 output of h x w pixels of c channels
// against the decode limit, which bounds what a step allocates as it
// bounds what a decoder does: an error that is ErrInput and ErrTooLarge.
func checkOutput(what string, h, w, c int) error {
	unit := "channels"
	if c == 1 {
		unit = "channel"
	}
	err := decodelimit.Check(fmt.Sprintf("%s %dx%d pixels, %d %s", what, w, h, c, unit), decodelimit.Size(1, h, w, c))
	if err != nil {
		return base.Mark(ErrInput, "", err)
	}
	return nil
}
