package viewer

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/schema"
)

// benchRows is the size of the benchmark's image dataset on MinIO
// (LOCH_VIEWER_BENCH_ROWS overrides it).
func benchRows(b *testing.B) int {
	if v := os.Getenv("LOCH_VIEWER_BENCH_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err)
		return n
	}
	return 100_000
}

// makeBenchDataset writes n 64×64 png images with one box and a label each.
func makeBenchDataset(b *testing.B, url string, n int) {
	s := schema.Schema{Columns: []schema.Column{
		{Name: "image", Kind: schema.Image, DType: schema.Uint8, Shape: schema.Shape{64, 64, 3}, SampleCompression: schema.PNG},
		{Name: "boxes", Kind: schema.BBox, DType: schema.Float32, Shape: schema.Shape{-1, 4}},
		{Name: "label", Kind: schema.ClassLabel, DType: schema.Int32, Shape: schema.Shape{}, ClassNames: classes},
	}}
	d, err := loch.Create(ctx, url, s)
	require.NoError(b, err)
	defer d.Close()
	pix := make([]byte, 64*64*3)
	for lo := 0; lo < n; lo += 10_000 {
		var rows []loch.Row
		for i := lo; i < min(n, lo+10_000); i++ {
			for k := range pix {
				pix[k] = byte(i + k/3)
			}
			rows = append(rows, loch.Row{
				"image": loch.Tensor([]int{64, 64, 3}, append([]byte(nil), pix...)),
				"boxes": loch.Tensor([]int{1, 4}, []float32{4, 4, 40, 40}),
				"label": loch.Scalar(int32(i % 3)),
			})
		}
		require.NoError(b, d.Extend(ctx, rows))
	}
	_, err = d.Commit(ctx, "bench images")
	require.NoError(b, err)
}

var thumbRE = regexp.MustCompile(`src="(/t/[^"]+/thumb\?[^"]+)"`)

// BenchmarkViewer measures, on MinIO, the dataset page and its first grid
// page on a fresh server (first paint, server side), a page of 100
// thumbnails cold and warm, and the heap while a client pages through the
// whole grid; the baseline is the library reading the same 100 images
// (ColumnReader.Read) in the same run.
func BenchmarkViewer(b *testing.B) {
	n := benchRows(b)
	bucket := testserver.MinIO(b)
	start := time.Now()
	makeBenchDataset(b, bucket.URL, n)
	b.Logf("wrote %d images in %s", n, time.Since(start).Round(time.Millisecond))

	fetch := func(ts *httptest.Server, path string) string {
		resp, err := http.Get(ts.URL + path)
		require.NoError(b, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(b, err)
		require.Equal(b, 200, resp.StatusCode, "%s: %s", path, body)
		return string(body)
	}
	for b.Loop() {
		s, err := New(ctx, bucket.URL, Options{})
		require.NoError(b, err)
		ts := httptest.NewServer(s)
		t0 := time.Now()
		resp, err := http.Get(ts.URL + "/")
		require.NoError(b, err)
		resp.Body.Close()
		page := fetch(ts, "/t/"+s.src.single+"/")
		v := between(page, `<code id="version">`, "<")
		grid := fetch(ts, "/t/"+s.src.single+"/grid?v="+v+"&limit=100")
		first := time.Since(t0)

		thumbs := thumbRE.FindAllStringSubmatch(grid, -1)
		require.Len(b, thumbs, 100)
		getAll := func() time.Duration {
			t := time.Now()
			var wg sync.WaitGroup
			sem := make(chan struct{}, 6) // a browser's connections per host
			for _, m := range thumbs {
				wg.Add(1)
				sem <- struct{}{}
				go func(p string) {
					defer wg.Done()
					defer func() { <-sem }()
					fetch(ts, html.UnescapeString(p))
				}(m[1])
			}
			wg.Wait()
			return time.Since(t)
		}
		cold, warm := getAll(), getAll()

		d, err := loch.Open(ctx, bucket.URL)
		require.NoError(b, err)
		cr, err := d.Column("image")
		require.NoError(b, err)
		t1 := time.Now()
		for i := int64(0); i < 100; i++ {
			_, err := cr.Read(ctx, i, nil)
			require.NoError(b, err)
		}
		raw := time.Since(t1)
		d.Close()

		// Page through the whole grid (the cards, not the thumbnails).
		var ms runtime.MemStats
		heap := func() uint64 { runtime.GC(); runtime.ReadMemStats(&ms); return ms.HeapInuse >> 20 }
		h0 := heap()
		hmax := h0
		t2 := time.Now()
		for lo := 0; lo < n; lo += MaxPage {
			fetch(ts, fmt.Sprintf("/t/%s/grid?v=%s&start=%d&limit=%d", s.src.single, v, lo, MaxPage))
			if (lo/MaxPage)%50 == 0 {
				hmax = max(hmax, heap())
			}
		}
		all := time.Since(t2)
		b.ReportMetric(float64(first.Milliseconds()), "first-paint-ms")
		b.ReportMetric(float64(cold.Milliseconds()), "thumbs100-cold-ms")
		b.ReportMetric(float64(warm.Milliseconds()), "thumbs100-warm-ms")
		b.ReportMetric(float64(raw.Milliseconds()), "baseline-read100-ms")
		b.Logf("rows %d: first paint %s; 100 thumbnails cold %s, warm %s; baseline ColumnReader.Read of 100 images %s; whole grid (%d pages) %s, heap %d MiB at start, at most %d MiB",
			n, first.Round(time.Millisecond), cold.Round(time.Millisecond), warm.Round(time.Millisecond), raw.Round(time.Millisecond),
			(n+MaxPage-1)/MaxPage, all.Round(time.Millisecond), h0, hmax)
		ts.Close()
		s.Close()
	}
}
