package transform

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"unsafe"

	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/schema"
)

// ToFloat returns the step "to_float": uint8 pixels to float32 v/255 in
// [0, 1], in either layout.
func ToFloat() Step { return toFloatStep{} }

type toFloatStep struct{}

func (toFloatStep) String() string { return "to_float" }
func (toFloatStep) Random() bool   { return false }

func (toFloatStep) Out(in Image) (Image, error) {
	if _, _, _, err := need(in, onlyUint8, nil); err != nil {
		return Image{}, err
	}
	return Image{Shape: append([]int(nil), in.Shape...), DType: schema.Float32, Layout: in.Layout}, nil
}

func (toFloatStep) Apply(in, out Image, _ *rand.Rand) error {
	for i, v := range in.Data {
		putF32(out.Data, i, float32(v)/255)
	}
	return nil
}

// Normalize returns the step "normalize=M/S": float32 pixels to
// (v - mean[c]) / std[c] per channel, in either layout. mean and std have
// one value per channel, or one value for every channel.
func Normalize(mean, std []float32) Step {
	return normalizeStep{mean: append([]float32(nil), mean...), std: append([]float32(nil), std...)}
}

// presets are the means and stds that normalize accepts by name.
var presets = map[string][2][]float32{
	"imagenet": {{0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}},
	"clip":     {{0.48145466, 0.4578275, 0.40821073}, {0.26862954, 0.26130258, 0.27577711}},
}

// NormalizePreset returns the step "normalize=NAME" for a named mean and
// std: "imagenet" (torchvision's ImageNet statistics) or "clip" (OpenAI
// CLIP's). Both have 3 channels.
func NormalizePreset(name string) (Step, error) {
	p, ok := presets[name]
	if !ok {
		return nil, base.Markf(ErrSpec, "normalize: unknown preset %q (want imagenet or clip, or MEAN/STD)", name)
	}
	return normalizeStep{mean: p[0], std: p[1], preset: name}, nil
}

type normalizeStep struct {
	mean, std []float32
	preset    string
}

func (s normalizeStep) String() string {
	if s.preset != "" {
		return "normalize=" + s.preset
	}
	return "normalize=" + joinFloats(s.mean) + "/" + joinFloats(s.std)
}

func joinFloats(fs []float32) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = fmt.Sprint(f) // shortest form that reads back as the same float32
	}
	return strings.Join(parts, ":")
}

func (normalizeStep) Random() bool { return false }

func (s normalizeStep) check(c int) error {
	if c >= 0 && len(s.mean) != 1 && len(s.mean) != c {
		return inputErr("%d mean and std values for %d channels", len(s.mean), c)
	}
	return nil
}

func (s normalizeStep) Out(in Image) (Image, error) {
	_, _, c, err := need(in, onlyFloat, nil)
	if err != nil {
		if in.DType == schema.Uint8 && in.Encoded == "" {
			return Image{}, inputErr("want float32 pixels, got uint8: put to_float before normalize")
		}
		return Image{}, err
	}
	if err := s.check(c); err != nil {
		return Image{}, err
	}
	return Image{Shape: append([]int(nil), in.Shape...), DType: schema.Float32, Layout: in.Layout}, nil
}

func (s normalizeStep) param(ch int) (mean, std float32) {
	if len(s.mean) == 1 {
		return s.mean[0], s.std[0]
	}
	return s.mean[ch], s.std[ch]
}

func (s normalizeStep) Apply(in, out Image, _ *rand.Rand) error {
	h, w, c, _ := in.Dims()
	if in.Layout == CHW {
		for ch := 0; ch < c; ch++ {
			m, sd := s.param(ch)
			for i := ch * h * w; i < (ch+1)*h*w; i++ {
				putF32(out.Data, i, (getF32(in.Data, i)-m)/sd)
			}
		}
		return nil
	}
	for i := 0; i < h*w*c; i++ {
		m, sd := s.param(i % c)
		putF32(out.Data, i, (getF32(in.Data, i)-m)/sd)
	}
	return nil
}

// ToCHW returns the step "chw": the transpose from [height, width,
// channels] to [channels, height, width], any dtype.
func ToCHW() Step { return chwStep{} }

type chwStep struct{}

func (chwStep) String() string { return "chw" }
func (chwStep) Random() bool   { return false }

func (chwStep) Out(in Image) (Image, error) {
	h, w, c, err := need(in, anyDType, onlyHWC)
	if err != nil {
		return Image{}, err
	}
	return pixels(in.DType, CHW, h, w, c), nil
}

func (chwStep) Apply(in, out Image, _ *rand.Rand) error {
	h, w, c, _ := in.Dims()
	n := h * w
	if in.DType.Size() == 1 {
		for i := 0; i < n; i++ {
			for ch := 0; ch < c; ch++ {
				out.Data[ch*n+i] = in.Data[i*c+ch]
			}
		}
		return nil
	}
	for i := 0; i < n; i++ {
		for ch := 0; ch < c; ch++ {
			copy(out.Data[(ch*n+i)*4:(ch*n+i)*4+4], in.Data[(i*c+ch)*4:])
		}
	}
	return nil
}

// Grayscale returns the step "grayscale": 1, 3 or 4 channels (alpha
// dropped) to 1 channel of luma 0.299 R + 0.587 G + 0.114 B (uint8:
// rounded), by imaging.ConvertChannels. HWC, any dtype.
func Grayscale() Step { return channelStep{to: 1} }

// RGB returns the step "rgb": 1 channel (repeated), 3, or 4 (alpha
// dropped) to 3 channels, by imaging.ConvertChannels. HWC, any dtype.
func RGB() Step { return channelStep{to: 3} }

type channelStep struct{ to int }

func (s channelStep) String() string {
	if s.to == 1 {
		return "grayscale"
	}
	return "rgb"
}

func (channelStep) Random() bool { return false }

func (s channelStep) Out(in Image) (Image, error) {
	h, w, c, err := need(in, anyDType, onlyHWC)
	if err != nil {
		return Image{}, err
	}
	if c == 2 {
		return Image{}, inputErr("2 channels (gray and alpha?) are not supported")
	}
	return pixels(in.DType, HWC, h, w, s.to), nil
}

func (s channelStep) Apply(in, out Image, _ *rand.Rand) error {
	_, _, c, _ := in.Dims()
	if in.DType == schema.Uint8 {
		return imaging.ConvertChannels(out.Data, in.Data, c, s.to)
	}
	src := asFloat32(in.Data)
	if src == nil { // a big-endian machine or an unaligned buffer
		src = make([]float32, len(in.Data)/4)
		for i := range src {
			src[i] = getF32(in.Data, i)
		}
	}
	dst := asFloat32(out.Data)
	if dst == nil {
		dst = make([]float32, len(out.Data)/4)
		defer func() {
			for i, v := range dst {
				putF32(out.Data, i, v)
			}
		}()
	}
	return imaging.ConvertChannels(dst, src, c, s.to)
}

// floatConv is to_float fused with a following normalize and chw: one pass
// through a table per channel that holds, for each uint8 value, exactly
// what the separate steps compute.
type floatConv struct {
	norm  *normalizeStep
	chw   bool
	names string
	lut   [][256]float32 // one table, or one per channel
}

// fuseFloat fuses steps[0] (to_float) with the normalize and chw steps
// that directly follow it, each at most once, and returns the fused step
// and the number of steps it replaces.
func fuseFloat(steps []Step) (Step, int, error) {
	f := floatConv{names: steps[0].String()}
	n := 1
	for ; n < len(steps); n++ {
		switch s := steps[n].(type) {
		case normalizeStep:
			if f.norm != nil {
				return finishFloat(f, n)
			}
			f.norm = &s
		case chwStep:
			if f.chw {
				return finishFloat(f, n)
			}
			f.chw = true
		default:
			return finishFloat(f, n)
		}
		f.names += "," + steps[n].String()
	}
	return finishFloat(f, n)
}

func finishFloat(f floatConv, n int) (Step, int, error) {
	if n == 1 {
		return toFloatStep{}, 1, nil
	}
	tables := 1
	if f.norm != nil {
		tables = len(f.norm.mean)
	}
	f.lut = make([][256]float32, tables)
	for ch := range f.lut {
		for v := range 256 {
			x := float32(v) / 255
			if f.norm != nil {
				m, s := f.norm.param(ch)
				x = (x - m) / s
			}
			f.lut[ch][v] = x
		}
	}
	return f, n, nil
}

func (f floatConv) String() string { return f.names }
func (floatConv) Random() bool     { return false }

func (f floatConv) Out(in Image) (Image, error) {
	h, w, c, err := need(in, onlyUint8, nil)
	if err != nil {
		return Image{}, err
	}
	if f.chw && in.Layout == CHW {
		return Image{}, inputErr("chw needs hwc layout, got chw")
	}
	if f.norm != nil {
		if err := f.norm.check(c); err != nil {
			return Image{}, err
		}
	}
	l := in.Layout
	if f.chw {
		l = CHW
	}
	return pixels(schema.Float32, l, h, w, c), nil
}

func (f floatConv) table(ch int) *[256]float32 {
	if len(f.lut) == 1 {
		return &f.lut[0]
	}
	return &f.lut[ch]
}

func (f floatConv) Apply(in, out Image, _ *rand.Rand) error {
	h, w, c, _ := in.Dims()
	n := h * w
	dst := asFloat32(out.Data)
	if dst == nil { // a big-endian machine or an unaligned buffer
		dst = make([]float32, len(in.Data))
		defer func() {
			for i, v := range dst {
				putF32(out.Data, i, v)
			}
		}()
	}
	switch {
	case in.Layout == CHW: // planes stay planes
		for ch := 0; ch < c; ch++ {
			lut := f.table(ch)
			plane := dst[ch*n : (ch+1)*n]
			for i, v := range in.Data[ch*n : (ch+1)*n] {
				plane[i] = lut[v]
			}
		}
	case f.chw && c == 3:
		l0, l1, l2 := f.table(0), f.table(1), f.table(2)
		p0 := dst[:n]
		p1, p2 := dst[n:2*n], dst[2*n:3*n]
		p1, p2 = p1[:len(p0)], p2[:len(p0)]
		src := in.Data[:3*n]
		for i := range p0 {
			px := src[i*3 : i*3+3 : i*3+3]
			p0[i], p1[i], p2[i] = l0[px[0]], l1[px[1]], l2[px[2]]
		}
	case f.chw:
		for ch := 0; ch < c; ch++ {
			lut := f.table(ch)
			plane := dst[ch*n : (ch+1)*n]
			for i := range plane {
				plane[i] = lut[in.Data[i*c+ch]]
			}
		}
	default:
		for i, v := range in.Data {
			dst[i] = f.table(i % c)[v]
		}
	}
	return nil
}

// littleEndian is whether float32 values can be stored in their native
// byte order.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// asFloat32 views b as float32 values when that gives little-endian bytes
// (a little-endian machine and a 4-byte aligned b), and returns nil
// otherwise.
func asFloat32(b []byte) []float32 {
	if !littleEndian || len(b) == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%4 != 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

func putF32(b []byte, i int, v float32) {
	binary.LittleEndian.PutUint32(b[i*4:], math.Float32bits(v))
}

func getF32(b []byte, i int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[i*4:]))
}
