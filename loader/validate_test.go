package loader

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/loader/order"
)

// TestValidateParsesTransforms: a transform spec's grammar is checked with
// the other settings, before any data is opened; whether its column exists
// is left to the loader's start.
func TestValidateParsesTransforms(t *testing.T) {
	ok := Config{Transforms: map[string]string{"image": "decode,resize=32,center_crop=24,to_float", "nope": "hflip"}}
	require.NoError(t, ok.Validate())
	bad := Config{Transforms: map[string]string{"image": "decode", "thumb": "resize=32,frobnicate"}}
	err := bad.Validate()
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
	require.ErrorContains(t, err, `transform for column "thumb": step 2 "frobnicate": unknown step`)
}

// TestFetchConcurrencyDefault: a full shuffle, which reads each sample
// alone, fetches more at once by default, unless the fetchers decode
// video clips or audio segments; a value given is kept.
func TestFetchConcurrencyDefault(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want int
	}{
		{Config{}, 16},
		{Config{Shuffle: order.ModeNone}, 16},
		{Config{Shuffle: order.ModeFull}, 128},
		{Config{Shuffle: order.ModeFull, FetchConcurrency: 4}, 4},
		// Clips decoded by the fetchers: no more decoders than before.
		{Config{Shuffle: order.ModeFull, Transforms: map[string]string{"video": "clip=16,resize=112"}}, 16},
		{Config{Shuffle: order.ModeFull, Transforms: map[string]string{"image": "decode,resize=112"}}, 128},
	} {
		c.cfg.defaults()
		require.Equal(t, c.want, c.cfg.FetchConcurrency, c.cfg.Shuffle)
	}
}

// TestValidateBounds: a setting that sizes a buffer, a channel or a set of
// goroutines is refused above its bound, naming the setting, the value and
// the bound (issue 35 item 3: a prefetch of 2^40 batches or 2^40 workers
// aborted the process out of memory); the bounds themselves are valid.
func TestValidateBounds(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string // "" for valid
	}{
		{Config{BatchSize: MaxBatchSize}, ""},
		{Config{BatchSize: 1 << 34}, "batch size 17179869184: want 1 to 2147483647"},
		{Config{BatchSize: -1}, "batch size -1: want 1 to 2147483647"},
		{Config{PrefetchBatches: MaxPrefetchBatches}, ""},
		{Config{PrefetchBatches: 1 << 40}, "prefetch batches 1099511627776: want at most 65536"},
		{Config{FetchConcurrency: loch.MaxParallelism, Workers: loch.MaxParallelism}, ""},
		{Config{FetchConcurrency: 1 << 40}, "fetch concurrency 1099511627776: want at most 4096"},
		{Config{Workers: 1 << 40}, "workers 1099511627776: want at most 4096"},
	} {
		err := c.cfg.Validate()
		if c.want == "" {
			require.NoError(t, err)
			continue
		}
		require.ErrorIs(t, err, loch.ErrInvalidArgument)
		require.ErrorContains(t, err, c.want)
	}
}
