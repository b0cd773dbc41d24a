package viewer

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/catalog"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/schema"
)

var ctx = context.Background()

func TestMain(m *testing.M) {
	defer testserver.StopAll()
	m.Run()
}

// Fixture geometry: rows of h×w images.
const (
	fixRows = 30
	fixH    = 48
	fixW    = 64
)

var classes = []string{"cat", "dog", "bird"}

func fixtureSchema() schema.Schema {
	return schema.Schema{Columns: []schema.Column{
		{Name: "image", Kind: schema.Image, DType: schema.Uint8, Shape: schema.Shape{-1, -1, 3}, SampleCompression: schema.PNG},
		{Name: "boxes", Kind: schema.BBox, DType: schema.Float32, Shape: schema.Shape{-1, 4}, BBoxFormat: schema.BBoxXYWH},
		{Name: "labels", Kind: schema.ClassLabel, DType: schema.Int32, Shape: schema.Shape{-1}, ClassNames: classes},
		{Name: "label", Kind: schema.ClassLabel, DType: schema.Int32, Shape: schema.Shape{}, ClassNames: classes},
		{Name: "mask", Kind: schema.Mask, DType: schema.Uint8, Shape: schema.Shape{-1, -1}},
		{Name: "caption", Kind: schema.TextKind, DType: schema.Text},
		{Name: "meta", Kind: schema.JSONKind, DType: schema.JSON},
		{Name: "emb", Kind: schema.Embedding, DType: schema.Float32, Shape: schema.Shape{8}},
		{Name: "audio", Kind: schema.Audio, DType: schema.Float32, Shape: schema.Shape{-1}},
	}}
}

// fixImage is row i's picture: a gradient whose colour depends on i.
func fixImage(i int) []byte {
	pix := make([]byte, fixH*fixW*3)
	for y := 0; y < fixH; y++ {
		for x := 0; x < fixW; x++ {
			p := 3 * (y*fixW + x)
			pix[p], pix[p+1], pix[p+2] = byte(x*4), byte(y*5), byte(i*8)
		}
	}
	return pix
}

// fixBox is row i's one box, xywh in pixels.
func fixBox(i int) []float32 { return []float32{8, 6, 30, 20 + float32(i%5)} }

func fixRow(t testing.TB, i int) loch.Row {
	mask := make([]byte, fixH*fixW)
	for y := 30; y < 40; y++ {
		for x := 40; x < 60; x++ {
			mask[y*fixW+x] = 2
		}
	}
	meta, err := loch.JSON(map[string]any{"row": i, "source": "fixture"})
	require.NoError(t, err)
	emb := make([]float32, 8)
	for k := range emb {
		emb[k] = float32(i + k)
	}
	return loch.Row{
		"image":   loch.Tensor([]int{fixH, fixW, 3}, fixImage(i)),
		"boxes":   loch.Tensor([]int{1, 4}, fixBox(i)),
		"labels":  loch.Tensor([]int{1}, []int32{int32(i % 3)}),
		"label":   loch.Scalar(int32(i % 3)),
		"mask":    loch.Tensor([]int{fixH, fixW}, mask),
		"caption": loch.String("caption of row " + string(rune('a'+i%26))),
		"meta":    meta,
		"emb":     loch.Tensor([]int{8}, emb),
		"audio":   loch.Tensor([]int{160}, make([]float32, 160)),
	}
}

// makeFixture writes the fixture at url: fixRows rows on main (tag v1), a
// branch dev that updates row 1's caption and deletes row 2 and adds a
// row, merged back into main after a commit on main.
// petsTable creates a catalog at a new root with an empty table pets of
// the fixture's schema; closeAll closes the table and the catalog.
func petsTable(t testing.TB) (root string, d *loch.Dataset, closeAll func()) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "lake")
	cat, err := catalog.Open(ctx, root, catalog.WithCreate())
	require.NoError(t, err)
	d, err = cat.CreateTable(ctx, "pets", fixtureSchema())
	require.NoError(t, err)
	return root, d, func() {
		require.NoError(t, d.Close())
		require.NoError(t, cat.Close())
	}
}

func makeFixture(t testing.TB, url string) {
	t.Helper()
	d, err := loch.Create(ctx, url, fixtureSchema())
	require.NoError(t, err)
	defer d.Close()
	var rows []loch.Row
	for i := range fixRows {
		rows = append(rows, fixRow(t, i))
	}
	require.NoError(t, d.Extend(ctx, rows))
	_, err = d.Commit(ctx, "first rows")
	require.NoError(t, err)
	_, err = d.CreateTag(ctx, "v1", "")
	require.NoError(t, err)
	_, err = d.CreateBranch(ctx, "dev", "")
	require.NoError(t, err)

	dev, err := loch.Open(ctx, url, loch.WithRef("dev"))
	require.NoError(t, err)
	defer dev.Close()
	id1, err := dev.RowID(ctx, 1)
	require.NoError(t, err)
	id2, err := dev.RowID(ctx, 2)
	require.NoError(t, err)
	r := fixRow(t, 1)
	r["caption"] = loch.String("a changed caption")
	require.NoError(t, dev.Update(ctx, id1, r))
	require.NoError(t, dev.Delete(ctx, id2))
	require.NoError(t, dev.Append(ctx, fixRow(t, fixRows)))
	_, err = dev.Commit(ctx, "fix a caption")
	require.NoError(t, err)

	require.NoError(t, d.Append(ctx, fixRow(t, fixRows+1)))
	_, err = d.Commit(ctx, "one more row")
	require.NoError(t, err)
	_, err = d.Merge(ctx, "dev", loch.MergeOptions{})
	require.NoError(t, err)
}

// newTestServer serves target with opts on an httptest server.
func newTestServer(t testing.TB, target string, opts Options) (*httptest.Server, *Server) {
	t.Helper()
	s, err := New(ctx, target, opts)
	require.NoError(t, err)
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return ts, s
}

// get fetches path without following redirects.
func get(t testing.TB, ts *httptest.Server, path string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, ts.URL+path, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := ts.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// between returns the text after start up to end.
func between(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	s = s[i+len(start):]
	j := strings.Index(s, end)
	if j < 0 {
		return ""
	}
	return s[:j]
}
