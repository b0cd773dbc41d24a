package viewer

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/schema"
)

// TestLinks follows a link column to an image beside the dataset, and
// refuses one outside the link policy's roots.
func TestLinks(t *testing.T) {
	dir := t.TempDir()
	png, err := imaging.Encode("png", fixImage(3), []int{fixH, fixW, 3}, 0)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cat.png"), png, 0o644))
	url := filepath.Join(dir, "links")
	d, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{{Name: "src", Kind: schema.Link}}})
	require.NoError(t, err)
	require.NoError(t, d.Append(ctx, loch.Row{"src": loch.String(filepath.Join(dir, "cat.png"))}))
	require.NoError(t, d.Append(ctx, loch.Row{"src": loch.String("/etc/passwd.png")}))
	_, err = d.Commit(ctx, "two links")
	require.NoError(t, err)
	v := d.Version()
	require.NoError(t, d.Close())

	ts, _ := newTestServer(t, url, Options{})
	_, grid := get(t, ts, "/t/links/grid?v="+v)
	require.Contains(t, grid, "cat.png")
	require.Equal(t, 2, strings.Count(grid, `class="thumb"`))
	resp, body := get(t, ts, "/t/links/thumb?v="+v+"&col=src&row=0&size=0")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	got, _ := decodePNG(t, body)
	require.Equal(t, fixImage(3), got)
	resp, body = get(t, ts, "/t/links/sample?v="+v+"&col=src&row=0")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, string(png), body)
	resp, body = get(t, ts, "/t/links/sample?v="+v+"&col=src&row=1")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	require.Contains(t, body, "passwd")
	require.Empty(t, resp.Header.Get("ETag"), "errors are not cached")
}
