package chunk

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/schema"
)

// legacy is one chunk of testdata/v1.0-*.chunk: written by the format 1.0
// writer (commit ff80e6d, before chunks of codec lz4 and zstd were written
// in blocks), so that TestReadsFormat10 proves that today's reader still
// reads what older loch wrote. legacySamples must never change: the files
// hold exactly its samples.
type legacy struct {
	name  string
	dtype schema.DType
	codec uint8
}

var legacyChunks = []legacy{
	{"v1.0-none-ragged.chunk", schema.Int16, CodecNone},
	{"v1.0-lz4-ragged.chunk", schema.Int16, CodecLZ4},
	{"v1.0-zstd-ragged.chunk", schema.Int16, CodecZstd},
	{"v1.0-lz4-fixed.chunk", schema.Uint8, CodecLZ4},
	{"v1.0-zstd-fixed.chunk", schema.Uint8, CodecZstd},
	{"v1.0-lz4-text.chunk", schema.Text, CodecLZ4},
}

// legacySamples returns the samples of the legacy chunks of dtype: int16
// in ragged 2-d shapes with nulls (a few KiB), uint8 of fixed shape [3000]
// (300 KB, several 64 KiB blocks' worth), or text.
func legacySamples(dtype schema.DType) []sample {
	var out []sample
	switch dtype {
	case schema.Int16:
		for i := range 200 {
			if i%9 == 4 {
				out = append(out, sample{shape: []int{0, 0}, null: true})
				continue
			}
			shape := []int{1 + i%4, 1 + (i*7)%5}
			var b []byte
			for k := range shape[0] * shape[1] {
				b = binary.LittleEndian.AppendUint16(b, uint16(i%5+k))
			}
			out = append(out, sample{shape: shape, data: b})
		}
	case schema.Uint8:
		for i := range 100 {
			b := make([]byte, 3000)
			for k := range b {
				b[k] = byte(i) ^ byte(k/64)
			}
			out = append(out, sample{shape: []int{3000}, data: b})
		}
	case schema.Text:
		for i := range 50 {
			b := []byte{}
			for k := range i % 13 {
				b = append(b, 'a'+byte((i+k)%26))
			}
			out = append(out, sample{shape: []int{len(b)}, data: b})
		}
	}
	return out
}

// TestReadsFormat10 decodes chunks that the format 1.0 writer wrote
// (compressed ones hold one lz4 block or zstd frame and no block checksums)
// and compares every sample with legacySamples. It also proves that
// Builder.EncodeFormat10 writes what that writer wrote, byte for byte.
func TestReadsFormat10(t *testing.T) {
	for _, l := range legacyChunks {
		obj, err := os.ReadFile(filepath.Join("testdata", l.name))
		require.NoError(t, err)
		require.Equal(t, byte(0), obj[5], "%s: minor version", l.name)
		b := NewBuilder(l.dtype, SampleNone, l.codec, 0)
		for _, s := range legacySamples(l.dtype) {
			require.NoError(t, b.Add(s.shape, s.data, s.null))
		}
		again, err := b.EncodeFormat10()
		require.NoError(t, err)
		require.True(t, bytes.Equal(obj, again), "%s: EncodeFormat10 differs from the 1.0 writer", l.name)
		c, err := Decode(obj, nil)
		require.NoError(t, err, l.name)
		require.False(t, c.RangeReadable() && l.codec != CodecNone, "%s: a 1.0 compressed chunk is read whole", l.name)
		want := legacySamples(l.dtype)
		require.Equal(t, len(want), c.N, l.name)
		for i, s := range want {
			require.Equal(t, s.null, c.Null(i), "%s sample %d", l.name, i)
			require.Equal(t, len(s.data), len(c.Sample(i)), "%s sample %d", l.name, i)
			require.True(t, bytes.Equal(s.data, c.Sample(i)), "%s sample %d", l.name, i)
			if !s.null {
				require.Equal(t, s.shape, c.Shape(i), "%s sample %d", l.name, i)
			}
		}
	}
}
