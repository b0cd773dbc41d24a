package zstdcodec

import (
	"bytes"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
)

func TestRoundTripAndLimit(t *testing.T) {
	src := bytes.Repeat([]byte("loch chunk "), 1000)
	z := Encode([]byte("prefix"), src)
	require.Equal(t, "prefix", string(z[:6]), "Encode appends")
	out, err := Decode(nil, z[6:], uint64(len(src)))
	require.NoError(t, err)
	require.Equal(t, src, out)
	_, err = Decode(nil, z[6:], uint64(len(src)-1))
	require.ErrorContains(t, err, "more than")
	_, err = Decode(nil, []byte("not zstd"), 100)
	require.Error(t, err)
}

// TestUndeclaredSize: frames that do not declare their size decode as a
// stream bounded by the caller's limit and MaxUndeclared, whatever their
// own window and blocks ask for.
func TestUndeclaredSize(t *testing.T) {
	small := Encode(nil, []byte("under 256 bytes"))
	var h zstd.Header
	require.NoError(t, h.Decode(small))
	require.False(t, h.HasFCS, "the encoder leaves the size out of frames under 256 bytes")
	out, err := Decode([]byte("x"), small, 100)
	require.NoError(t, err)
	require.Equal(t, "xunder 256 bytes", string(out))
	_, err = Decode(nil, small, 10)
	require.ErrorContains(t, err, "more than the 10 bytes expected")

	// A stream that does not declare its size and decodes to 1 MiB + 1:
	// refused under a larger limit too, by MaxUndeclared.
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithEncoderCRC(false), zstd.WithSingleSegment(false))
	require.NoError(t, err)
	big := bytes.Repeat([]byte{7}, MaxUndeclared+1)
	_, err = w.ReadFrom(bytes.NewReader(big))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, h.Decode(buf.Bytes()))
	require.False(t, h.HasFCS, "a stream's frame does not declare its size")
	require.Less(t, buf.Len(), 64<<10, "a few KiB")
	_, err = Decode(nil, buf.Bytes(), 1<<32)
	require.ErrorContains(t, err, "does not declare its size")
	out, err = Decode(nil, buf.Bytes()[:0:0], 1)
	require.Error(t, err, "an empty input is no frame")
	require.Nil(t, out)
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(nil, []byte("seed")))
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd})
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Decode(nil, data, 1<<20)
		if err == nil {
			require.LessOrEqual(t, len(out), 1<<20)
		}
	})
}
