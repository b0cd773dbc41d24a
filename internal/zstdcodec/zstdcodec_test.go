package zstdcodec

import (
	"bytes"
	"testing"

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

func FuzzDecode(f *testing.F) {
	f.Add(Encode(nil, []byte("seed")))
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd})
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Decode(nil, data, 1<<20)
		if err == nil {
			require.LessOrEqual(t, len(out), maxMemory)
		}
	})
}
