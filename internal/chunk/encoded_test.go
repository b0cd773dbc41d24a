package chunk

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/schema"
)

// scalars returns n scalar samples of dtype whose values (as int64, or
// float64 for floats) are at(i); a sample is null where null(i).
func scalars(dtype schema.DType, n int, at func(i int) float64, null func(i int) bool) []sample {
	out := make([]sample, n)
	for i := range out {
		if null != nil && null(i) {
			out[i] = sample{shape: []int{}, null: true}
			continue
		}
		v := at(i)
		b := make([]byte, dtype.Size())
		switch dtype {
		case schema.Float32:
			binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
		case schema.Float64:
			binary.LittleEndian.PutUint64(b, math.Float64bits(v))
		default:
			x := uint64(int64(v))
			for k := range b {
				b[k] = byte(x >> (8 * k))
			}
		}
		out[i] = sample{shape: []int{}, data: b}
	}
	return out
}

// blockTransforms returns the transform and compression byte of each
// block of an encoded chunk.
func blockTransforms(t *testing.T, obj []byte) (ts, cs []byte) {
	h, err := ParseHeader(obj)
	require.NoError(t, err)
	for b := range h.Blocks() {
		s, _ := h.BlockRange(b, b+1)
		ts, cs = append(ts, obj[s]), append(cs, obj[s+1])
	}
	return ts, cs
}

// TestEncodedRoundTrip encodes scalar columns of every integer and float
// dtype with the edge cases of each transform (all equal, sequential,
// negative, the dtype's extremes, NaN, nulls, a single sample), text of one
// and of many lengths, and dictionary chunks, with every codec; whole and
// span reads give back every sample, and the writer chose the expected
// transform where one is clearly best.
func TestEncodedRoundTrip(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 7))
	n := 9000 + r.IntN(1000) // more than one block of int64
	type tc struct {
		name    string
		dtype   schema.DType
		samples []sample
		want    int // transform of the first block; -1: any
	}
	var cases []tc
	for _, d := range []schema.DType{schema.Int8, schema.Int16, schema.Int32, schema.Int64, schema.Uint8, schema.Uint16, schema.Uint32, schema.Uint64, schema.Bool} {
		cases = append(cases,
			tc{"all equal", d, scalars(d, n, func(int) float64 { return 1 }, nil), int(transformFOR)},
			tc{"random small", d, scalars(d, n, func(int) float64 { return float64(r.IntN(2)) }, nil), int(transformFOR)},
			tc{"one sample", d, scalars(d, 1, func(int) float64 { return 1 }, nil), -1},
			tc{"nulls", d, scalars(d, n, func(i int) float64 { return float64(i % 2) }, func(i int) bool { return i%3 == 0 }), -1},
		)
		if d == schema.Bool {
			continue
		}
		cases = append(cases,
			tc{"sequential", d, scalars(d, n, func(i int) float64 { return float64(i) }, nil), int(transformDelta)},
			tc{"negative", d, scalars(d, n, func(i int) float64 { return float64(-r.IntN(10)) }, nil), int(transformFOR)},
			tc{"extremes", d, extremes(d, n), -1},
			tc{"random", d, randomScalars(r, d, n), -1},
		)
	}
	for _, d := range []schema.DType{schema.Float32, schema.Float64} {
		cases = append(cases,
			tc{"random", d, scalars(d, n, func(int) float64 { return r.Float64() }, nil), -1},
			tc{"NaN and infinities", d, scalars(d, n, func(i int) float64 { return []float64{math.NaN(), math.Inf(1), math.Inf(-1), -0.0, 1.5}[i%5] }, nil), -1},
			tc{"all equal", d, scalars(d, n, func(int) float64 { return 0.25 }, nil), int(transformFOR)},
		)
	}
	names := make([]sample, n)
	for i := range names {
		v := fmt.Appendf(nil, "name-%08d", i)
		names[i] = sample{shape: []int{len(v)}, data: v}
	}
	cases = append(cases,
		tc{"names of one length", schema.Text, names, int(transformPlain)},
		tc{"text of many lengths", schema.Text, randomSamples(r, schema.Text, false, 3000), int(transformPlain)},
		tc{"empty strings", schema.Text, []sample{{shape: []int{0}, data: []byte{}}, {shape: []int{0}, data: []byte{}}}, -1},
		tc{"dictionary", schema.JSON, lowCardinality(r, n, 30, true), int(transformFOR)},
		tc{"dictionary of 2-byte indices", schema.Text, lowCardinality(r, n, 600, false), int(transformFOR)},
	)
	for _, c := range cases {
		for _, codec := range []uint8{CodecNone, CodecLZ4, CodecZstd} {
			name := fmt.Sprintf("%s %s, codec %d (seed %d)", c.dtype, c.name, codec, seed)
			obj := encode(t, c.dtype, SampleNone, codec, c.samples)
			ch, err := Decode(obj, nil)
			require.NoError(t, err, name)
			require.Equal(t, len(c.samples), ch.N, name)
			for i, s := range c.samples {
				if s.null != ch.Null(i) || !bytes.Equal(s.data, ch.Sample(i)) {
					require.Failf(t, "sample differs", "%s: sample %d: %x (null %v), want %x (null %v)", name, i, ch.Sample(i), ch.Null(i), s.data, s.null)
				}
			}
			for range 10 {
				lo := r.IntN(ch.N)
				requireSpan(t, obj, ch, lo, lo+1+r.IntN(ch.N-lo), name)
			}
			if c.want >= 0 {
				require.True(t, ch.Encoded(), name)
				ts, _ := blockTransforms(t, obj)
				require.Equal(t, byte(c.want), ts[0], name)
			}
		}
	}
}

// extremes returns n samples of dtype cycling through 0, all ones (-1 or
// the greatest unsigned value), and the least and greatest signed values:
// differences that wrap around.
func extremes(d schema.DType, n int) []sample {
	out := make([]sample, n)
	for i := range out {
		b := make([]byte, d.Size())
		switch i % 4 {
		case 1:
			for k := range b {
				b[k] = 0xff
			}
		case 2:
			b[len(b)-1] = 0x80
		case 3:
			for k := range b {
				b[k] = 0xff
			}
			b[len(b)-1] = 0x7f
		}
		out[i] = sample{shape: []int{}, data: b}
	}
	return out
}

func randomScalars(r *rand.Rand, d schema.DType, n int) []sample {
	out := make([]sample, n)
	for i := range out {
		b := make([]byte, d.Size())
		for k := range b {
			b[k] = byte(r.Uint32())
		}
		out[i] = sample{shape: []int{}, data: b}
	}
	return out
}

// TestEncodedSizes pins what the encodings buy on the benchmark's columns
// (bench/sql): sequential ids, labels below 1000, 30 categories, names of
// one length, against the 8 bytes per value (and the 8-byte offsets) of a
// plain chunk.
func TestEncodedSizes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	const n = 100000
	ids := encode(t, schema.Int64, SampleNone, CodecNone, scalars(schema.Int64, n, func(i int) float64 { return float64(i) }, nil))
	require.Less(t, len(ids), 2000, "sequential ids: a delta of width 0 per block")
	labels := encode(t, schema.Int64, SampleNone, CodecNone, scalars(schema.Int64, n, func(int) float64 { return float64(r.IntN(1000)) }, nil))
	require.InDelta(t, n*10/8, len(labels), n/50, "labels below 1000: 10 bits each")
	cats := encode(t, schema.Text, SampleNone, CodecNone, lowCardinality(r, n, 30, false))
	require.Less(t, len(cats), n*5/8+2000, "30 categories: 5 bits each")
	names := make([]sample, n)
	for i := range names {
		v := fmt.Appendf(nil, "name-%08d", i)
		names[i] = sample{shape: []int{len(v)}, data: v}
	}
	obj := encode(t, schema.Text, SampleNone, CodecNone, names)
	h, err := ParseHeader(obj)
	require.NoError(t, err)
	require.Less(t, h.Len, 2000, "offsets of names of one length take no bytes")
	require.Less(t, len(obj), n*13/2, "lz4 on top")
}

// TestTransforms round-trips every transform of runs of values of every
// width, including the widest (64 bits) and the empty run, through
// appendTransformed and untransform, whatever choose would pick.
func TestTransforms(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 8))
	for _, s := range []int{1, 2, 4, 8} {
		for _, m := range []int{0, 1, 2, 3, 7, 64, 1000} {
			raw := make([]byte, m*s)
			for k := range raw {
				raw[k] = byte(r.Uint32())
			}
			for _, t0 := range []uint8{transformPlain, transformFOR, transformDelta} {
				if t0 == transformDelta && m == 0 {
					continue
				}
				p := forced(raw, s, t0)
				tr := appendTransformed(nil, raw, s, p)
				require.Len(t, tr, transformedLen(p.t, p.w, m, s), "s %d m %d t %d (seed %d)", s, m, t0, seed)
				got := make([]byte, len(raw))
				require.NoError(t, untransform(got, tr, p.t, p.w, s))
				require.Equal(t, raw, got, "s %d m %d t %d (seed %d)", s, m, t0, seed)
			}
			p := choose(raw, s)
			require.LessOrEqual(t, transformedLen(p.t, p.w, m, s), m*s)
		}
	}
}

// forced returns the plan of transform t for raw (as choose would make
// it, had it chosen t).
func forced(raw []byte, s int, t uint8) plan {
	m, mask := len(raw)/s, valueMask(s)
	switch t {
	case transformFOR:
		lo, d := spread(m, s, func(j int) uint64 { return load(raw, j, s) })
		return plan{t: t, w: widthOf(d), ref: lo}
	case transformDelta:
		lo, d := spread(m-1, s, func(j int) uint64 { return (load(raw, j+1, s) - load(raw, j, s)) & mask })
		if m == 1 {
			lo, d = 0, 0
		}
		return plan{t: t, w: widthOf(d), ref: lo, frst: load(raw, 0, s)}
	}
	return plan{}
}

// TestEncodedCorrupt checks that a damaged encoded block or header
// sequence is refused as corrupt: an unknown transform or compression, a
// width beyond the value's bits, a payload of the wrong length, and a
// chunk of more samples than an encoded chunk may hold.
func TestEncodedCorrupt(t *testing.T) {
	obj := encode(t, schema.Int64, SampleNone, CodecNone, scalars(schema.Int64, 1000, func(i int) float64 { return float64(i % 100) }, nil))
	h, err := ParseHeader(obj)
	require.NoError(t, err)
	require.True(t, h.Encoded())
	s, e := h.BlockRange(0, 1)
	for name, mut := range map[string]func(b []byte){
		"transform":   func(b []byte) { b[s] = 9 },
		"compression": func(b []byte) { b[s+1] = 5 },
		"width":       func(b []byte) { b[s+2] = 65 },
		"narrower":    func(b []byte) { b[s+2]-- },
	} {
		b := bytes.Clone(obj)
		mut(b)
		binary.LittleEndian.PutUint32(b[len(b)-4:], Checksum(b[h.Len:len(b)-4]))
		_, err := Decode(b, nil)
		require.ErrorIs(t, err, base.ErrCorrupt, name)
		_, err = h.DecodeBlocks(b[s:e], 0, 1, nil)
		require.ErrorIs(t, err, base.ErrCorrupt, name)
	}
	b := bytes.Clone(obj)
	binary.LittleEndian.PutUint32(b[12:], MaxEncodedSamples+1)
	binary.LittleEndian.PutUint32(b[h.Len-4:], Checksum(b[:h.Len-4]))
	_, err = ParseHeader(b)
	require.ErrorIs(t, err, base.ErrCorrupt)
}

// FuzzTransform feeds arbitrary transformed bytes to untransform: it
// returns the values or an error, and never writes past them.
func FuzzTransform(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range []int{1, 2, 4, 8} {
		raw := make([]byte, 40*s)
		for k := range raw {
			raw[k] = byte(r.IntN(3))
		}
		for _, t := range []uint8{transformPlain, transformFOR, transformDelta} {
			p := forced(raw, s, t)
			f.Add(appendTransformed(nil, raw, s, p), p.t, uint8(p.w), uint8(s), uint16(40))
		}
	}
	f.Fuzz(func(t *testing.T, src []byte, tr, w, s uint8, m uint16) {
		size := []int{1, 2, 4, 8}[s%4]
		dst := make([]byte, int(m)*size, int(m)*size+8)
		if err := untransform(dst, src, tr, int(w), size); err != nil {
			return
		}
		require.Len(t, src, transformedLen(tr, int(w), int(m), size))
	})
}

// goldenEncoded are the samples of testdata/v1.14-encoded-*.chunk: ids
// (delta), labels (frame of reference) with nulls, and names of one length
// (encoded offsets, lz4 on top). The files pin the format: the writer
// must still write them byte for byte (LOCH_REWRITE=1 rewrites them after
// a deliberate change of the writer's choices, never of the format), and
// format 1.13 readers refuse them with ErrNewerFormat (checked by hand
// against main at 1.13, see bench/RESULTS.md).
var goldenEncoded = map[string]func() (schema.DType, []sample){
	"v1.14-encoded-ids.chunk": func() (schema.DType, []sample) {
		return schema.Int64, scalars(schema.Int64, 10000, func(i int) float64 { return float64(1000 + i) }, nil)
	},
	"v1.14-encoded-labels.chunk": func() (schema.DType, []sample) {
		return schema.Int32, scalars(schema.Int32, 3000, func(i int) float64 { return float64((i * 37) % 1000) }, func(i int) bool { return i%11 == 0 })
	},
	"v1.14-encoded-names.chunk": func() (schema.DType, []sample) {
		out := make([]sample, 3000)
		for i := range out {
			v := fmt.Appendf(nil, "name-%08d", i)
			out[i] = sample{shape: []int{len(v)}, data: v}
		}
		return schema.Text, out
	},
}

func TestEncodedGolden(t *testing.T) {
	for name, make := range goldenEncoded {
		dtype, samples := make()
		obj := encode(t, dtype, SampleNone, CodecNone, samples)
		path := filepath.Join("testdata", name)
		if os.Getenv("LOCH_REWRITE") != "" {
			require.NoError(t, os.WriteFile(path, obj, 0o644))
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, want, obj, name)
		ch, err := Decode(want, nil)
		require.NoError(t, err, name)
		require.True(t, ch.Encoded(), name)
		require.Equal(t, byte(EncodedMinor), want[5], name)
		for i, s := range samples {
			require.True(t, bytes.Equal(s.data, ch.Sample(i)), "%s: sample %d", name, i)
		}
	}
}

// TestStats checks the chunk statistics of fragments (format 1.14): exact
// bounds of the non-null values, outward-rounded beyond 2^53, and none
// for NaN, infinities, all-null, non-scalar and non-numeric chunks.
func TestStats(t *testing.T) {
	build := func(d schema.DType, samples []sample) *Builder {
		b := NewBuilder(d, SampleNone, CodecNone, 0)
		for _, s := range samples {
			require.NoError(t, b.Add(s.shape, s.data, s.null))
		}
		return b
	}
	for _, c := range []struct {
		name   string
		b      *Builder
		lo, hi float64
		ok     bool
	}{
		{"int16 with nulls", build(schema.Int16, scalars(schema.Int16, 100, func(i int) float64 { return float64(i - 50) }, func(i int) bool { return i == 0 })), -49, 49, true},
		{"uint8", build(schema.Uint8, scalars(schema.Uint8, 10, func(i int) float64 { return float64(200 + i) }, nil)), 200, 209, true},
		{"float32", build(schema.Float32, scalars(schema.Float32, 3, func(i int) float64 { return []float64{0.5, -2, 1e30}[i] }, nil)), -2, float64(float32(1e30)), true},
		{"float64 infinity", build(schema.Float64, scalars(schema.Float64, 2, func(i int) float64 { return []float64{0.5, math.Inf(-1)}[i] }, nil)), 0, 0, false},
		{"float64 NaN", build(schema.Float64, scalars(schema.Float64, 3, func(i int) float64 { return []float64{0.5, math.NaN(), 1}[i] }, nil)), 0, 0, false},
		{"all null", build(schema.Int64, scalars(schema.Int64, 3, nil, func(int) bool { return true })), 0, 0, false},
		{"bool", build(schema.Bool, scalars(schema.Bool, 3, func(int) float64 { return 1 }, nil)), 0, 0, false},
		{"text", build(schema.Text, []sample{{shape: []int{1}, data: []byte("a")}}), 0, 0, false},
		{"vectors", build(schema.Int64, []sample{{shape: []int{1}, data: make([]byte, 8)}}), 0, 0, false},
	} {
		lo, hi, ok := c.b.Stats()
		require.Equal(t, c.ok, ok, c.name)
		if ok {
			require.Equal(t, c.lo, lo, c.name)
			require.Equal(t, c.hi, hi, c.name)
		}
	}
	b := build(schema.Int64, extremes(schema.Int64, 4))
	lo, hi, ok := b.Stats()
	require.True(t, ok)
	require.LessOrEqual(t, lo, float64(math.MinInt64))
	require.Less(t, float64(math.MaxInt64), hi) // 2^63 rounded up one step
	b = build(schema.Int64, scalars(schema.Int64, 1, func(int) float64 { return 1 << 60 }, nil))
	lo, hi, _ = b.Stats()
	require.Less(t, lo, float64(1<<60))
	require.Greater(t, hi, float64(1<<60))
}
