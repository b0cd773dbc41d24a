package viewer

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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

// TestLinksToInternalAddresses: the viewer serves no link to an internal
// address (here the loopback server standing for a machine's own service)
// unless its link policy allows it; the 403 says which address and how.
func TestLinksToInternalAddresses(t *testing.T) {
	t.Setenv(loch.EnvLinkAllow, "")
	png, err := imaging.Encode("png", fixImage(3), []int{fixH, fixW, 3}, 0)
	require.NoError(t, err)
	var hits atomic.Int64
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write(png)
	}))
	t.Cleanup(internal.Close)
	url := filepath.Join(t.TempDir(), "links")
	d, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{{Name: "src", Kind: schema.Link}}})
	require.NoError(t, err)
	require.NoError(t, d.Append(ctx, loch.Row{"src": loch.String(internal.URL + "/cat.png")}))
	_, err = d.Commit(ctx, "an internal link")
	require.NoError(t, err)
	v := d.Version()
	require.NoError(t, d.Close())

	ts, _ := newTestServer(t, url, Options{})
	for _, path := range []string{"/sample", "/thumb"} {
		resp, body := get(t, ts, "/t/links"+path+"?v="+v+"&col=src&row=0")
		require.Equal(t, http.StatusForbidden, resp.StatusCode, path)
		require.Contains(t, body, "127.0.0.1 is a loopback address", path)
		require.Contains(t, body, "LOCH_LINK_ALLOW=127.0.0.1:", path)
	}
	require.EqualValues(t, 0, hits.Load(), "the viewer reached nothing")

	ts, _ = newTestServer(t, url, Options{Open: []loch.Option{loch.WithLinkPolicy(loch.LinkPolicy{Allow: []string{"127.0.0.1"}})}})
	resp, body := get(t, ts, "/t/links/sample?v="+v+"&col=src&row=0")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, string(png), body)
}
