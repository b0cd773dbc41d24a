package viewer

import (
	"fmt"
	"image"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// tinyPix is an h×w picture whose every pixel differs from its
// neighbours.
func tinyPix(h, w int) []byte {
	pix := make([]byte, h*w*3)
	for i := range h * w {
		pix[3*i], pix[3*i+1], pix[3*i+2] = byte(i*37), byte(255-i*11), byte(i*5)
	}
	return pix
}

// makeTiny writes a dataset of tiny pictures (png) at url: an 8×8 one, a
// tall 64×8 one, and a 100×100 one that is not tiny.
func makeTiny(t testing.TB, url string) {
	t.Helper()
	d, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{
		{Name: "image", Kind: schema.Image, DType: schema.Uint8, Shape: schema.Shape{-1, -1, 3}, SampleCompression: schema.PNG},
	}})
	require.NoError(t, err)
	defer d.Close()
	var rows []loch.Row
	for _, hw := range [][2]int{{8, 8}, {64, 8}, {100, 100}} {
		rows = append(rows, loch.Row{"image": loch.Tensor([]int{hw[0], hw[1], 3}, tinyPix(hw[0], hw[1]))})
	}
	require.NoError(t, d.Extend(ctx, rows))
	_, err = d.Commit(ctx, "tiny pictures")
	require.NoError(t, err)
}

// TestTinyImages: a tiny picture is shown enlarged by a whole factor into
// the thumbnail's box, its aspect ratio kept and its pixels sharp squares
// (its thumbnail enlarged by nearest neighbour; on the row page, where
// pictures are shown at full size, by the browser with CSS
// image-rendering: pixelated); a picture that is not tiny is shown as
// before.
func TestTinyImages(t *testing.T) {
	u := filepath.Join(t.TempDir(), "tiny")
	makeTiny(t, u)
	ts, _ := newTestServer(t, u, Options{})
	_, page := get(t, ts, "/t/tiny/")
	v := between(page, `<code id="version">`, "<")
	require.Len(t, v, 32)

	_, grid := get(t, ts, "/t/tiny/grid?v="+v+"&start=0&limit=10")
	img := func(page string, row int) string {
		card := between(page, fmt.Sprintf(`data-pos="%d"`, row), "</article>")
		if card == "" {
			card = page
		}
		return "<img" + between(card, "<img", ">") + ">"
	}
	require.Contains(t, img(grid, 0), `class="thumb tiny" width="192" height="192"`)
	require.Contains(t, img(grid, 1), `class="thumb tiny" width="24" height="192"`, "aspect ratio kept")
	require.Contains(t, img(grid, 2), `class="thumb" width="100" height="100"`, "not enlarged")
	_, grid = get(t, ts, "/t/tiny/grid?v="+v+"&start=0&limit=10&size=100")
	require.Contains(t, img(grid, 0), `class="thumb tiny" width="96" height="96"`, "a whole factor")

	// The grid's thumbnail is the picture enlarged by nearest neighbour.
	resp, body := get(t, ts, "/t/tiny/thumb?v="+v+"&col=image&row=1&size=192")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	got, r := decodePNG(t, body)
	require.Equal(t, image.Rect(0, 0, 24, 192), r)
	orig := tinyPix(64, 8)
	for y := range 192 {
		for x := range 24 {
			p, q := 3*(y*24+x), 3*((y/3)*8+x/3)
			require.Equal(t, orig[q:q+3], got[p:p+3], "pixel (%d, %d)", x, y)
		}
	}

	// The row page shows the picture at full size, enlarged by the
	// browser.
	_, row := get(t, ts, "/t/tiny/row/0?v="+v)
	require.Contains(t, img(row, 0), `class="thumb tiny" width="384" height="384"`)
	require.Contains(t, img(row, 0), "size=0")
	_, row = get(t, ts, "/t/tiny/row/2?v="+v)
	require.Contains(t, img(row, 0), `class="thumb tiny" width="300" height="300"`)
	_, css := get(t, ts, "/static/style.css")
	require.Regexp(t, `\.thumb\.tiny \{[^}]*image-rendering: pixelated`, css)
	require.Regexp(t, `\.thumb \{[^}]*max-width: 100%; height: auto`, css, "kept in its card with its aspect ratio")
}
