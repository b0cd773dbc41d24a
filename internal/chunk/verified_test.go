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
	samples := kiloSamples(1)
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

// TestVerifyRangeChecksTheBlocksUnderARange: UncheckedBlocks hands a plain
// chunk's blocks over unchecked; VerifyRange checks only the blocks under
// the range asked for, records those that pass, and fails (every time) a
// range over a damaged block while ranges beside it pass. A compressed
// chunk's blocks are not handed over unchecked.
func TestVerifyRangeChecksTheBlocksUnderARange(t *testing.T) {
	samples := kiloSamples(2)
	obj := encode(t, schema.Uint8, SampleNone, CodecNone, samples)
	h, err := ParseHeader(obj)
	require.NoError(t, err)
	require.True(t, h.Deferrable())
	require.Greater(t, h.Blocks(), 4)
	a, b := 1, h.Blocks()
	start, end := h.BlockRange(a, b)
	raw, err := h.UncheckedBlocks(obj[start:end], a, b)
	require.NoError(t, err)
	_, err = h.UncheckedBlocks(obj[start:end-1], a, b)
	require.ErrorContains(t, err, "bytes, want")
	base := h.BlockStart(a)
	bs := int64(h.BlockSize)

	v := NewVerified(h.Blocks())
	require.NoError(t, h.VerifyRange(raw, base, 2*bs+5, 3*bs+1, v)) // blocks 2 and 3
	for k := range h.Blocks() {
		require.Equal(t, k == 2 || k == 3, v.Has(k), "block %d", k)
	}
	require.NoError(t, h.VerifyRange(raw, base, 9, 9, v), "an empty range checks nothing")
	require.ErrorContains(t, h.VerifyRange(raw, base, 0, 10, v), "block 0 is not among", "block 0 was not read")

	s4, _ := h.BlockRange(4, 5)
	obj[s4+7] ^= 1
	for range 2 {
		require.ErrorContains(t, h.VerifyRange(raw, base, 4*bs, 4*bs+1, v), "block 4 checksum")
		require.False(t, v.Has(4))
	}
	require.NoError(t, h.VerifyRange(raw, base, 3*bs, 4*bs, v), "the block before it")
	require.NoError(t, h.VerifyRange(raw, base, 5*bs, 5*bs+1, v), "the block after it")

	lz := encode(t, schema.Uint8, SampleNone, CodecLZ4, samples)
	hl, err := ParseHeader(lz)
	require.NoError(t, err)
	require.False(t, hl.Deferrable())
	ls, le := hl.BlockRange(0, 1)
	_, err = hl.UncheckedBlocks(lz[ls:le], 0, 1)
	require.Error(t, err)
}

// kiloSamples returns 100 samples of 1,000 random bytes from seed.
func kiloSamples(seed uint64) []sample {
	r := rand.New(rand.NewPCG(seed, 39))
	samples := make([]sample, 100)
	for i := range samples {
		data := make([]byte, 1000)
		for k := range data {
			data[k] = byte(r.Uint32())
		}
		samples[i] = sample{shape: []int{1000}, data: data}
	}
	return samples
}
