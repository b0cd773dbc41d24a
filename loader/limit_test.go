package loader

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/imaging/imagingtest"
	"github.com/lochdata/loch/internal/decodelimit/decodelimittest"
	"github.com/lochdata/loch/schema"
)

// A png declaring 30000x30000 in a dataset (written with no decode limit):
// the loader refuses its row from the chunk header's shape, whether it
// stacks the column or decodes it through transforms, with ErrTooLarge
// naming the row and the column, allocating far less than its 900 MB of
// pixels; SkipBadSamples skips the row as any undecodable sample.
func TestLoaderRefusesDecompressionBomb(t *testing.T) {
	decodelimittest.Set(t, 0)
	d, err := loch.Create(ctx, filepath.Join(t.TempDir(), "ds"), schema.Schema{Columns: []schema.Column{
		{Name: "img", Kind: schema.Image, DType: schema.Uint8, Shape: schema.Shape{-1, -1, 1}, SampleCompression: schema.PNG},
	}})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	small := imagingtest.PNGBomb(40, 30)
	require.NoError(t, d.Extend(ctx, []loch.Row{
		{"img": loch.Encoded(schema.PNG, small, nil)},
		{"img": loch.Encoded(schema.PNG, imagingtest.PNGBomb(30000, 30000), nil)},
		{"img": loch.Encoded(schema.PNG, small, nil)},
	}))
	_, err = d.Commit(ctx, "a bomb in row 1")
	require.NoError(t, err)
	_, err = loch.SetMaxDecodeBytes(512 << 20)
	require.NoError(t, err)

	for _, cfg := range []Config{
		{BatchSize: 3, Shuffle: "none"},
		{BatchSize: 3, Shuffle: "none", Transforms: map[string]string{"img": "decode,resize=16"}},
	} {
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		l, err := New(ctx, d.Scan(), cfg)
		require.NoError(t, err)
		_, err = l.Next(ctx)
		l.Close()
		runtime.ReadMemStats(&b)
		require.ErrorIs(t, err, loch.ErrTooLarge, "%v", cfg.Transforms)
		require.NotErrorIs(t, err, loch.ErrCorrupt)
		require.ErrorContains(t, err, `row id 1 (position 1), column "img"`)
		require.ErrorContains(t, err, "30000")
		require.ErrorContains(t, err, "900000000 bytes, more than the decode limit of 536870912 bytes")
		require.Less(t, b.TotalAlloc-a.TotalAlloc, uint64(64<<20))

		cfg.SkipBadSamples = true
		l, err = New(ctx, d.Scan(), cfg)
		require.NoError(t, err)
		batches := drain(t, l)
		l.Close()
		require.Len(t, batches, 1)
		require.Equal(t, []uint64{0, 2}, batches[0].RowIDs)
		require.Equal(t, []uint64{1}, l.Stats().SkippedRows)
	}
}
