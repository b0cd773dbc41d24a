package decodelimit

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/base"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{{"0", 0}, {"536870912", 512 << 20}, {"512MiB", 512 << 20}, {" 2GB ", 2e9}, {"1k", 1000}} {
		got, err := Parse(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
	for _, bad := range []string{"", "-1", "lots", "1.5.3MB", "99999999999999999999"} {
		_, err := Parse(bad)
		require.ErrorIs(t, err, base.ErrInvalidArgument, bad)
	}
}

func TestSize(t *testing.T) {
	require.Equal(t, int64(900_000_000), Size(1, 30000, 30000, 1))
	require.Equal(t, int64(24), Size(4, 3, 2))
	require.Equal(t, int64(0), Size(3, -5, 10))
	require.Equal(t, int64(math.MaxInt64), Size(4, 1<<31, 1<<31, 4, 3))
}

func TestCheck(t *testing.T) {
	old, err := Set(1000)
	require.NoError(t, err)
	t.Cleanup(func() { Set(old) })
	require.NoError(t, Check("x", 1000))
	err = Check("png image of 30x40 pixels, 1 channel", 1200)
	require.ErrorIs(t, err, ErrTooLarge)
	require.ErrorIs(t, err, base.ErrInvalidArgument)
	require.NotErrorIs(t, err, base.ErrCorrupt)
	require.EqualError(t, err, "png image of 30x40 pixels, 1 channel: 1200 bytes, more than the decode limit of 1000 bytes (LOCH_MAX_DECODE_BYTES or --max-decode-bytes sets it)")

	_, err = Set(-1)
	require.ErrorIs(t, err, base.ErrInvalidArgument)
	require.Equal(t, int64(1000), Max(), "a refused Set changes nothing")

	_, err = Set(0) // no limit
	require.NoError(t, err)
	require.NoError(t, Check("x", math.MaxInt64))
}
