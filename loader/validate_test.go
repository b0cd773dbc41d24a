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
