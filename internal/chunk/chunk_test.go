package chunk

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/schema"
	"github.com/stretchr/testify/require"
)

type sample struct {
	shape []int
	data  []byte
	null  bool
}

func randomSamples(r *rand.Rand, dtype schema.DType, ragged bool, n int) []sample {
	out := make([]sample, n)
	ndim := r.IntN(4)
	fixed := make([]int, ndim)
	for i := range fixed {
		fixed[i] = 1 + r.IntN(5)
	}
	for i := range out {
		if dtype.Variable() {
			b := make([]byte, r.IntN(40))
			for k := range b {
				b[k] = 'a' + byte(r.IntN(26))
			}
			out[i] = sample{shape: []int{len(b)}, data: b}
			continue
		}
		shape := slices.Clone(fixed)
		if ragged {
			for k := range shape {
				shape[k] = r.IntN(6)
			}
		}
		b := make([]byte, schema.NumElements(shape)*dtype.Size())
		for k := range b {
			b[k] = byte(r.IntN(4)) // compressible
		}
		out[i] = sample{shape: shape, data: b}
		if ragged && r.IntN(8) == 0 {
			out[i] = sample{shape: make([]int, len(shape)), null: true}
		}
	}
	return out
}

func encode(t testing.TB, dtype schema.DType, sc, codec uint8, samples []sample) []byte {
	b := NewBuilder(dtype, sc, codec, 0)
	for _, s := range samples {
		require.NoError(t, b.Add(s.shape, s.data, s.null))
	}
	obj, err := b.Encode()
	require.NoError(t, err)
	return obj
}

// TestRoundTrip encodes random samples of every dtype with every codec, in
// fixed and ragged shapes, and checks that Decode and single-sample block
// reads give back every sample, shape and null.
func TestRoundTrip(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 1))
	for _, dtype := range schema.DTypes() {
		for _, codec := range []uint8{CodecNone, CodecLZ4, CodecZstd} {
			for _, ragged := range []bool{false, true} {
				samples := randomSamples(r, dtype, ragged, 1+r.IntN(300))
				obj := encode(t, dtype, SampleNone, codec, samples)
				c, err := Decode(obj, nil)
				require.NoError(t, err, "%s codec %d", dtype, codec)
				require.Equal(t, len(samples), c.N)
				for i, s := range samples {
					require.Equal(t, s.null, c.Null(i))
					require.Equal(t, len(s.data), len(c.Sample(i)))
					require.True(t, bytes.Equal(s.data, c.Sample(i)), "%s sample %d", dtype, i)
					if !s.null {
						require.Equal(t, s.shape, c.Shape(i))
					}
				}
				if codec != CodecNone {
					continue
				}
				h, err := ParseHeader(obj[:c.Len])
				require.NoError(t, err)
				for i, s := range samples {
					st, e := h.Range(i)
					a, b := h.BlockSpan(st, e)
					got, err := h.VerifyBlocks(obj[a:b], st, e)
					require.NoError(t, err)
					require.Equal(t, len(s.data), len(got))
					require.True(t, bytes.Equal(s.data, got))
				}
			}
		}
	}
}

func TestImplicitOffsetsKeepHeaderSmall(t *testing.T) {
	var samples []sample
	for i := 0; i < 100000; i++ {
		samples = append(samples, sample{shape: nil, data: binary.LittleEndian.AppendUint64(nil, uint64(i))})
	}
	obj := encode(t, schema.Int64, SampleNone, CodecNone, samples)
	h, err := ParseHeader(obj)
	require.NoError(t, err)
	require.NotZero(t, h.Flags&FlagImplicitOffsets)
	// 800 KB of data: 13 block checksums, no per-sample offsets.
	require.Less(t, h.Len, 200)
	c, err := Decode(obj, nil)
	require.NoError(t, err)
	require.Equal(t, uint64(77777), binary.LittleEndian.Uint64(c.Sample(77777)))
}

func TestIncompressibleLZ4(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	obj := encode(t, schema.Uint8, SampleNone, CodecLZ4, []sample{{shape: []int{len(data)}, data: data}})
	c, err := Decode(obj, nil)
	require.NoError(t, err)
	require.Equal(t, data, c.Sample(0))
}

// TestCorruptionDetected flips every byte of a small chunk in turn: each flip
// is reported as corruption, never accepted and never a panic.
func TestCorruptionDetected(t *testing.T) {
	for _, codec := range []uint8{CodecNone, CodecLZ4, CodecZstd} {
		obj := encode(t, schema.Float32, SampleNone, codec, []sample{
			{shape: []int{2, 3}, data: bytes.Repeat([]byte{1, 2, 3, 4}, 6)},
			{shape: []int{1, 3}, data: bytes.Repeat([]byte{5, 6, 7, 8}, 3)},
		})
		for i := range obj {
			bad := bytes.Clone(obj)
			bad[i] ^= 0x40
			_, err := Decode(bad, nil)
			require.Error(t, err, "codec %d: flipped byte %d accepted", codec, i)
		}
		_, err := Decode(obj[:len(obj)-1], nil)
		require.ErrorIs(t, err, base.ErrCorrupt)
	}
}

func TestNewerMajorRefused(t *testing.T) {
	obj := encode(t, schema.Uint8, SampleNone, CodecNone, []sample{{shape: []int{1}, data: []byte{1}}})
	obj[4] = Major + 1
	_, err := ParseHeader(obj)
	require.ErrorIs(t, err, base.ErrNewerFormat)
	require.Contains(t, err.Error(), "upgrade loch")
}

func TestPartial(t *testing.T) {
	b := NewBuilder(schema.Uint8, SampleNone, CodecZstd, 0)
	require.NoError(t, b.Add([]int{10}, []byte("0123456789"), false))
	b.SetPartial(Partial{Total: 30, Offset: 10, Index: 1, Count: 3})
	obj, err := b.Encode()
	require.NoError(t, err)
	c, err := Decode(obj, nil)
	require.NoError(t, err)
	require.Equal(t, Partial{Total: 30, Offset: 10, Index: 1, Count: 3}, c.Partial)
}

// FuzzDecode feeds arbitrary bytes to the decoder: it must return a chunk or
// an error, never panic, and a chunk it accepts must be self-consistent.
func FuzzDecode(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, codec := range []uint8{CodecNone, CodecLZ4, CodecZstd} {
		for _, ragged := range []bool{false, true} {
			f.Add(encode(f, schema.Int16, SampleNone, codec, randomSamples(r, schema.Int16, ragged, 5)))
		}
		f.Add(encode(f, schema.Text, SampleNone, codec, randomSamples(r, schema.Text, false, 5)))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		c, err := Decode(obj, nil)
		if err != nil {
			return
		}
		for i := 0; i < c.N; i++ {
			s, e := c.Range(i)
			require.LessOrEqual(t, s, e)
			require.LessOrEqual(t, e, int64(len(c.Raw)))
			_ = c.Shape(i)
		}
	})
}
