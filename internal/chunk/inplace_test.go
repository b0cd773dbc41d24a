package chunk

import (
	"math/rand/v2"
	"testing"

	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/schema"
	"github.com/stretchr/testify/require"
)

func TestCombineChecksums(t *testing.T) {
	r := testseed.Rand(t, 39)
	data := make([]byte, 3*BlockSize+17)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for _, bs := range []int{1, 3, 64, PlainBlockSize, BlockSize} {
		for _, n := range []int{0, 1, bs - 1, bs, bs + 1, 2 * bs, 3*bs - 1, 1000, len(data)} {
			if n < 0 || n > len(data) {
				continue
			}
			var sums []uint32
			for off := 0; off < n; off += bs {
				sums = append(sums, Checksum(data[off:min(off+bs, n)]))
			}
			require.Equal(t, Checksum(data[:n]), combineChecksums(sums, bs, n), "block size %d, %d bytes", bs, n)
		}
	}
}

// TestEncodeInPlace pins EncodeInPlace to EncodeTo byte for byte, for
// every kind of chunk, on a Builder reused across chunks (its room growing
// after a header that did not fit), and checks that codec none chunks are
// encoded without a copy of their data once the room fits their header.
func TestEncodeInPlace(t *testing.T) {
	r := testseed.Rand(t, 39)
	kinds := []struct {
		name          string
		dtype         schema.DType
		sample, codec uint8
		samples       func(n int) []sample
	}{
		{"jpeg none", schema.Uint8, SampleJPEG, CodecNone, func(n int) []sample { return randomImages(r, n) }},
		{"uint8 ragged none", schema.Uint8, SampleNone, CodecNone, func(n int) []sample { return randomSamples(r, schema.Uint8, true, n) }},
		{"float32 fixed none", schema.Float32, SampleNone, CodecNone, func(n int) []sample { return randomSamples(r, schema.Float32, false, n) }},
		{"text none", schema.Text, SampleNone, CodecNone, func(n int) []sample { return randomSamples(r, schema.Text, false, n) }},
		{"text dict none", schema.Text, SampleNone, CodecNone, func(n int) []sample { return lowCardinality(r, n, 3, true) }},
		{"uint8 ragged lz4", schema.Uint8, SampleNone, CodecLZ4, func(n int) []sample { return randomSamples(r, schema.Uint8, true, n) }},
		{"jpeg zstd", schema.Uint8, SampleJPEG, CodecZstd, func(n int) []sample { return randomImages(r, n) }},
	}
	for _, k := range kinds {
		for _, hint := range []int{0, 256, 1 << 20} {
			b := NewBuilder(k.dtype, k.sample, k.codec, hint)
			for round := range 4 {
				samples := k.samples(1 + r.IntN(300))
				want := encode(t, k.dtype, k.sample, k.codec, samples)
				for _, s := range samples {
					require.NoError(t, b.Add(s.shape, s.data, s.null))
				}
				got, inPlace, err := b.EncodeInPlace(nil)
				require.NoError(t, err)
				require.Equal(t, want, got, "%s, size hint %d, round %d", k.name, hint, round)
				h, err := Decode(got, nil)
				require.NoError(t, err)
				requireBlockCRCs(t, h)
				plain := h.Codec == CodecNone && h.Flags&(FlagDict|FlagEncoded) == 0
				switch {
				case !plain:
					require.False(t, inPlace, "%s: only plain codec none chunks are encoded in place", k.name)
				case hint == 1<<20 && round > 0:
					// The first chunk's header may outgrow the first guess
					// at the room; the Builder then keeps more.
					require.True(t, inPlace, "%s, round %d", k.name, round)
				}
				b.Reset()
			}
		}
	}
}

// TestEncodeInPlaceGrows: a Builder that outgrows its buffer keeps the
// room before its data, and an encode in place leaves the samples added
// before it intact for a second encode.
func TestEncodeInPlaceGrows(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	b := NewBuilder(schema.Uint8, SampleJPEG, CodecNone, 1024)
	samples := randomImages(r, 50)
	for _, s := range samples {
		require.NoError(t, b.Add(s.shape, s.data, s.null))
	}
	require.Greater(t, b.RawBytes(), 1024)
	want := encode(t, schema.Uint8, SampleJPEG, CodecNone, samples)
	got, inPlace, err := b.EncodeInPlace(nil)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.True(t, inPlace)
	again, err := b.Encode()
	require.NoError(t, err)
	require.Equal(t, want, again)
}

// TestEncodeInPlaceRoom: a header larger than the room is copied, and the
// Builder keeps room for it from its next chunk on.
func TestEncodeInPlaceRoom(t *testing.T) {
	b := NewBuilder(schema.Uint8, SampleJPEG, CodecNone, 1<<20)
	many := make([]sample, 5000) // 40 KB of offsets, more than the first room
	for i := range many {
		many[i] = sample{shape: []int{1, 1, 1}, data: []byte{byte(i), 1}}
	}
	want := encode(t, schema.Uint8, SampleJPEG, CodecNone, many)
	for round := range 2 {
		for _, s := range many {
			require.NoError(t, b.Add(s.shape, s.data, s.null))
		}
		got, inPlace, err := b.EncodeInPlace(nil)
		require.NoError(t, err)
		require.Equal(t, want, got)
		require.Equal(t, round == 1, inPlace, "round %d", round)
		b.Reset()
	}
}

// requireBlockCRCs checks a decoded chunk's block checksums against its
// raw data, block by block (the Builder computes them as samples come).
func requireBlockCRCs(t *testing.T, c *Chunk) {
	t.Helper()
	for k, want := range c.BlockCRCs {
		require.Equal(t, want, Checksum(c.Raw[k*c.BlockSize:min((k+1)*c.BlockSize, len(c.Raw))]), "block %d", k)
	}
}

// TestLazyOffsetsAndNulls pins the Builder's lazy per-sample metadata (no
// offsets held for one-dimensional text samples, the sums of their
// shapes; no null flags before the first null) to the chunks it makes
// once both are written out: the same bytes, for every codec, with nulls
// first, later or none, and a piece of a split sample, whose shape is not
// its length, read back with its shape.
func TestLazyOffsetsAndNulls(t *testing.T) {
	r := testseed.Rand(t, 39)
	for _, codec := range []uint8{CodecNone, CodecLZ4, CodecZstd} {
		for _, nulls := range []string{"none", "first", "later"} {
			samples := randomSamples(r, schema.Text, true, 8+r.IntN(200)) // "later" needs row 7
			for i := range samples {
				samples[i].null = nulls == "first" && i == 0 || nulls == "later" && i > 0 && i%7 == 0
				if samples[i].null {
					samples[i].shape, samples[i].data = []int{0}, nil
				}
			}
			lazy, eager := NewBuilder(schema.Text, SampleNone, codec, 0), NewBuilder(schema.Text, SampleNone, codec, 0)
			for i, s := range samples {
				require.NoError(t, lazy.Add(s.shape, s.data, s.null))
				require.NoError(t, eager.Add(s.shape, s.data, s.null))
				if i == 0 {
					eager.writeLenOffsets()
					eager.nulls = append(eager.nulls[:0], s.null) // a flag for every sample from here on
				}
			}
			require.True(t, lazy.lenOffsets, "codec %d nulls %s", codec, nulls)
			require.Equal(t, nulls == "none", len(lazy.nulls) == 0)
			want, err := eager.Encode()
			require.NoError(t, err)
			got, err := lazy.Encode()
			require.NoError(t, err)
			require.Equal(t, want, got, "codec %d nulls %s", codec, nulls)
		}
	}
	b := NewBuilder(schema.Text, SampleNone, CodecNone, 0)
	require.NoError(t, b.Add([]int{3}, []byte("abc"), false))
	require.NoError(t, b.Add([]int{30}, []byte("0123456789"), false)) // a piece: offsets written out
	require.False(t, b.lenOffsets)
	obj, err := b.Encode()
	require.NoError(t, err)
	ch, err := Decode(obj, nil)
	require.NoError(t, err)
	require.Equal(t, []int{3}, ch.Shape(0))
	require.Equal(t, []int{30}, ch.Shape(1))
	require.Equal(t, []byte("0123456789"), ch.Sample(1))
}
