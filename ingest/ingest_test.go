package ingest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
)

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string // "" for valid
	}{
		{"zero value", Options{}, ""},
		{"every option set", Options{Parallelism: 2, ChunkBytes: 1 << 20, ImageCompression: CompressJPEG, JPEGQuality: 75, Resize: Size{224, 224}, Channels: 3}, ""},
		{"negative parallelism", Options{Parallelism: -1}, "parallelism -1 (want 0 to 4096)"},
		{"most parallelism", Options{Parallelism: loch.MaxParallelism}, ""},
		// 2^40 goroutines' channels aborted the process (issue 35 item 3).
		{"absurd parallelism", Options{Parallelism: 1 << 40}, "parallelism 1099511627776 (want 0 to 4096)"},
		{"negative chunk bytes", Options{ChunkBytes: -1}, "chunk bytes -1"},
		{"unknown compression", Options{ImageCompression: "gif"}, `image compression "gif" (want png, jpeg, lz4, zstd or none)`},
		{"jpeg quality over 100", Options{JPEGQuality: 101}, "jpeg quality 101"},
		{"negative jpeg quality", Options{JPEGQuality: -5}, "jpeg quality -5"},
		{"resize with one side", Options{Resize: Size{Width: 10}}, "resize to 10x0"},
		{"two channels", Options{Channels: 2}, "2 channels (want 1, 3 or 4)"},
		{"rgba jpeg", Options{ImageCompression: CompressJPEG, Channels: 4}, "jpeg cannot hold 4 channels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, loch.ErrInvalidArgument)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
