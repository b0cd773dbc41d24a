package chunk

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/schema"
	"github.com/stretchr/testify/require"
)

// lowCardinality returns n text samples drawn from k distinct values (json
// objects when asJSON), with about one null in eight when nulls.
func lowCardinality(r *rand.Rand, n, k int, nulls bool) []sample {
	vals := make([][]byte, k)
	for j := range vals {
		vals[j] = fmt.Appendf(nil, `{"src":"%c","q":%d,"tag":"v%d"}`, 'a'+byte(j%26), j, r.IntN(1000))
	}
	out := make([]sample, n)
	for i := range out {
		if nulls && r.IntN(8) == 0 {
			out[i] = sample{shape: []int{0}, null: true}
			continue
		}
		v := vals[r.IntN(k)]
		out[i] = sample{shape: []int{len(v)}, data: v}
	}
	return out
}

// TestDictRoundTrip encodes low-cardinality text and json samples with
// every codec, with 1- and 2-byte indices and with nulls, and checks that
// the writer chose a dictionary and that whole and span reads give back
// every sample, shape and null.
func TestDictRoundTrip(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 2))
	for _, k := range []int{1, 2, 30, 256, 257, 3000} {
		for _, dtype := range []schema.DType{schema.Text, schema.JSON} {
			samples := lowCardinality(r, 20*k+r.IntN(500), k, k%2 == 0)
			for _, codec := range []uint8{CodecNone, CodecLZ4, CodecZstd} {
				name := fmt.Sprintf("%s, %d values, codec %d (seed %d)", dtype, k, codec, seed)
				obj := encode(t, dtype, SampleNone, codec, samples)
				ch, err := Decode(obj, nil)
				require.NoError(t, err, name)
				require.Equal(t, map[bool]byte{false: DictMinor, true: EncodedMinor}[ch.Encoded()], obj[5], name)
				require.True(t, ch.Dict(), name)
				require.LessOrEqual(t, ch.DictLen(), k, name)
				require.Equal(t, int64(len(samples)*dictWidth(ch.DictLen())), ch.RawLen, name)
				idx, ok := ch.AppendIndices(ch.Raw, 0, 0, ch.N, nil)
				require.True(t, ok, name)
				for i, s := range samples {
					require.Equal(t, s.null, idx[i] < 0, name)
					if !s.null {
						require.Equal(t, s.data, ch.Entry(int(idx[i])), name)
					}
					require.Equal(t, s.null, ch.Null(i), name)
					require.True(t, bytes.Equal(s.data, ch.Sample(i)), "%s sample %d", name, i)
					require.Equal(t, s.shape, ch.Shape(i), name)
					if !s.null {
						require.Equal(t, s.data, ch.Entry(ch.Index(ch.Raw, 0, i)), name)
					}
				}
				for range 20 {
					lo := r.IntN(ch.N)
					requireSpan(t, obj, ch, lo, lo+1+r.IntN(ch.N-lo), name)
				}
			}
		}
	}
}

// TestDictRule checks when the writer uses a dictionary: not for many
// distinct values, bytes columns, all-null chunks or format 1.0 chunks.
func TestDictRule(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for name, tc := range map[string]struct {
		dtype   schema.DType
		samples []sample
		dict    bool
	}{
		"few json values":        {schema.JSON, lowCardinality(r, 1000, 10, false), true},
		"text of unique values":  {schema.Text, randomSamples(r, schema.Text, false, 3000), false},
		"bytes":                  {schema.Bytes, lowCardinality(r, 1000, 10, false), false},
		"all null":               {schema.Text, []sample{{shape: []int{0}, null: true}, {shape: []int{0}, null: true}}, false},
		"one value, one row":     {schema.Text, []sample{{shape: []int{3}, data: []byte("abc")}}, false},
		"more than 65536 values": {schema.Text, distinctSamples(MaxDictEntries + 1), false},
	} {
		obj := encode(t, tc.dtype, SampleNone, CodecLZ4, tc.samples)
		h, err := ParseHeader(obj)
		require.NoError(t, err, name)
		require.Equal(t, tc.dict, h.Dict(), name)
		ch, err := Decode(obj, nil)
		require.NoError(t, err, name)
		for i, s := range tc.samples {
			require.True(t, bytes.Equal(s.data, ch.Sample(i)), "%s sample %d", name, i)
		}
	}
	b := NewBuilder(schema.Text, SampleNone, CodecLZ4, 0)
	for _, s := range lowCardinality(r, 1000, 3, false) {
		require.NoError(t, b.Add(s.shape, s.data, false))
	}
	obj, err := b.EncodeFormat10()
	require.NoError(t, err)
	require.Zero(t, obj[5])
}

// distinctSamples returns n samples with long, distinct values that a
// dictionary would still halve, were it not limited to MaxDictEntries.
func distinctSamples(n int) []sample {
	out := make([]sample, 2*n)
	for i := range out {
		v := fmt.Appendf(nil, "%060d", i%n)
		out[i] = sample{shape: []int{len(v)}, data: v}
	}
	return out
}

// TestDictCorrupt checks that a hostile dictionary (an entry count out of
// range, offsets that decrease or run past the header, an index past the
// dictionary, flags and types a dictionary does not go with) is ErrCorrupt, from
// whole and span reads, and never a panic or a huge allocation.
func TestDictCorrupt(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	samples := lowCardinality(r, 500, 5, true)
	obj := encode(t, schema.JSON, SampleNone, CodecNone, samples)
	h, err := ParseHeader(obj)
	require.NoError(t, err)
	require.True(t, h.Dict())
	// The dictionary section follows the null bitmap (no shapes).
	dictAt := fixedHeaderLen + (h.N+7)/8
	reseal := func(b []byte) []byte {
		hl := int(binary.LittleEndian.Uint32(b[16:]))
		binary.LittleEndian.PutUint32(b[hl-4:], Checksum(b[:hl-4]))
		data := b[hl : len(b)-4]
		// Block checksums and the data checksum follow the data, so that
		// only the property under test is wrong.
		bs := int(binary.LittleEndian.Uint32(b[20:]))
		crcAt := hl - 4 - 4*blockCount(int64(len(data)), bs)
		for k := 0; k*bs < len(data); k++ {
			binary.LittleEndian.PutUint32(b[crcAt+4*k:], Checksum(data[k*bs:min((k+1)*bs, len(data))]))
		}
		binary.LittleEndian.PutUint32(b[hl-4:], Checksum(b[:hl-4]))
		binary.LittleEndian.PutUint32(b[len(b)-4:], Checksum(data))
		return b
	}
	firstNonNull := 0
	for samples[firstNonNull].null {
		firstNonNull++
	}
	for name, mutate := range map[string]func(b []byte){
		"no entries":             func(b []byte) { binary.LittleEndian.PutUint32(b[dictAt:], 0) },
		"a billion entries":      func(b []byte) { binary.LittleEndian.PutUint32(b[dictAt:], 1<<30) },
		"65537 entries":          func(b []byte) { binary.LittleEndian.PutUint32(b[dictAt:], MaxDictEntries+1) },
		"offsets decrease":       func(b []byte) { binary.LittleEndian.PutUint32(b[dictAt+8:], 1<<20) },
		"offsets past header":    func(b []byte) { binary.LittleEndian.PutUint32(b[dictAt+4+4*h.DictLen():], 1<<31) },
		"index past entries":     func(b []byte) { b[h.Len+firstNonNull] = byte(h.DictLen()) },
		"fixed shape flag":       func(b []byte) { b[10] |= byte(FlagFixedShape) },
		"partial flag":           func(b []byte) { b[10] |= byte(FlagPartial) },
		"bytes dtype":            func(b []byte) { b[6] = byte(schema.Bytes) },
		"raw length of n+1":      func(b []byte) { binary.LittleEndian.PutUint64(b[32:], uint64(h.N+1)) },
		"png sample compression": func(b []byte) { b[7] = SamplePNG },
	} {
		b := reseal(func() []byte { b := bytes.Clone(obj); mutate(b); return b }())
		_, err := Decode(b, nil)
		require.ErrorIs(t, err, base.ErrCorrupt, name)
		_, err = DecodeDamaged(b, nil)
		require.Error(t, err, name)
		if hh, err := ParseHeader(b); err == nil {
			a, e := hh.SpanBlocks(0, hh.N)
			s, end := hh.BlockRange(a, e)
			_, err = hh.DecodeBlocks(b[s:end], a, e, nil)
			require.ErrorIs(t, err, base.ErrCorrupt, name)
		}
	}
}

// TestDictNewerReaders checks the compatibility rule for dictionary
// chunks: a flag this reader does not know in a chunk of a newer minor
// version is ErrNewerFormat, as a 1.7 reader refuses bit 5 of a 1.8 chunk
// (and a 1.13 reader bit 6 of a 1.14 one).
func TestDictNewerReaders(t *testing.T) {
	obj := encode(t, schema.Text, SampleNone, CodecLZ4, lowCardinality(rand.New(rand.NewPCG(1, 1)), 100, 2, false))
	b := bytes.Clone(obj)
	b[5] = Minor + 1
	binary.LittleEndian.PutUint16(b[10:], binary.LittleEndian.Uint16(b[10:])|FlagEncoded<<1)
	hl := int(binary.LittleEndian.Uint32(b[16:]))
	binary.LittleEndian.PutUint32(b[hl-4:], Checksum(b[:hl-4]))
	_, err := ParseHeader(b)
	require.ErrorIs(t, err, base.ErrNewerFormat)
}
