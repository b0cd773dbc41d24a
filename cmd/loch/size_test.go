package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"8388608", 8 << 20},
		{"8MiB", 8 << 20},
		{"8mib", 8 << 20},
		{"8Mi", 8 << 20},
		{"8MB", 8_000_000},
		{"8M", 8_000_000},
		{"8 MB", 8_000_000},
		{" 512KiB ", 512 << 10},
		{"1.5GiB", 3 << 29},
		{"10GiB", 10 << 30},
		{"2k", 2000},
		{"0", 0},
	} {
		got, err := parseBytes(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
	for _, bad := range []string{"", "MB", "8XB", "-5", "-5MiB", "eight", "99999999999EiB"} {
		_, err := parseBytes(bad)
		require.ErrorContains(t, err, "not a size", bad)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0:         "0 B",
		750:       "750 B",
		1536:      "1.5 KiB",
		8 << 20:   "8.0 MiB",
		12 << 30:  "12 GiB",
		-2048:     "-2.0 KiB",
		1<<10 - 1: "1023 B",
	} {
		require.Equal(t, want, formatBytes(n), "%d", n)
	}
	require.Equal(t, "1.0 KiB/s", formatRate(2048, 2))
	var f sizeFlag
	require.NoError(t, f.Set("16MiB"))
	require.Equal(t, "16MiB", f.String())
	require.EqualValues(t, 16<<20, f)
	require.Error(t, f.Set("lots"))
}
