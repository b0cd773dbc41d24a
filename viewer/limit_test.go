package viewer

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

// A stored png declaring 30000x30000 (as a dataset written with no decode
// limit, or by an older loch, holds it): its thumbnail is answered 422,
// naming the row and both sizes, from the header, without decoding
// (the bytes allocated stay far below its 900 MB of pixels); the other
// rows' thumbnails are served.
func TestThumbnailOfDecompressionBomb(t *testing.T) {
	url := filepath.Join(t.TempDir(), "bombs")
	decodelimittest.Set(t, 0)
	d, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{
		{Name: "image", Kind: schema.Image, DType: schema.Uint8, Shape: schema.Shape{-1, -1, 1}, SampleCompression: schema.PNG},
	}})
	require.NoError(t, err)
	require.NoError(t, d.Extend(ctx, []loch.Row{
		{"image": loch.Encoded(schema.PNG, imagingtest.PNGBomb(30000, 30000), nil)},
		{"image": loch.Encoded(schema.PNG, imagingtest.PNGBomb(40, 30), nil)},
	}))
	_, err = d.Commit(ctx, "a bomb and a small image")
	require.NoError(t, err)
	require.NoError(t, d.Close())

	_, err = loch.SetMaxDecodeBytes(512 << 20) // the default
	require.NoError(t, err)
	ts, _ := newTestServer(t, url, Options{})
	_, page := get(t, ts, "/t/bombs/")
	v := between(page, `<code id="version">`, "<")
	require.Len(t, v, 32)

	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	resp, body := get(t, ts, "/t/bombs/thumb?v="+v+"&col=image&row=0&size=128")
	runtime.ReadMemStats(&b)
	require.Equal(t, 422, resp.StatusCode, body)
	require.Contains(t, body, `column "image" row 0`)
	require.Contains(t, body, "png image sample of shape [30000 30000 1]: 900000000 bytes, more than the decode limit of 536870912 bytes")
	require.Less(t, b.TotalAlloc-a.TotalAlloc, uint64(64<<20), "bytes allocated answering the bomb's thumbnail")

	resp, body = get(t, ts, "/t/bombs/thumb?v="+v+"&col=image&row=1&size=128")
	require.Equal(t, 200, resp.StatusCode, body)
}
