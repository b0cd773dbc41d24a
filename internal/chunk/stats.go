package chunk

import (
	"encoding/binary"
	"math"

	"github.com/lochdata/loch/schema"
)

// exactFloat bounds the integers a float64 holds exactly.
const exactFloat = 1 << 53

// Stats returns bounds of the non-null values of a scalar chunk of an
// integer or float dtype (int8 to uint64, float32, float64), for a
// fragment's chunk entry (format 1.14, docs/format.md §3.4): lo <= v <= hi
// for every value v, as float64 rounded outward (an integer beyond 2^53
// widens its bound by one float step). ok is false for other chunks, for a
// chunk with no non-null value and for one with a NaN or an infinity.
func (b *Builder) Stats() (lo, hi float64, ok bool) {
	if b.ndim != 0 || b.sample != SampleNone || b.partial != nil || len(b.raw) == 0 {
		return 0, 0, false
	}
	raw := b.raw
	switch b.dtype {
	case schema.Float32, schema.Float64:
		return floatStats(raw, b.dtype.Size())
	case schema.Int8, schema.Int16, schema.Int32, schema.Int64:
		s := b.dtype.Size()
		l, h := int64(math.MaxInt64), int64(math.MinInt64)
		for j := range len(raw) / s {
			v := int64(load(raw, j, s)<<(64-8*s)) >> (64 - 8*s) // sign-extend
			l, h = min(l, v), max(h, v)
		}
		return outward(float64(l), l < -exactFloat || l > exactFloat, -1), outward(float64(h), h < -exactFloat || h > exactFloat, 1), true
	case schema.Uint8, schema.Uint16, schema.Uint32, schema.Uint64:
		s := b.dtype.Size()
		l, h := uint64(math.MaxUint64), uint64(0)
		for j := range len(raw) / s {
			v := load(raw, j, s)
			l, h = min(l, v), max(h, v)
		}
		return outward(float64(l), l > exactFloat, -1), outward(float64(h), h > exactFloat, 1), true
	}
	return 0, 0, false
}

// outward widens f, a rounded conversion when inexact, by one step in the
// direction dir.
func outward(f float64, inexact bool, dir float64) float64 {
	if !inexact {
		return f
	}
	return math.Nextafter(f, math.Inf(int(dir)))
}

func floatStats(raw []byte, s int) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for j := range len(raw) / s {
		var v float64
		if s == 4 {
			v = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:])))
		} else {
			v = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*j:]))
		}
		if v != v || math.IsInf(v, 0) {
			return 0, 0, false // JSON has no NaN or infinity
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi, true
}
