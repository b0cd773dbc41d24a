package viewer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/testserver"
)

// browserRows is the size of the dataset the browser scrolls through:
// several grid pages.
const browserRows = 150

// patient is the polls' timeout: chromedp's default (30 s) is too short for
// a page of thumbnails from an object store on a loaded machine.
var patient = chromedp.WithPollingTimeout(2 * time.Minute)

// chromium finds Debian's headless-capable Chromium; `make sysdeps`
// installs it. A missing browser fails the test.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on PATH: run 'make sysdeps' (it installs Debian's chromium)")
	return ""
}

// artifacts is where the browser test saves its screenshots:
// $LOCH_ARTIFACTS/viewer when set, else a directory under the system's
// temporary directory that outlives the test.
func artifacts(t *testing.T) string {
	dir := os.Getenv("LOCH_ARTIFACTS")
	if dir == "" {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "loch-viewer")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// TestBrowser drives Debian's chromium through the viewer over a dataset
// on local disk and on MinIO.
func TestBrowser(t *testing.T) {
	exe := chromium(t)
	t.Run("local", func(t *testing.T) { browse(t, exe, filepath.Join(t.TempDir(), "pets"), "") })
	t.Run("s3", func(t *testing.T) { browse(t, exe, testserver.MinIO(t).URL, "s3-") })
}

// browse checks the viewer of a fixture made at u in a real browser;
// screenshots are saved under artifacts with prefix before their names.
func browse(t *testing.T, exe, u, prefix string) {
	makeFixture(t, u)
	d, err := loch.Open(ctx, u)
	require.NoError(t, err)
	var rows []loch.Row
	for i := d.Len(); i < browserRows; i++ {
		rows = append(rows, fixRow(t, int(i)))
	}
	require.NoError(t, d.Extend(ctx, rows))
	_, err = d.Commit(ctx, "more rows to scroll")
	require.NoError(t, err)
	require.NoError(t, d.Close())

	s, err := New(ctx, u, Options{Log: testLog{t}})
	require.NoError(t, err)
	defer s.Close()
	// flaky answers flakyCode (503 unless set) to the next grid pages it
	// is told to, as a proxy or an overloaded server would: the page must
	// try a 503 again, and offer to try again after a 400.
	var flaky, flakyCode atomic.Int32
	ts := httptest.NewServer(nil)
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/grid") && r.URL.Query().Get("start") != "" && flaky.Add(-1) >= 0 {
			code := int(flakyCode.Load())
			if code == 0 {
				code = http.StatusServiceUnavailable
			}
			http.Error(w, "injected: "+http.StatusText(code), code)
			return
		}
		s.ServeHTTP(w, r)
	})
	defer ts.Close()
	_, hosts := Guard(ts.Listener.Addr())
	s.opts.Hosts = hosts // as loch serve runs it
	// The dataset's table name is its URL's last element ("/" redirects
	// to it).
	resp, _ := get(t, ts, "/")
	require.Equal(t, http.StatusFound, resp.StatusCode)
	base := resp.Header.Get("Location")
	require.True(t, strings.HasPrefix(base, "/t/") && strings.HasSuffix(base, "/"), base)

	actx, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.WindowSize(1200, 900),
		chromedp.Flag("disable-dev-shm-usage", true))
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	bctx, cancel = context.WithTimeout(bctx, 3*time.Minute)
	defer cancel()
	dir := artifacts(t)
	shot := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var b []byte
			if err := chromedp.FullScreenshot(&b, 100).Do(ctx); err != nil {
				return err
			}
			p := filepath.Join(dir, prefix+name)
			t.Logf("screenshot %s", p)
			return os.WriteFile(p, b, 0o644)
		})
	}
	cards := func(n *int) chromedp.Action {
		return chromedp.Evaluate(`document.querySelectorAll("#grid article.card").length`, n)
	}

	// Tag v1 (fixRows rows, one page): cards whose thumbnails are the
	// images, with the row's box drawn in its class's colour.
	var n int
	var polled bool
	require.NoError(t, chromedp.Run(bctx,
		chromedp.Navigate(ts.URL+base+"?ref=v1"),
		chromedp.Poll(`document.getElementById("more").classList.contains("done")`, &polled, patient),
		chromedp.Poll(`Array.from(document.querySelectorAll('#grid article.card[data-pos="1"] img.thumb')).every(i => i.complete && i.naturalWidth > 0)`, &polled, patient),
		cards(&n),
	))
	require.Equal(t, fixRows, n)
	var img struct {
		W, H int
		Edge []int
		In   []int
	}
	box := fixBox(1)
	x0, y0, y1 := int(box[0]), int(box[1]), int(box[1]+box[3])
	// The grid shows the 64×48 pictures enlarged k times (they are tiny
	// for its 192-pixel thumbnails), the box drawn at that size.
	const k = defaultThumb / fixW
	js := fmt.Sprintf(`(() => {
		const img = document.querySelector('#grid article.card[data-pos="1"] .kind-image img');
		const c = document.createElement("canvas");
		c.width = img.naturalWidth; c.height = img.naturalHeight;
		const g = c.getContext("2d");
		g.drawImage(img, 0, 0);
		const px = (x, y) => Array.from(g.getImageData(x, y, 1, 1).data.slice(0, 3));
		return {W: img.naturalWidth, H: img.naturalHeight, Edge: px(%d, %d), In: px(%d, %d)};
	})()`, k*x0, k*(y0+y1)/2, k*(x0+10), k*(y1-3))
	require.NoError(t, chromedp.Run(bctx, chromedp.Evaluate(js, &img), shot("grid.png")))
	require.Equal(t, k*fixW, img.W)
	require.Equal(t, k*fixH, img.H)
	dog := classColor(1)
	require.Equal(t, []int{int(dog.R), int(dog.G), int(dog.B)}, img.Edge, "the box's left edge, in the dog colour")
	orig := fixImage(1)
	p := 3 * ((y1-3)*fixW + x0 + 10)
	require.Equal(t, []int{int(orig[p]), int(orig[p+1]), int(orig[p+2])}, img.In, "inside the box the image is as stored")

	// Scrolling loads the next pages until every row is there, the page
	// trying again the two pages that fail.
	_, page := get(t, ts, base)
	// It scrolls every 5 ms, often between a page's arrival and the next
	// frame, where an intersection observer alone misses the marker.
	flaky.Store(2)
	total := browserRows
	require.Contains(t, page, fmt.Sprintf("%d rows", total))
	err = chromedp.Run(bctx,
		chromedp.Navigate(ts.URL+base),
		chromedp.Poll(`document.querySelectorAll("#grid article.card").length > 0`, &polled, patient),
		chromedp.Poll(fmt.Sprintf(`(window.scrollTo(0, document.body.scrollHeight), document.querySelectorAll("#grid article.card").length >= %d || document.getElementById("more").classList.contains("error"))`, total), &polled, chromedp.WithPollingInterval(5*time.Millisecond), patient),
		chromedp.Poll(`document.getElementById("more").classList.contains("done") || document.getElementById("more").classList.contains("error")`, &polled, patient),
		cards(&n),
	)
	var failed bool
	if err == nil {
		err = chromedp.Run(bctx, chromedp.Evaluate(`document.getElementById("more").classList.contains("error")`, &failed))
	}
	if err != nil || failed {
		stuck(t, bctx, err)
	}
	require.Equal(t, total, n, "every row once")
	require.Less(t, flaky.Load(), int32(0), "the injected failures were met")

	// An error that trying again will not mend stops the grid with its
	// message and a button; the button tries again.
	flakyCode.Store(http.StatusBadRequest)
	flaky.Store(1)
	var shownErr string
	require.NoError(t, chromedp.Run(bctx,
		network.SetCacheDisabled(true), // the grid pages are cached: ask the server again
		chromedp.Navigate(ts.URL+base),
		chromedp.Poll(`(window.scrollTo(0, document.body.scrollHeight), document.getElementById("more").classList.contains("error"))`, &polled, chromedp.WithPollingInterval(5*time.Millisecond), patient),
		chromedp.Text("#more", &shownErr, chromedp.ByID),
		chromedp.Click("#more button", chromedp.ByQuery),
		chromedp.Poll(fmt.Sprintf(`(window.scrollTo(0, document.body.scrollHeight), document.querySelectorAll("#grid article.card").length >= %d && document.getElementById("more").classList.contains("done"))`, total), &polled, chromedp.WithPollingInterval(5*time.Millisecond), patient),
		cards(&n),
	))
	require.Contains(t, shownErr, "injected: Bad Request")
	require.Equal(t, total, n, "every row once after trying again")
	flaky.Store(0)
	flakyCode.Store(0)

	// A query typed in the box narrows the grid to its rows.
	q := "SELECT * FROM ds WHERE label = 'bird' AND _pos < 40"
	want := 0
	hd, err := loch.Open(ctx, u)
	require.NoError(t, err)
	cr, err := hd.Column("label")
	require.NoError(t, err)
	for i := int64(0); i < 40; i++ {
		smp, err := cr.Read(ctx, i, nil)
		require.NoError(t, err)
		if labels(&fixtureSchema().Columns[3], smp)[0] == 2 {
			want++
		}
	}
	require.NoError(t, hd.Close())
	var shown string
	var poss []int
	require.NoError(t, chromedp.Run(bctx,
		chromedp.SetValue("#q", q, chromedp.ByID),
		chromedp.Click("#run", chromedp.ByID),
	))
	// The click navigates: wait for the new page's grid to finish.
	for i := 0; ; i++ {
		var ok bool
		err := chromedp.Run(bctx, chromedp.Evaluate(`location.search.includes("q=") && document.getElementById("more") !== null && document.getElementById("more").classList.contains("done")`, &ok))
		if err == nil && ok {
			break
		}
		require.Less(t, i, 240, "the query's grid did not load: %v", err)
		time.Sleep(250 * time.Millisecond)
	}
	require.NoError(t, chromedp.Run(bctx,
		chromedp.Text("#shown", &shown, chromedp.ByID),
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#grid article.card")).map(e => +e.dataset.pos)`, &poss),
		shot("query.png"),
	))
	var labelsSeen []string
	require.NoError(t, chromedp.Run(bctx, chromedp.Evaluate(`Array.from(document.querySelectorAll('#grid .cell[data-col="label"] .val')).map(e => e.textContent)`, &labelsSeen)))
	require.Len(t, poss, want)
	for _, l := range labelsSeen {
		require.Equal(t, "bird", l)
	}
	for _, p := range poss {
		require.Less(t, p, 40)
	}
	require.Contains(t, shown, fmt.Sprintf("%d of %d rows", len(poss), total))
	// The page's URL is the query's: it can be shared.
	var loc string
	require.NoError(t, chromedp.Run(bctx, chromedp.Location(&loc)))
	pu, err := url.Parse(loc)
	require.NoError(t, err)
	require.Equal(t, q, pu.Query().Get("q"))

	// The diff page lists the changed rows, the changed cell highlighted.
	var changes, highlighted, sideBySide int
	require.NoError(t, chromedp.Run(bctx,
		chromedp.Navigate(ts.URL+base+"diff?from=v1&to=dev"),
		chromedp.Poll(`document.querySelectorAll("#changes section.change").length > 0`, &polled, patient),
		chromedp.Poll(`Array.from(document.images).every(i => i.complete)`, &polled, patient),
		chromedp.Evaluate(`document.querySelectorAll("#changes section.modified .kind-image img").length == 2 ? Array.from(document.querySelectorAll("#changes section.modified .kind-image img")).filter(i => i.naturalWidth > 0).length : -1`, &sideBySide),
		chromedp.Evaluate(`document.querySelectorAll("#changes section.change").length`, &changes),
		chromedp.Evaluate(`document.querySelectorAll("#changes section.modified .cell.changed").length`, &highlighted),
		shot("diff.png"),
	))
	require.Equal(t, 3, changes)
	require.Equal(t, 2, highlighted)
	require.Equal(t, 2, sideBySide, "the modified row's images, before and after, both shown")

	// The commit graph shows the merge.
	var merges int
	require.NoError(t, chromedp.Run(bctx,
		chromedp.Navigate(ts.URL+base+"log"),
		chromedp.Evaluate(`document.querySelectorAll("#commits li.merge").length`, &merges),
		shot("log.png"),
	))
	require.Equal(t, 1, merges)
}

// testLog writes the server's log to the test's.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// stuck fails a browser test whose poll gave up (err) or whose grid shows
// an error (err nil), with what the page shows
// and what the server's handlers are doing.
func stuck(t *testing.T, bctx context.Context, err error) {
	if err == nil {
		err = errors.New("the grid shows an error")
	}
	var state string
	ectx, cancel := context.WithTimeout(bctx, 10*time.Second)
	defer cancel()
	if e := chromedp.Run(ectx, chromedp.Evaluate(`JSON.stringify({more: document.getElementById("more").textContent, cls: document.getElementById("more").className, cards: document.querySelectorAll("#grid article.card").length, scrollY: window.scrollY, height: document.body.scrollHeight, inner: window.innerHeight, moreTop: document.getElementById("more").getBoundingClientRect().top})`, &state)); e != nil {
		state = "(page state unavailable: " + e.Error() + ")"
	}
	var b strings.Builder
	pprof.Lookup("goroutine").WriteTo(&b, 1)
	var viewer []string
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "loch/viewer.(*Server)") {
			viewer = append(viewer, g)
		}
	}
	t.Fatalf("%v\npage: %s\nserver goroutines in handlers:\n%s", err, state, strings.Join(viewer, "\n\n"))
}
