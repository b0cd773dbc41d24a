package imaging

import (
	"math"
	"sync"
)

// Bilinear: resampling with a triangle filter that widens with the
// downscaling factor, as Pillow and torchvision (antialias=True) do: an
// upscale interpolates between the two nearest pixels, a downscale by k
// averages over about 2k of them, so that no input pixel is skipped.
// Pixels are sampled at their centres. It is separable: a horizontal pass
// into an intermediate uint8 image, then a vertical pass, each with
// fixed-point weights of precisionBits bits.

const precisionBits = 22

// coeffs are one axis's weights: output i reads n[i] inputs from start[i]
// with weights w[i*stride:].
type coeffs struct {
	start, n []int32
	w        []int32
	stride   int
}

// compute fills c for scaling in pixels to out pixels.
func (c *coeffs) compute(in, out int) {
	scale := float64(in) / float64(out)
	filterScale := max(scale, 1)
	support := filterScale // the triangle's support is 1 input pixel at scale 1
	c.stride = int(math.Ceil(support))*2 + 1
	c.start = grow(c.start, out)
	c.n = grow(c.n, out)
	c.w = grow(c.w, out*c.stride)
	var fw [64]float64 // stride <= 64 for downscales up to 31x; larger use a slice
	var ws []float64
	if c.stride <= len(fw) {
		ws = fw[:c.stride]
	} else {
		ws = make([]float64, c.stride)
	}
	for i := 0; i < out; i++ {
		center := (float64(i) + 0.5) * scale
		lo := max(int(center-support+0.5), 0)
		hi := min(int(center+support+0.5), in)
		total := 0.0
		for x := lo; x < hi; x++ {
			t := math.Abs((float64(x) - center + 0.5) / filterScale)
			wt := 0.0
			if t < 1 {
				wt = 1 - t
			}
			ws[x-lo] = wt
			total += wt
		}
		// Trim zero weights at both ends so the inner loops do no work for them.
		n := hi - lo
		for n > 1 && ws[n-1] == 0 {
			n--
		}
		first := 0
		for first < n-1 && ws[first] == 0 {
			first++
		}
		c.start[i] = int32(lo + first)
		c.n[i] = int32(n - first)
		row := c.w[i*c.stride : (i+1)*c.stride]
		for k := first; k < n; k++ {
			row[k-first] = int32(math.Round(ws[k] / total * (1 << precisionBits)))
		}
	}
}

// resampler is the scratch of one bilinear call.
type resampler struct {
	x, y coeffs
	tmp  []byte
	acc  []int32
}

var resamplers = sync.Pool{New: func() any { return new(resampler) }}

const half = 1 << (precisionBits - 1)

// bilinear computes s with the triangle filter into dst (packed HWC, len
// ow*oh*c).
func bilinear(dst, src []byte, s scaling) {
	tw, th, ox, oy, ow, oh := s.tw, s.th, s.ox, s.oy, s.ow, s.oh
	stride, x0, y0, w, h, c := s.stride, s.x0, s.y0, s.w, s.h, s.c
	r := resamplers.Get().(*resampler)
	defer resamplers.Put(r)

	// The input rows that the window's output rows read.
	ylo, yhi := oy, oy+oh
	if th != h {
		r.y.compute(h, th)
		ylo, yhi = int(r.y.start[oy]), 0
		for y := oy; y < oy+oh; y++ {
			yhi = max(yhi, int(r.y.start[y]+r.y.n[y]))
		}
	}
	// Horizontal pass: those rows to the window's columns, into tmp (or
	// the region itself when the width is unchanged).
	mid, midStride, midOff := src, stride, (y0+ylo)*stride+(x0+ox)*c
	if tw != w {
		r.x.compute(w, tw)
		r.tmp = grow(r.tmp, (yhi-ylo)*ow*c)
		for y := ylo; y < yhi; y++ {
			row := src[(y0+y)*stride+x0*c : (y0+y)*stride+(x0+w)*c]
			out := r.tmp[(y-ylo)*ow*c : (y-ylo+1)*ow*c]
			switch c {
			case 3:
				horizontal3(out, row, &r.x, ox)
			case 1:
				horizontal1(out, row, &r.x, ox)
			default:
				horizontalN(out, row, &r.x, ox, c)
			}
		}
		mid, midStride, midOff = r.tmp, ow*c, 0
	}
	rowLen := ow * c
	// Vertical pass: to the window's rows.
	if th == h {
		for y := 0; y < oh; y++ {
			copy(dst[y*rowLen:(y+1)*rowLen], mid[midOff+y*midStride:])
		}
		return
	}
	r.acc = grow(r.acc, rowLen)
	for y := 0; y < oh; y++ {
		start, n := int(r.y.start[oy+y])-ylo, int(r.y.n[oy+y])
		ws := r.y.w[(oy+y)*r.y.stride : (oy+y)*r.y.stride+n]
		out := dst[y*rowLen : (y+1)*rowLen]
		row := func(k int) []byte {
			off := midOff + (start+k)*midStride
			return mid[off : off+rowLen]
		}
		switch n {
		case 1:
			copy(out, row(0)) // a single weight is 1
		case 2:
			vertical2(out, row(0), row(1), ws[0], ws[1])
		default:
			acc := r.acc[:rowLen]
			a0 := row(0)
			w0 := ws[0]
			for i, v := range a0 {
				acc[i] = half + w0*int32(v)
			}
			for k := 1; k < n; k++ {
				in := row(k)
				in = in[:len(acc)]
				wk := ws[k]
				for i, v := range in {
					acc[i] += wk * int32(v)
				}
			}
			out = out[:len(acc)]
			for i, a := range acc {
				out[i] = clip8(a)
			}
		}
	}
}

func vertical2(out, a, b []byte, wa, wb int32) {
	a, b = a[:len(out)], b[:len(out)]
	for i := range out {
		out[i] = clip8(half + wa*int32(a[i]) + wb*int32(b[i]))
	}
}

// horizontal3 resamples one row of RGB pixels into out, output columns
// from ox on.
func horizontal3(out, in []byte, cf *coeffs, ox int) {
	ow := len(out) / 3
	for i := 0; i < ow; i++ {
		x := ox + i
		start, n := int(cf.start[x]), int(cf.n[x])
		ws := cf.w[x*cf.stride : x*cf.stride+n]
		p := in[start*3 : (start+n)*3]
		r, g, b := int32(half), int32(half), int32(half)
		for k, wt := range ws {
			q := p[k*3 : k*3+3 : k*3+3]
			r += wt * int32(q[0])
			g += wt * int32(q[1])
			b += wt * int32(q[2])
		}
		o := out[i*3 : i*3+3 : i*3+3]
		o[0], o[1], o[2] = clip8(r), clip8(g), clip8(b)
	}
}

// horizontal1 resamples one row of gray pixels.
func horizontal1(out, in []byte, cf *coeffs, ox int) {
	for i := range out {
		x := ox + i
		start, n := int(cf.start[x]), int(cf.n[x])
		ws := cf.w[x*cf.stride : x*cf.stride+n]
		p := in[start : start+n]
		p = p[:len(ws)]
		v := int32(half)
		for k, wt := range ws {
			v += wt * int32(p[k])
		}
		out[i] = clip8(v)
	}
}

// horizontalN resamples one row of c-channel pixels (c <= 4).
func horizontalN(out, in []byte, cf *coeffs, ox, c int) {
	var acc [4]int32
	ow := len(out) / c
	for i := 0; i < ow; i++ {
		x := ox + i
		start, n := int(cf.start[x]), int(cf.n[x])
		ws := cf.w[x*cf.stride : x*cf.stride+n]
		p := in[start*c : (start+n)*c]
		for j := 0; j < c; j++ {
			acc[j] = half
		}
		for k, wt := range ws {
			for j := 0; j < c; j++ {
				acc[j] += wt * int32(p[k*c+j])
			}
		}
		for j := 0; j < c; j++ {
			out[i*c+j] = clip8(acc[j])
		}
	}
}

// clip8 turns a fixed-point sum into a byte, clamped to 0..255.
func clip8(a int32) byte {
	a >>= precisionBits
	if uint32(a) > 255 {
		if a < 0 {
			return 0
		}
		return 255
	}
	return byte(a)
}

// grow returns b[:n] when b has room, and otherwise a new slice: the
// scratch of the resamplers, of bytes, int32 weights or float64 sums.
func grow[T any](b []T, n int) []T {
	if cap(b) >= n {
		return b[:n]
	}
	return make([]T, n)
}
