package imaging

import (
	"math"
	"sync"
)

// Catmull-Rom: a separable kernel resize in float64 that does what
// golang.org/x/image/draw's kernel scaler does for a Gray or NRGBA source
// and an NRGBA destination, operation for operation, so that ingest keeps
// the pixels it has always stored. Samples are widened to 16 bits (v *
// 0x101) and, with 4 channels, premultiplied by alpha with integer
// division; the horizontal pass keeps float64 values (no clamping between
// the passes); the vertical pass clamps colour to alpha, rounds to 16 bits
// (ftou), undoes the premultiplication with integer division as
// image.NRGBA.SetRGBA64 does, and keeps the high byte. The explicit
// float64 conversions stop the compiler from fusing a multiply and an add,
// as x/image's do.

// catmullRomSupport is the kernel's half-width at scale 1.
const catmullRomSupport = 2

func catmullRomAt(t float64) float64 {
	if t < 1 {
		return float64((float64(1.5*t)-2.5)*t*t) + 1
	}
	return float64((float64(float64(float64(-0.5*t)+2.5)*t)-4)*t) + 2
}

// kernelCoeffs are one axis's weights: output i reads n[i] inputs from
// start[i] with weights w[i*stride:], and multiplies their sum by inv[i]
// (or invFFFF[i] = inv[i] / 0xffff in the horizontal pass).
type kernelCoeffs struct {
	start, n     []int32
	w            []float64
	inv, invFFFF []float64
	stride       int
}

// compute fills k for scaling in pixels to out pixels, as x/image's
// newDistrib does. Zero weights inside an output's range are kept (adding
// a zero product leaves a float64 sum unchanged); those at either end are
// trimmed.
func (k *kernelCoeffs) compute(in, out int) {
	scale := float64(in) / float64(out)
	halfWidth, argScale := float64(catmullRomSupport), 1.0
	if scale > 1 {
		halfWidth *= scale
		argScale = 1 / scale
	}
	k.stride = int(math.Ceil(2*halfWidth)) + 2 // at least j - i below
	k.start = grow(k.start, out)
	k.n = grow(k.n, out)
	k.w = grow(k.w, out*k.stride)
	k.inv = grow(k.inv, out)
	k.invFFFF = grow(k.invFFFF, out)
	for x := 0; x < out; x++ {
		center := float64((float64(x)+0.5)*scale) - 0.5
		i := max(int(math.Floor(center-halfWidth)), 0)
		j := max(min(int(math.Ceil(center+halfWidth)), in), i)
		row := k.w[x*k.stride : (x+1)*k.stride]
		total := 0.0
		first, last := -1, -1
		for coord := i; coord < j; coord++ {
			t := math.Abs((center - float64(coord)) * argScale)
			wt := 0.0
			if t < catmullRomSupport {
				wt = catmullRomAt(t)
			}
			row[coord-i] = wt
			if wt == 0 {
				continue
			}
			total += wt
			if first < 0 {
				first = coord
			}
			last = coord
		}
		// Some coordinate lies within half a pixel of the centre, where
		// the kernel is positive: first >= 0.
		copy(row, row[first-i:last-i+1])
		k.start[x], k.n[x] = int32(first), int32(last-first+1)
		inv := 1 / total
		k.inv[x], k.invFFFF[x] = inv, inv/0xffff
	}
}

// cubicScratch is the scratch of one catmullRom call.
type cubicScratch struct {
	x, y     kernelCoeffs
	tmp, acc []float64
}

var cubicScratches = sync.Pool{New: func() any { return new(cubicScratch) }}

// maxPooledFloats bounds the intermediate image kept in the pool (64 MiB).
const maxPooledFloats = 8 << 20

// catmullRom computes s with the Catmull-Rom kernel into dst (packed HWC,
// len ow*oh*c); c is 1, 3 or 4.
func catmullRom(dst, src []byte, s scaling) {
	r := cubicScratches.Get().(*cubicScratch)
	defer func() {
		if cap(r.tmp) <= maxPooledFloats { // a huge image's scratch is dropped
			cubicScratches.Put(r)
		}
	}()
	r.x.compute(s.w, s.tw)
	r.y.compute(s.h, s.th)
	ylo, yhi := int(r.y.start[s.oy]), 0
	for y := s.oy; y < s.oy+s.oh; y++ {
		yhi = max(yhi, int(r.y.start[y]+r.y.n[y]))
	}
	// Horizontal pass: the rows the window reads, to the window's
	// columns, into tmp.
	rowLen := s.ow * s.c
	r.tmp = grow(r.tmp, (yhi-ylo)*rowLen)
	for y := ylo; y < yhi; y++ {
		off := (s.y0+y)*s.stride + s.x0*s.c
		in := src[off : off+s.w*s.c]
		out := r.tmp[(y-ylo)*rowLen : (y-ylo+1)*rowLen]
		if s.c == 4 {
			cubicRowRGBA(out, in, &r.x, s.ox)
		} else {
			cubicRow(out, in, &r.x, s.ox, s.c)
		}
	}
	// Vertical pass: the window's rows.
	r.acc = grow(r.acc, rowLen)
	acc := r.acc
	for y := 0; y < s.oh; y++ {
		yy := s.oy + y
		start, n := int(r.y.start[yy])-ylo, int(r.y.n[yy])
		ws := r.y.w[yy*r.y.stride : yy*r.y.stride+n]
		clear(acc)
		for k, wt := range ws {
			row := r.tmp[(start+k)*rowLen : (start+k+1)*rowLen]
			row = row[:len(acc)]
			for i, v := range row {
				acc[i] += float64(v * wt)
			}
		}
		out := dst[y*rowLen : (y+1)*rowLen]
		inv := r.y.inv[yy]
		if s.c == 4 {
			unpremultiply(out, acc, inv)
			continue
		}
		// Opaque: alpha comes to 0xffff, nothing to clamp or undo.
		for i, v := range acc {
			out[i] = uint8(ftou(v*inv) >> 8)
		}
	}
}

// cubicRow resamples one row of gray or RGB pixels (all opaque) into out,
// output columns from ox on.
func cubicRow(out []float64, in []byte, k *kernelCoeffs, ox, c int) {
	ow := len(out) / c
	for i := 0; i < ow; i++ {
		x := ox + i
		start, n := int(k.start[x]), int(k.n[x])
		ws := k.w[x*k.stride : x*k.stride+n]
		p := in[start*c : (start+n)*c]
		inv := k.invFFFF[x]
		for j := 0; j < c; j++ {
			var v float64
			for t, wt := range ws {
				v += float64(float64(uint32(p[t*c+j])*0x101) * wt)
			}
			out[i*c+j] = v * inv
		}
	}
}

// cubicRowRGBA resamples one row of RGBA pixels, colour premultiplied by
// alpha, into out.
func cubicRowRGBA(out []float64, in []byte, k *kernelCoeffs, ox int) {
	ow := len(out) / 4
	for i := 0; i < ow; i++ {
		x := ox + i
		start, n := int(k.start[x]), int(k.n[x])
		ws := k.w[x*k.stride : x*k.stride+n]
		p := in[start*4 : (start+n)*4]
		var pr, pg, pb, pa float64
		for t, wt := range ws {
			q := p[t*4 : t*4+4 : t*4+4]
			a := uint32(q[3]) * 0x101
			pr += float64(float64(uint32(q[0])*a/0xff) * wt)
			pg += float64(float64(uint32(q[1])*a/0xff) * wt)
			pb += float64(float64(uint32(q[2])*a/0xff) * wt)
			pa += float64(float64(a) * wt)
		}
		inv := k.invFFFF[x]
		o := out[i*4 : i*4+4 : i*4+4]
		o[0], o[1], o[2], o[3] = pr*inv, pg*inv, pb*inv, pa*inv
	}
}

// unpremultiply turns one row of premultiplied RGBA sums into pixels.
func unpremultiply(out []byte, acc []float64, inv float64) {
	for i := 0; i+4 <= len(acc); i += 4 {
		p := acc[i : i+4 : i+4]
		pa := p[3]
		pr, pg, pb := min(p[0], pa), min(p[1], pa), min(p[2], pa)
		r, g, b := uint32(ftou(pr*inv)), uint32(ftou(pg*inv)), uint32(ftou(pb*inv))
		a := uint32(ftou(pa * inv))
		if a != 0 && a != 0xffff {
			r, g, b = r*0xffff/a, g*0xffff/a, b*0xffff/a
		}
		o := out[i : i+4 : i+4]
		o[0], o[1], o[2], o[3] = uint8(r>>8), uint8(g>>8), uint8(b>>8), uint8(a>>8)
	}
}

// ftou converts [0, 1] to [0, 0xffff], rounding and clamping.
func ftou(f float64) uint16 {
	i := int32(float64(0xffff*f) + 0.5)
	if i > 0xffff {
		return 0xffff
	}
	if i > 0 {
		return uint16(i)
	}
	return 0
}
