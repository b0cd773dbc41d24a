package chunk

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/schema"
)

func TestVerifiedBits(t *testing.T) {
	var none *Verified
	require.False(t, none.Has(0), "nil has none")
	none.set(0) // and ignores a set
	v := NewVerified(130)
	for _, k := range []int{0, 63, 64, 129} {
		require.False(t, v.Has(k))
		v.set(k)
		require.True(t, v.Has(k))
	}
	require.False(t, v.Has(1))
	require.False(t, v.Has(128))
	require.False(t, v.Has(500), "out of range")
	v.set(500)
	require.False(t, v.Has(500))
}

// TestDecodeBlocksOnceChecksEachBlockOnce: a block that passed its
// checksum is not checked again from the same record, so bytes changed
// under it (what a mapped chunk's immutability rules out) go unnoticed
// there, and are caught with a fresh record; a block that fails is never
// recorded.
func TestDecodeBlocksOnceChecksEachBlockOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 39))
	samples := make([]sample, 100)
	for i := range samples {
		data := make([]byte, 1000)
		for k := range data {
			data[k] = byte(r.Uint32())
		}
		samples[i] = sample{shape: []int{1000}, data: data}
	}
	obj := encode(t, schema.Uint8, SampleNone, CodecNone, samples)
	h, err := ParseHeader(obj)
	require.NoError(t, err)
	require.Greater(t, h.Blocks(), 2)
	a, b := 0, h.Blocks()
	start, end := h.BlockRange(a, b)
	v := NewVerified(h.Blocks())
	_, err = h.DecodeBlocksOnce(obj[start:end], a, b, nil, v)
	require.NoError(t, err)
	for k := a; k < b; k++ {
		require.True(t, v.Has(k), "block %d recorded", k)
	}
	s1, _ := h.BlockRange(1, 2)
	obj[s1] ^= 1
	_, err = h.DecodeBlocksOnce(obj[start:end], a, b, nil, v)
	require.NoError(t, err, "block 1 is not checked again")
	fresh := NewVerified(h.Blocks())
	for range 2 {
		_, err = h.DecodeBlocksOnce(obj[start:end], a, b, nil, fresh)
		require.ErrorContains(t, err, "block 1 checksum")
		require.False(t, fresh.Has(1))
	}
}
