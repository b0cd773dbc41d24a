package viewer

import (
	"html"
	"image"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/testserver"
)

// localFixture makes the fixture in a temporary directory and serves it.
func localFixture(t *testing.T) (*httptest.Server, string, string) {
	url := filepath.Join(t.TempDir(), "pets")
	makeFixture(t, url)
	ts, _ := newTestServer(t, url, Options{})
	_, page := get(t, ts, "/t/pets/")
	v := between(page, `<code id="version">`, "<")
	require.Len(t, v, 32, "version id on the dataset page")
	return ts, url, v
}

// versionOf returns the version id ref names, from the dataset page.
func versionOf(t *testing.T, ts *httptest.Server, ref string) string {
	_, page := get(t, ts, "/t/pets/?ref="+ref)
	v := between(page, `<code id="version">`, "<")
	require.Len(t, v, 32)
	return v
}

func TestPages(t *testing.T) {
	ts, _, v := localFixture(t)

	resp, _ := get(t, ts, "/")
	require.Equal(t, http.StatusFound, resp.StatusCode)
	require.Equal(t, "/t/pets/", resp.Header.Get("Location"))

	resp, page := get(t, ts, "/t/pets/")
	require.Equal(t, 200, resp.StatusCode)
	for _, want := range []string{"31 rows", "branch dev", "tag v1", ">cat<", ">dog<", ">bird<", "image", "boxes"} {
		require.Contains(t, page, want)
	}
	// Statistics: the class histogram counts every row's label.
	require.Contains(t, page, `<span class="name">cat</span>`)
	require.Contains(t, page, "<td>[?, ?, 3]</td><td>[48, 64, 3] … [48, 64, 3]</td>", "declared and seen shapes")

	resp, grid := get(t, ts, "/t/pets/grid?v="+v+"&start=0&limit=10")
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, 10, strings.Count(grid, `<article class="card"`))
	require.Equal(t, 10, strings.Count(grid, `class="thumb`)/2, "an image and a mask thumbnail per row")
	require.Contains(t, grid, `data-next="/t/pets/grid?`)
	require.Contains(t, grid, "caption of row")
	require.Contains(t, grid, "&#34;source&#34;: &#34;fixture&#34;", "JSON pretty-printed")
	require.Contains(t, grid, "float32 [8] min 0 max 7 mean 3.5 [0, 1, 2, 3, 4, 5, 6, 7]", "tensor summarised")
	require.Contains(t, grid, "<audio controls")

	_, last := get(t, ts, "/t/pets/grid?v="+v+"&start=29&limit=10")
	require.Equal(t, 2, strings.Count(last, `<article class="card"`))
	require.NotContains(t, last, "data-next")

	resp, row := get(t, ts, "/t/pets/row/3?v="+versionOf(t, ts, "v1"))
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, row, "size=0")
	require.Contains(t, row, "caption of row d")

	resp, logPage := get(t, ts, "/t/pets/log")
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, logPage, `class="merge"`)
	require.Contains(t, logPage, "fix a caption")
	require.Contains(t, logPage, `<span class="ref branch">dev</span>`)
	require.Contains(t, logPage, `<span class="ref tag">v1</span>`)

	resp, diff := get(t, ts, "/t/pets/diff?from=v1&to=dev")
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, diff, "1 added</span>, <span class=\"deleted\">1 deleted</span>, <span class=\"modified\">1 modified")
	require.Equal(t, 3, strings.Count(diff, `<section class="change`))
	mod := between(diff, `<section class="change modified"`, "</section>")
	require.Contains(t, mod, "a changed caption")
	require.Equal(t, 2, strings.Count(mod, `kind-text changed`), "the caption is highlighted on both sides")
	require.Equal(t, 2, strings.Count(mod, `kind-image"`), "images side by side")

	resp, wav := get(t, ts, "/t/pets/sample?v="+v+"&col=audio&row=0")
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "audio/wave", resp.Header.Get("Content-Type"))
	require.True(t, strings.HasPrefix(wav, "RIFF"))

	resp, stored := get(t, ts, "/t/pets/sample?v="+v+"&col=image&row=0")
	require.Equal(t, "image/png", resp.Header.Get("Content-Type"))
	pix, _, err := imaging.Decode([]byte(stored))
	require.NoError(t, err)
	require.Equal(t, fixImage(0), pix)
}

// decodePNG decodes a thumbnail into HWC RGB bytes.
func decodePNG(t *testing.T, b string) ([]byte, image.Rectangle) {
	img, err := png.Decode(strings.NewReader(b))
	require.NoError(t, err)
	r := img.Bounds()
	out := make([]byte, 0, r.Dx()*r.Dy()*3)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c, g, bl, _ := img.At(x, y).RGBA()
			out = append(out, byte(c>>8), byte(g>>8), byte(bl>>8))
		}
	}
	return out, r
}

func TestThumbnailPixels(t *testing.T) {
	ts, _, _ := localFixture(t)
	v := versionOf(t, ts, "v1") // rows in the order written
	resp, body := get(t, ts, "/t/pets/thumb?v="+v+"&col=image&row=5&size=32&overlay=0")
	require.Equal(t, 200, resp.StatusCode)
	got, r := decodePNG(t, body)
	require.Equal(t, image.Rect(0, 0, 32, 24), r)
	want := make([]byte, 24*32*3)
	require.NoError(t, imaging.Resize(want, fixImage(5), fixH, fixW, 24, 32, 3, imaging.Bilinear))
	require.Equal(t, want, got, "the thumbnail is the stored sample resized")
}

func TestBoxesAndMasksDrawn(t *testing.T) {
	ts, _, _ := localFixture(t)
	v := versionOf(t, ts, "v1")
	_, body := get(t, ts, "/t/pets/thumb?v="+v+"&col=image&row=1&size=0")
	got, r := decodePNG(t, body)
	require.Equal(t, image.Rect(0, 0, fixW, fixH), r)
	at := func(x, y int) [3]byte { p := 3 * (y*fixW + x); return [3]byte{got[p], got[p+1], got[p+2]} }
	c := classColor(1) // row 1 is a dog
	dog := [3]byte{c.R, c.G, c.B}
	box := fixBox(1) // xywh: 8, 6, 30, 21
	x0, y0, x1, y1 := int(box[0]), int(box[1]), int(box[0]+box[2]), int(box[1]+box[3])
	require.Equal(t, dog, at(x0, (y0+y1)/2), "left edge")
	require.Equal(t, dog, at(x1, (y0+y1)/2), "right edge")
	require.Equal(t, dog, at((x0+x1)/2, y1), "bottom edge")
	orig := fixImage(1)
	p := 3 * ((y1-3)*fixW + (x0+x1)/2) // below the class name's tag
	require.Equal(t, [3]byte{orig[p], orig[p+1], orig[p+2]}, at((x0+x1)/2, y1-3), "inside is untouched")
	// The mask (class 2, bird) is blended in its rectangle only.
	p = 3 * (35*fixW + 50)
	require.NotEqual(t, [3]byte{orig[p], orig[p+1], orig[p+2]}, at(50, 35))
	p = 3 * (45*fixW + 50)
	require.Equal(t, [3]byte{orig[p], orig[p+1], orig[p+2]}, at(50, 45))
}

func TestCacheHeaders(t *testing.T) {
	ts, _, v := localFixture(t)
	for _, path := range []string{"/t/pets/thumb?v=" + v + "&col=image&row=2", "/t/pets/sample?v=" + v + "&col=image&row=2"} {
		resp, _ := get(t, ts, path)
		require.Equal(t, 200, resp.StatusCode, path)
		require.Equal(t, immutable, resp.Header.Get("Cache-Control"), path)
		tag := resp.Header.Get("ETag")
		require.NotEmpty(t, tag)
		resp, body := get(t, ts, path, "If-None-Match", tag)
		require.Equal(t, http.StatusNotModified, resp.StatusCode, path)
		require.Empty(t, body)
	}
	// Another row, size or version is another tag.
	r1, _ := get(t, ts, "/t/pets/thumb?v="+v+"&col=image&row=2&size=64")
	r2, _ := get(t, ts, "/t/pets/thumb?v="+v+"&col=image&row=3&size=64")
	require.NotEqual(t, r1.Header.Get("ETag"), r2.Header.Get("ETag"))
	// Pages are never cached.
	resp, _ := get(t, ts, "/t/pets/")
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
}

func TestSecurityHeaders(t *testing.T) {
	ts, _, _ := localFixture(t)
	resp, _ := get(t, ts, "/t/pets/")
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'")
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
	resp, _ = get(t, ts, "/static/app.js")
	require.Equal(t, 200, resp.StatusCode)
}

func TestBadParameters(t *testing.T) {
	ts, _, v := localFixture(t)
	bad := "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		path string
		code int
		msg  string
	}{
		{"/t/pets/thumb?v=" + v + "&col=nope&row=0", 400, `unknown column "nope"`},
		{"/t/pets/thumb?v=" + v + "&col=image&row=31", 404, "row 31 out of range: the version has 31 rows"},
		{"/t/pets/thumb?v=" + v + "&col=image&row=-1", 404, "out of range"},
		{"/t/pets/thumb?v=" + v + "&col=image&row=x", 400, `row "x": want a row number`},
		{"/t/pets/thumb?v=" + v + "&col=caption&row=0", 400, "has no thumbnail"},
		{"/t/pets/thumb?v=" + v + "&col=image&row=0&size=100000", 400, "parameter size"},
		{"/t/pets/thumb?v=" + v + "&col=image&row=0&size=3", 400, "parameter size"},
		{"/t/pets/thumb?col=image&row=0", 400, "parameter v"},
		{"/t/pets/thumb?v=../../etc&col=image&row=0", 400, "want a version id"},
		{"/t/pets/thumb?v=" + bad + "&col=image&row=0", 404, bad},
		{"/t/pets/grid?v=" + v + "&limit=100000", 400, "parameter limit"},
		{"/t/pets/grid?v=" + v + "&start=99999", 404, "start 99999 out of range"},
		{"/t/pets/row/99?v=" + v, 404, "row 99 out of range"},
		{"/t/pets/?ref=nosuch", 404, "nosuch"},
		{"/t/pets/?ref=" + url.QueryEscape("../../../etc/passwd"), 404, ""},
		{"/t/..%2F..%2Fetc/", 404, "no table"},
		{"/t/other/", 404, `no table "other"`},
		{"/etc/passwd", 404, "no page /etc/passwd"},
		{"/t/pets/row/1%2F..%2F..?v=" + v, 400, "want a row number"},
		{"/static/..%2fserver.go", 404, ""},
		{"/static/%2e%2e/doc.go", 404, ""},
		{"/t/pets/grid?v=" + v + "&q=" + url.QueryEscape("SELECT * FROM read_csv('/etc/passwd')"), 400, "not allowed"},
		{"/t/pets/grid?v=" + v + "&q=" + url.QueryEscape("SELECT * FROM ds; COPY ds TO '/tmp/x'"), 400, "not allowed"},
		{"/t/pets/grid?v=" + v + "&q=" + url.QueryEscape("SELECT * FROM '/etc/passwd'"), 400, "not allowed"},
		{"/t/pets/grid?v=" + v + "&q=" + url.QueryEscape("SELECT getenv('AWS_SECRET_ACCESS_KEY')"), 400, "not allowed"},
		{"/t/pets/grid?v=" + v + "&q=" + url.QueryEscape("DELETE FROM ds"), 400, "SELECT queries only"},
		{"/t/pets/grid?v=" + v + "&q=" + url.QueryEscape("SELECT nope FROM ds"), 400, "query"},
		{"/t/pets/diff?from=nosuch", 404, "nosuch"},
		{"/t/pets/sample?v=" + v + "&col=emb&row=0", 400, "no file form"},
	} {
		resp, body := get(t, ts, tc.path)
		body = html.UnescapeString(body)
		require.Equal(t, tc.code, resp.StatusCode, "%s: %s", tc.path, body)
		require.Contains(t, body, tc.msg, tc.path)
		require.NotContains(t, body, "goroutine", tc.path)
		require.NotContains(t, body, "internal error", tc.path)
	}
	req, err := http.NewRequest(http.MethodDelete, ts.URL+"/t/pets/", nil)
	require.NoError(t, err)
	resp, err := ts.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func TestQueryAndSelections(t *testing.T) {
	ts, u, v := localFixture(t)
	q := "SELECT * FROM ds WHERE label = 'dog' ORDER BY _pos DESC"
	resp, page := get(t, ts, "/t/pets/?q="+url.QueryEscape(q))
	require.Equal(t, 200, resp.StatusCode, page)
	// Rows whose label is dog (i%3 == 1) among the 32 merged rows.
	d, err := loch.Open(ctx, u)
	require.NoError(t, err)
	defer d.Close()
	cr, err := d.Column("label")
	require.NoError(t, err)
	var want []string
	for i := d.Len() - 1; i >= 0; i-- {
		s, err := cr.Read(ctx, i, nil)
		require.NoError(t, err)
		if labels(&fixtureSchema().Columns[3], s)[0] == 1 {
			want = append(want, `data-pos="`+itoa(i)+`"`)
		}
	}
	require.Contains(t, page, itoa(int64(len(want)))+" of 31 rows")
	gridSrc := between(page, `data-src="`, `"`)
	_, grid := get(t, ts, html.UnescapeString(gridSrc))
	require.Equal(t, len(want), strings.Count(grid, `<article class="card"`), "%s: %s", gridSrc, grid)
	for i, w := range want { // in the query's order
		require.Contains(t, grid, w)
		if i > 0 {
			require.Less(t, strings.Index(grid, want[i-1]), strings.Index(grid, w))
		}
	}

	// Saving needs the page's form token.
	csrf := between(page, `name="csrf" value="`, `"`)
	require.NotEmpty(t, csrf)
	post := func(form url.Values) *http.Response {
		c := ts.Client()
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := c.PostForm(ts.URL+"/t/pets/selections", form)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	require.Equal(t, http.StatusForbidden, post(url.Values{"q": {q}, "v": {v}, "name": {"dogs"}}).StatusCode)
	require.Equal(t, http.StatusForbidden, post(url.Values{"q": {q}, "v": {v}, "name": {"dogs"}, "csrf": {"x"}}).StatusCode)
	resp = post(url.Values{"q": {q}, "v": {v}, "name": {"dogs"}, "csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/t/pets/?sel=dogs", resp.Header.Get("Location"))
	require.Equal(t, http.StatusConflict, post(url.Values{"q": {q}, "v": {v}, "name": {"dogs"}, "csrf": {csrf}}).StatusCode)
	require.Equal(t, http.StatusBadRequest, post(url.Values{"q": {q}, "v": {v}, "name": {"../x"}, "csrf": {csrf}}).StatusCode)
	sel, err := d.Selection(ctx, "dogs")
	require.NoError(t, err)
	require.Equal(t, len(want), sel.Len())
	_, page = get(t, ts, "/t/pets/?sel=dogs")
	require.Contains(t, page, itoa(int64(len(want)))+" of 31 rows")
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

func TestToken(t *testing.T) {
	url := filepath.Join(t.TempDir(), "pets")
	makeFixture(t, url)
	ts, _ := newTestServer(t, url, Options{Token: "s3cret-token"})
	resp, body := get(t, ts, "/t/pets/")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, body, "token")
	resp, _ = get(t, ts, "/t/pets/?token=wrong")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, _ = get(t, ts, "/t/pets/?token=s3cret-token")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/t/pets/", resp.Header.Get("Location"))
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == cookieName {
			cookie = c
		}
	}
	require.NotNil(t, cookie)
	require.True(t, cookie.HttpOnly)
	resp, page := get(t, ts, "/t/pets/", "Cookie", cookieName+"=s3cret-token")
	require.Equal(t, 200, resp.StatusCode)
	require.NotContains(t, page, "s3cret-token", "the token never reaches the page")
	resp, _ = get(t, ts, "/t/pets/", "Cookie", cookieName+"=s3cret-tokeX")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

func TestGuardAndHosts(t *testing.T) {
	tok, hosts := Guard(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7474})
	require.Empty(t, tok)
	require.Contains(t, hosts, "127.0.0.1:7474")
	require.Contains(t, hosts, "localhost:7474")
	tok, hosts = Guard(&net.TCPAddr{IP: net.IPv4zero, Port: 7474})
	require.Len(t, tok, 64)
	require.Nil(t, hosts)
	tok2, _ := Guard(&net.TCPAddr{IP: net.IPv4zero, Port: 7474})
	require.NotEqual(t, tok, tok2)

	url := filepath.Join(t.TempDir(), "pets")
	makeFixture(t, url)
	ts, _ := newTestServer(t, url, Options{Hosts: []string{"127.0.0.1:1"}})
	resp, body := get(t, ts, "/t/pets/")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a rebound name is refused")
	require.Contains(t, body, "is not served here")
}

func TestCatalog(t *testing.T) {
	root, d, closeAll := petsTable(t)
	for i := range 10 {
		require.NoError(t, d.Append(ctx, fixRow(t, i)))
	}
	_, err := d.Commit(ctx, "ten rows")
	require.NoError(t, err)
	closeAll()

	ts, _ := newTestServer(t, root, Options{})
	resp, page := get(t, ts, "/")
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, page, `<a href="/t/pets/">pets</a>`)
	require.Contains(t, page, "ten rows")
	require.Contains(t, page, `<td class="num">10</td>`)
	resp, page = get(t, ts, "/t/pets/?q="+url.QueryEscape("SELECT * FROM pets WHERE _pos < 4"))
	require.Equal(t, 200, resp.StatusCode, page)
	require.Contains(t, page, "4 of 10 rows")
	resp, _ = get(t, ts, "/t/Pets%2F..%2F../")
	require.Equal(t, 404, resp.StatusCode)
}

// TestCatalogPageHistoryUnreadable: a table whose history cannot be read
// (an older commit object missing) is shown on the catalog page with the
// error, as a table that cannot be opened is; before, the error was
// dropped and the row showed no last commit and the time 0001-01-01.
func TestCatalogPageHistoryUnreadable(t *testing.T) {
	root, d, closeAll := petsTable(t)
	require.NoError(t, d.Append(ctx, fixRow(t, 0)))
	first, err := d.Commit(ctx, "one row")
	require.NoError(t, err)
	require.NoError(t, d.Append(ctx, fixRow(t, 1)))
	_, err = d.Commit(ctx, "two rows")
	require.NoError(t, err)
	dir := d.URL()
	closeAll()
	require.NoError(t, os.Remove(filepath.Join(strings.TrimPrefix(dir, "file://"), keys.Make(keys.Commit, first))))

	ts, _ := newTestServer(t, root, Options{})
	resp, page := get(t, ts, "/")
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, page, `class="error"`)
	require.Contains(t, page, first)
	require.NotContains(t, page, "0001-01-01")
}

// TestCloud serves the fixture from each object store: MinIO (s3://),
// fake-gcs-server (gs://) and Azurite (az://).
func TestCloud(t *testing.T) {
	for name, bucket := range map[string]func(testing.TB) testserver.Bucket{
		"s3": testserver.MinIO, "gs": testserver.GCS, "az": testserver.Azurite,
	} {
		t.Run(name, func(t *testing.T) { cloudFixture(t, bucket(t)) })
	}
}

func cloudFixture(t *testing.T, b testserver.Bucket) {
	makeFixture(t, b.URL)
	ts, _ := newTestServer(t, b.URL, Options{})
	resp, page := get(t, ts, "/")
	require.Equal(t, http.StatusFound, resp.StatusCode)
	resp, page = get(t, ts, resp.Header.Get("Location"))
	require.Equal(t, 200, resp.StatusCode, page)
	require.NotContains(t, page, testserver.MinIOSecretKey)
	table := between(page, `<a href="/t/`, `/"`)
	_, page = get(t, ts, "/t/"+table+"/?ref=v1")
	v := between(page, `<code id="version">`, "<")
	require.Len(t, v, 32)
	_, grid := get(t, ts, "/t/"+table+"/grid?v="+v+"&limit=5")
	require.Equal(t, 5, strings.Count(grid, `<article class="card"`))
	resp, body := get(t, ts, "/t/"+table+"/thumb?v="+v+"&col=image&row=5&size=32&overlay=0")
	require.Equal(t, 200, resp.StatusCode, body)
	require.Equal(t, immutable, resp.Header.Get("Cache-Control"))
	got, _ := decodePNG(t, body)
	want := make([]byte, 24*32*3)
	require.NoError(t, imaging.Resize(want, fixImage(5), fixH, fixW, 24, 32, 3, imaging.Bilinear))
	require.Equal(t, want, got)
	resp, diff := get(t, ts, "/t/"+table+"/diff?from=v1&to=dev")
	require.Equal(t, 200, resp.StatusCode, diff)
	require.Equal(t, 3, strings.Count(diff, `<section class="change`))
}
