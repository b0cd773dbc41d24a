package imaging

import "fmt"

// A Pixel is the element type of the HWC images ConvertChannels takes:
// uint8 pixels as stored, or float32 pixels as transforms make them.
type Pixel interface{ uint8 | float32 }

// ConvertChannels converts HWC pixels of from channels each in src into
// dst, of to channels each; from and to are 1 (gray), 3 (RGB) or 4 (RGBA),
// and dst holds len(src)/from*to elements. The rules, the same for every
// reader and writer of loch:
//
//   - gray to RGB or RGBA repeats the gray value;
//   - RGB or RGBA to gray is the ITU-R BT.601 luma 0.299 R + 0.587 G +
//     0.114 B, alpha ignored: for uint8 rounded half up in integer
//     arithmetic, (299 R + 587 G + 114 B + 500) / 1000; for float32
//     computed in float32;
//   - RGBA to RGB drops alpha;
//   - gray or RGB to RGBA adds an opaque alpha: 255 for uint8, 1 for
//     float32 (to_float's scale);
//   - the same count copies.
//
// dst and src must not overlap.
func ConvertChannels[T Pixel](dst, src []T, from, to int) error {
	if !validChannels(from) || !validChannels(to) {
		return fmt.Errorf("convert %d to %d channels: want 1, 3 or 4", from, to)
	}
	n := len(src) / from
	if n*from != len(src) || len(dst) != n*to {
		return fmt.Errorf("convert %d to %d channels: %d and %d values are not the same number of pixels", from, to, len(src), len(dst))
	}
	switch {
	case from == to:
		copy(dst, src)
	case to == 1:
		switch d := any(dst).(type) {
		case []uint8:
			lumaUint8(d, any(src).([]uint8), from)
		case []float32:
			lumaFloat32(d, any(src).([]float32), from)
		}
	case from == 1:
		if to == 3 {
			for i, v := range src {
				o := dst[i*3 : i*3+3 : i*3+3]
				o[0], o[1], o[2] = v, v, v
			}
			return nil
		}
		a := opaqueAlpha[T]()
		for i, v := range src {
			o := dst[i*4 : i*4+4 : i*4+4]
			o[0], o[1], o[2], o[3] = v, v, v, a
		}
	case to == 4: // from RGB
		a := opaqueAlpha[T]()
		for i := 0; i < n; i++ {
			p, o := src[i*3:i*3+3:i*3+3], dst[i*4:i*4+4:i*4+4]
			o[0], o[1], o[2], o[3] = p[0], p[1], p[2], a
		}
	default: // RGBA to RGB
		for i := 0; i < n; i++ {
			p, o := src[i*4:i*4+3:i*4+3], dst[i*3:i*3+3:i*3+3]
			o[0], o[1], o[2] = p[0], p[1], p[2]
		}
	}
	return nil
}

func validChannels(c int) bool { return c == 1 || c == 3 || c == 4 }

// opaqueAlpha is the alpha of an opaque pixel.
func opaqueAlpha[T Pixel]() T {
	var a T
	switch p := any(&a).(type) {
	case *uint8:
		*p = 255
	case *float32:
		*p = 1
	}
	return a
}

func lumaUint8(dst, src []uint8, c int) {
	for i := range dst {
		p := src[i*c : i*c+3 : i*c+3]
		dst[i] = uint8((299*int(p[0]) + 587*int(p[1]) + 114*int(p[2]) + 500) / 1000)
	}
}

func lumaFloat32(dst, src []float32, c int) {
	for i := range dst {
		p := src[i*c : i*c+3 : i*c+3]
		dst[i] = 0.299*p[0] + 0.587*p[1] + 0.114*p[2]
	}
}
