package chunk

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/internal/zstdcodec"
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

// randomImages returns png-compressed samples as a chunk holds them: the
// encoded bytes (here random: the chunk does not decode them) and the
// decoded shape [h, w, c].
func randomImages(r *rand.Rand, n int) []sample {
	out := make([]sample, n)
	for i := range out {
		b := make([]byte, r.IntN(3000))
		for k := range b {
			b[k] = byte(r.IntN(16))
		}
		out[i] = sample{shape: []int{1 + r.IntN(64), 1 + r.IntN(64), []int{1, 3, 4}[r.IntN(3)]}, data: b}
	}
	return out
}

// TestRoundTrip encodes random samples of every dtype with every codec, in
// fixed and ragged shapes, with nulls, and png-compressed images, and checks
// that Decode and block reads of single samples and of random spans give
// back every sample, shape and null.
func TestRoundTrip(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 1))
	type tc struct {
		dtype   schema.DType
		sc      uint8
		samples []sample
	}
	var cases []tc
	for _, dtype := range schema.DTypes() {
		for _, ragged := range []bool{false, true} {
			cases = append(cases, tc{dtype, SampleNone, randomSamples(r, dtype, ragged, 1+r.IntN(300))})
		}
	}
	cases = append(cases, tc{schema.Uint8, SamplePNG, randomImages(r, 1+r.IntN(200))})
	for _, c := range cases {
		for _, codec := range []uint8{CodecNone, CodecLZ4, CodecZstd} {
			obj := encode(t, c.dtype, c.sc, codec, c.samples)
			name := fmt.Sprintf("%s sample compression %d codec %d (seed %d)", c.dtype, c.sc, codec, seed)
			ch, err := Decode(obj, nil)
			require.NoError(t, err, name)
			require.Equal(t, len(c.samples), ch.N, name)
			require.True(t, ch.RangeReadable(), name)
			require.Equal(t, codec != CodecNone || ch.Encoded(), ch.Flags&FlagBlocked != 0, name)
			minor := map[bool]byte{false: 0, true: 1}[codec != CodecNone]
			if ch.Encoded() {
				minor = EncodedMinor
			}
			require.Equal(t, minor, obj[5], "%s: minor version", name)
			for i, s := range c.samples {
				require.Equal(t, s.null, ch.Null(i), name)
				require.True(t, bytes.Equal(s.data, ch.Sample(i)), "%s sample %d", name, i)
				if !s.null {
					require.Equal(t, s.shape, ch.Shape(i), name)
				}
				requireSpan(t, obj, ch, i, i+1, name)
			}
			for range 20 {
				lo := r.IntN(ch.N)
				requireSpan(t, obj, ch, lo, lo+1+r.IntN(ch.N-lo), name)
			}
		}
	}
}

// requireSpan reads samples [lo, hi) of the chunk object by blocks, as a
// range read would, and compares them with the whole decoded chunk.
func requireSpan(t *testing.T, obj []byte, whole *Chunk, lo, hi int, name string) {
	t.Helper()
	h, err := ParseHeader(obj[:whole.Len])
	require.NoError(t, err, name)
	a, b := h.SpanBlocks(lo, hi)
	start, end := h.BlockRange(a, b)
	raw, err := h.DecodeBlocks(obj[start:end], a, b, nil)
	require.NoError(t, err, "%s: span [%d, %d)", name, lo, hi)
	for i := lo; i < hi; i++ {
		s, e := h.Range(i)
		if s == e {
			continue
		}
		got := h.Value(raw, h.BlockStart(a), i)
		require.True(t, bytes.Equal(whole.Sample(i), got), "%s: sample %d of span [%d, %d)", name, i, lo, hi)
	}
}

func TestImplicitOffsetsKeepHeaderSmall(t *testing.T) {
	var samples []sample
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]uint64, 100000)
	for i := range vals {
		vals[i] = r.Uint64()
	}
	for i := 0; i < 100000; i++ {
		// Values that neither a transform nor lz4 makes smaller: the
		// chunk is written unencoded.
		samples = append(samples, sample{shape: nil, data: binary.LittleEndian.AppendUint64(nil, vals[i])})
	}
	obj := encode(t, schema.Int64, SampleNone, CodecNone, samples)
	h, err := ParseHeader(obj)
	require.NoError(t, err)
	require.NotZero(t, h.Flags&FlagImplicitOffsets)
	// 800 KB of data: 196 block checksums of 4 KiB blocks, no per-sample
	// offsets.
	require.Equal(t, PlainBlockSize, h.BlockSize)
	require.Less(t, h.Len, 1000)
	c, err := Decode(obj, nil)
	require.NoError(t, err)
	require.Equal(t, vals[77777], binary.LittleEndian.Uint64(c.Sample(77777)))
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
			// The category is said once (issue 35 item 13: "corrupt
			// chunk: corrupt chunk: data checksum ..."), by Decode and
			// by DecodeDamaged, whose every block here is the damaged one.
			require.LessOrEqual(t, strings.Count(err.Error(), "corrupt"), 1, "codec %d byte %d: %v", codec, i, err)
			if _, err := DecodeDamaged(bad, nil); err != nil {
				require.LessOrEqual(t, strings.Count(err.Error(), "corrupt"), 1, "codec %d byte %d: %v", codec, i, err)
			}
		}
		_, err := Decode(obj[:len(obj)-1], nil)
		require.ErrorIs(t, err, base.ErrCorrupt)
	}
}

// TestDamagedBlocks flips one byte in one block of chunks of every codec:
// Decode refuses the chunk, DecodeDamaged returns it with exactly that
// block bad, and every sample that does not overlap the block reads back
// intact.
func TestDamagedBlocks(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 5))
	var samples []sample
	for range 300 {
		b := make([]byte, 1+r.IntN(2000))
		for k := range b {
			b[k] = byte(r.Uint32()) // incompressible: a flipped byte changes the block's raw bytes
		}
		samples = append(samples, sample{shape: []int{len(b)}, data: b})
	}
	for _, codec := range []uint8{CodecNone, CodecLZ4, CodecZstd} {
		obj := encode(t, schema.Uint8, SampleNone, codec, samples)
		h, err := Check(obj)
		require.NoError(t, err)
		require.Greater(t, h.Blocks(), 3)
		for range 10 {
			k := r.IntN(h.Blocks())
			start, end := h.BlockRange(k, k+1)
			bad := bytes.Clone(obj)
			bad[start+r.Int64N(end-start)] ^= 0x10
			name := fmt.Sprintf("codec %d block %d (seed %d)", codec, k, seed)
			_, err := Decode(bad, nil)
			require.ErrorIs(t, err, base.ErrCorrupt, name)
			_, err = Check(bad)
			require.ErrorIs(t, err, base.ErrCorrupt, name)
			c, err := DecodeDamaged(bad, nil)
			require.NoError(t, err, name)
			require.True(t, c.Salvaged, name)
			require.Equal(t, []int{k}, c.Bad, name)
			nbad := 0
			for i, s := range samples {
				blk, isBad := c.BadSample(i)
				st, e := c.Range(i)
				bs := int64(h.BlockSize)
				overlaps := st/bs <= int64(k) && (e-1)/bs >= int64(k)
				require.Equal(t, overlaps, isBad, "%s sample %d", name, i)
				if isBad {
					require.Equal(t, k, blk)
					nbad++
					continue
				}
				require.True(t, bytes.Equal(s.data, c.Sample(i)), "%s sample %d", name, i)
			}
			require.Positive(t, nbad, name)
			require.Less(t, nbad, 100, name)
		}

		// A damaged data checksum alone: every block is sound.
		bad := bytes.Clone(obj)
		bad[len(bad)-1] ^= 1
		c, err := DecodeDamaged(bad, nil)
		require.NoError(t, err)
		require.True(t, c.Salvaged)
		require.Empty(t, c.Bad)
		for i, s := range samples {
			require.True(t, bytes.Equal(s.data, c.Sample(i)))
		}

		// Every block damaged: the chunk is corrupt as a whole.
		for k := range h.Blocks() {
			start, _ := h.BlockRange(k, k+1)
			bad[start] ^= 0x10
		}
		_, err = DecodeDamaged(bad, nil)
		require.ErrorIs(t, err, base.ErrCorrupt)
		require.ErrorContains(t, err, "each of its")

		// A damaged header: corrupt as a whole.
		bad = bytes.Clone(obj)
		bad[fixedHeaderLen+1] ^= 1
		_, err = DecodeDamaged(bad, nil)
		require.ErrorIs(t, err, base.ErrCorrupt)
	}
}

// TestDamagedFormat10 damages a format 1.0 compressed chunk: without block
// checksums the chunk is corrupt as a whole.
func TestDamagedFormat10(t *testing.T) {
	obj, err := os.ReadFile(filepath.Join("testdata", "v1.0-lz4-fixed.chunk"))
	require.NoError(t, err)
	obj[len(obj)/2] ^= 0x10
	_, err = DecodeDamaged(obj, nil)
	require.ErrorIs(t, err, base.ErrCorrupt)
}

// TestZstdFrameOfUndeclaredSizeIsBounded: a zstd frame that does not
// declare its content size (a few KiB of one can decode to gigabytes) is
// decoded by a decoder bounded to a block, and refused when it holds more;
// one that declares another size than the block's is refused.
func TestZstdFrameOfUndeclaredSizeIsBounded(t *testing.T) {
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58} // no content size, 2 MiB window
	for i := range 2000 {
		hdr := uint32(128<<10)<<3 | 1<<1 // an RLE block of 128 KiB
		if i == 1999 {
			hdr |= 1
		}
		frame = append(frame, byte(hdr), byte(hdr>>8), byte(hdr>>16), 'x')
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	err := decompress(CodecZstd, make([]byte, BlockSize), frame)
	runtime.ReadMemStats(&m1)
	require.Error(t, err)
	require.Less(t, m1.TotalAlloc-m0.TotalAlloc, uint64(16<<20), "the frame would decode to 250 MiB")
	small, err := compress(CodecZstd, nil, []byte("hello hello hello"))
	require.NoError(t, err)
	require.NoError(t, decompress(CodecZstd, make([]byte, 17), small), "a small frame declares no size")
	good, err := compress(CodecZstd, nil, bytes.Repeat([]byte{1}, 1000))
	require.NoError(t, err)
	require.NoError(t, decompress(CodecZstd, make([]byte, 1000), good))
	require.ErrorContains(t, decompress(CodecZstd, make([]byte, 999), good), "declares")
	require.NoError(t, decompress(CodecZstd, []byte{}, zstdcodec.Encode(nil, nil)), "an empty frame")
}

// TestUnknownFlags: a flag bit this reader does not know is a newer format
// when the minor version is newer, corruption otherwise.
func TestUnknownFlags(t *testing.T) {
	obj := encode(t, schema.Uint8, SampleNone, CodecLZ4, []sample{{shape: []int{1}, data: []byte{1}}})
	reseal := func(minor byte) []byte {
		b := bytes.Clone(obj)
		b[5] = minor
		binary.LittleEndian.PutUint16(b[10:], binary.LittleEndian.Uint16(b[10:])|1<<9)
		h := int(binary.LittleEndian.Uint32(b[16:]))
		binary.LittleEndian.PutUint32(b[h-4:], Checksum(b[:h-4]))
		return b
	}
	_, err := ParseHeader(reseal(Minor + 1))
	require.ErrorIs(t, err, base.ErrNewerFormat)
	require.ErrorContains(t, err, "upgrade loch")
	_, err = ParseHeader(reseal(Minor))
	require.ErrorIs(t, err, base.ErrCorrupt)
	require.NotErrorIs(t, err, base.ErrNewerFormat)
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

// FuzzDecode feeds arbitrary bytes to the decoders: Decode, DecodeDamaged
// and block reads of random spans must return a result or an error, never
// panic, and what they accept must be self-consistent. The seeds are chunks
// of format 1.1 (blocked lz4 and zstd, codec none), encoded chunks of
// format 1.14 and the format 1.0 chunks of testdata.
func FuzzDecode(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, codec := range []uint8{CodecNone, CodecLZ4, CodecZstd} {
		for _, ragged := range []bool{false, true} {
			f.Add(encode(f, schema.Int16, SampleNone, codec, randomSamples(r, schema.Int16, ragged, 5)), uint16(7))
		}
		f.Add(encode(f, schema.Text, SampleNone, codec, randomSamples(r, schema.Text, false, 5)), uint16(1))
		f.Add(encode(f, schema.JSON, SampleNone, codec, lowCardinality(r, 300, 7, true)), uint16(0x0203))
		f.Add(encode(f, schema.Text, SampleNone, codec, lowCardinality(r, 2000, 300, false)), uint16(0x0a05))
		// Encoded chunks (format 1.14): frame of reference, delta, nulls.
		f.Add(encode(f, schema.Int64, SampleNone, codec, scalars(schema.Int64, 50, func(i int) float64 { return float64(i % 7) }, nil)), uint16(0x0302))
		f.Add(encode(f, schema.Int32, SampleNone, codec, scalars(schema.Int32, 50, func(i int) float64 { return float64(3 * i) }, nil)), uint16(0x0302))
		f.Add(encode(f, schema.Int16, SampleNone, codec, scalars(schema.Int16, 50, func(i int) float64 { return float64(i) }, func(i int) bool { return i%5 == 0 })), uint16(0x0302))
		// Two blocks.
		f.Add(encode(f, schema.Uint8, SampleNone, codec, []sample{
			{shape: []int{BlockSize - 10}, data: make([]byte, BlockSize-10)},
			{shape: []int{20}, data: bytes.Repeat([]byte{7}, 20)},
		}), uint16(0x0101))
	}
	for _, l := range legacyChunks {
		obj, err := os.ReadFile(filepath.Join("testdata", l.name))
		require.NoError(f, err)
		f.Add(obj, uint16(3))
	}
	f.Fuzz(func(t *testing.T, obj []byte, span uint16) {
		for _, dec := range []func([]byte, []byte) (*Chunk, error){Decode, DecodeDamaged} {
			c, err := dec(obj, nil)
			if err != nil {
				continue
			}
			for i := 0; i < c.N; i++ {
				s, e := c.Range(i)
				require.LessOrEqual(t, s, e)
				require.LessOrEqual(t, e, int64(len(c.Raw)))
				_ = c.Shape(i)
				if _, bad := c.BadSample(i); !bad {
					v := c.Sample(i)
					if c.Dict() && !c.Null(i) {
						require.Len(t, v, c.Shape(i)[0])
					}
				}
			}
		}
		h, err := ParseHeader(obj)
		if err != nil || !h.RangeReadable() || h.N == 0 {
			return
		}
		lo := int(span&0xff) % h.N
		hi := lo + 1 + int(span>>8)%(h.N-lo)
		a, b := h.SpanBlocks(lo, hi)
		start, end := h.BlockRange(a, b)
		if start > end || end > int64(len(obj)) {
			return
		}
		raw, err := h.DecodeBlocks(obj[start:end], a, b, nil)
		if err != nil {
			return
		}
		for i := lo; i < hi; i++ {
			s, e := h.Range(i)
			if s < e {
				require.LessOrEqual(t, e-h.BlockStart(a), int64(len(raw)))
				_ = h.Value(raw, h.BlockStart(a), i)
			}
		}
		if h.Dict() {
			s, _ := h.Range(lo)
			_, e := h.Range(hi - 1)
			if s >= h.BlockStart(a) && e-h.BlockStart(a) <= int64(len(raw)) {
				_, _ = h.AppendIndices(raw, h.BlockStart(a), lo, hi, nil)
			}
		}
	})
}

// TestSampleBlockSize: an lz4 chunk's blocks are the smallest power of two
// that holds its mean sample, within [4 KiB, 64 KiB], recorded in its
// header; a range read of any one sample decodes at most one block more
// than the sample needs, and every sample and span reads back.
func TestSampleBlockSize(t *testing.T) {
	for _, c := range []struct{ raw, n, want int }{
		{0, 0, PlainBlockSize}, {100, 10, PlainBlockSize}, {4096 * 10, 10, 4096}, {4097 * 10, 10, 8192},
		{12288 * 50, 50, 16384}, {40000, 1, 65536}, {1 << 30, 1, BlockSize},
	} {
		require.Equal(t, c.want, SampleBlockSize(c.raw, c.n), "%d bytes in %d samples", c.raw, c.n)
	}
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 2))
	for _, size := range []int{300, 5000, 12288, 70000} {
		samples := make([]sample, 40)
		for i := range samples {
			data := make([]byte, size)
			for k := range data {
				data[k] = byte(r.IntN(8) * (k / 64 % 3))
			}
			samples[i] = sample{shape: []int{size}, data: data}
		}
		for _, codec := range []uint8{CodecLZ4, CodecZstd} {
			obj := encode(t, schema.Uint8, SampleNone, codec, samples)
			name := fmt.Sprintf("%d-byte samples, codec %d (seed %d)", size, codec, seed)
			ch, err := Decode(obj, nil)
			require.NoError(t, err, name)
			want := BlockSize
			if codec == CodecLZ4 {
				want = SampleBlockSize(size*len(samples), len(samples))
			}
			require.Equal(t, want, ch.BlockSize, name)
			h, err := ParseHeader(obj[:ch.Len])
			require.NoError(t, err, name)
			for i := range samples {
				a, b := h.SpanBlocks(i, i+1)
				require.LessOrEqual(t, (b-a)*want, size+2*want, "%s: sample %d decodes blocks [%d, %d)", name, i, a, b)
				requireSpan(t, obj, ch, i, i+1, name)
			}
			requireSpan(t, obj, ch, 3, 29, name)
		}
	}
}
