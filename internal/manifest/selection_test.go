package manifest

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/base"
)

func TestRowIDsRoundTrip(t *testing.T) {
	for _, ids := range [][]uint64{
		{},
		{0},
		{5, 6, 7, 100, 3, 2, 1},
		{math.MaxUint64, 0, math.MaxUint64 - 1, 1 << 63},
	} {
		s := EncodeRowIDs(ids)
		got, err := DecodeRowIDs(s, len(ids))
		require.NoError(t, err)
		require.Equal(t, ids, got)
	}
	// Ascending ids cost one byte each.
	asc := make([]uint64, 1000)
	for i := range asc {
		asc[i] = uint64(1_000_000 + i)
	}
	require.Less(t, len(EncodeRowIDs(asc)), 1400)
}

func TestDecodeRowIDsRefuses(t *testing.T) {
	good := EncodeRowIDs([]uint64{1, 2, 3})
	for name, tc := range map[string]struct {
		s string
		n int
	}{
		"bad base64": {"!!!", 0},
		"count":      {good, 4},
		"truncated":  {EncodeRowIDs([]uint64{1 << 40})[:4], 1},
		"twice":      {EncodeRowIDs([]uint64{7, 8, 7}), 3},
		"negative":   {good, -1},
		"overlong":   {"/////////////w==", 1},
	} {
		_, err := DecodeRowIDs(tc.s, tc.n)
		require.ErrorIs(t, err, base.ErrCorrupt, name)
	}
}

func FuzzDecodeRowIDs(f *testing.F) {
	f.Add(EncodeRowIDs([]uint64{1, 2, 3}), 3)
	f.Add(EncodeRowIDs([]uint64{math.MaxUint64, 0}), 2)
	f.Add("", 0)
	f.Fuzz(func(t *testing.T, s string, n int) {
		ids, err := DecodeRowIDs(s, n)
		if err != nil {
			require.ErrorIs(t, err, base.ErrCorrupt)
			return
		}
		require.Len(t, ids, n)
		again, err := DecodeRowIDs(EncodeRowIDs(ids), n)
		require.NoError(t, err)
		require.Equal(t, ids, again)
	})
}
