package ingest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/storage"
)

// testImage returns a deterministic w x h image with the given channels
// (1 gray, 3 opaque RGB, 4 RGBA with varying alpha).
func testImage(seed uint64, w, h, channels int) image.Image {
	rng := rand.New(rand.NewPCG(seed, 7))
	r := image.Rect(0, 0, w, h)
	switch channels {
	case 1:
		g := image.NewGray(r)
		for i := range g.Pix {
			g.Pix[i] = byte(rng.IntN(256))
		}
		return g
	case 4:
		n := image.NewNRGBA(r)
		for i := range n.Pix {
			n.Pix[i] = byte(rng.IntN(256))
		}
		return n
	}
	n := image.NewNRGBA(r)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			n.Set(x, y, color.NRGBA{byte(rng.IntN(256)), byte(x * 8), byte(y * 8), 255})
		}
	}
	return n
}

func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

func encodeJPEG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85}))
	return buf.Bytes()
}

// writeFile writes data at path, making its directory.
func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

// decoded returns the pixels and shape imaging decodes data to.
func decoded(t testing.TB, data []byte) ([]byte, []int) {
	t.Helper()
	pix, shape, err := imaging.Decode(data)
	require.NoError(t, err)
	return pix, shape
}

var memSeq atomic.Int64

// memURL returns a fresh mem:// dataset URL.
func memURL(t testing.TB) string {
	name := strings.NewReplacer("/", "-", "#", "-", " ", "-").Replace(t.Name())
	return fmt.Sprintf("mem://ingest-test/%s-%d", name, memSeq.Add(1))
}

// openDataset opens the dataset at url, closed at the end of the test.
func openDataset(t testing.TB, url string) *loch.Dataset {
	t.Helper()
	d, err := loch.Open(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

// column reads every sample of a column, decoded (encoded=false) or as
// stored.
func column(t testing.TB, d *loch.Dataset, name string, encoded bool) []loch.Sample {
	t.Helper()
	ctx := context.Background()
	c, err := d.Column(name)
	require.NoError(t, err)
	out := make([]loch.Sample, d.Len())
	for i := range out {
		if encoded {
			out[i], err = c.ReadEncoded(ctx, int64(i))
		} else {
			out[i], err = c.Read(ctx, int64(i), nil)
		}
		require.NoError(t, err, "column %s row %d", name, i)
	}
	return out
}

// int64s views samples holding int64 scalars or vectors as values.
func int64s(t testing.TB, s loch.Sample) []int64 {
	t.Helper()
	v, err := loch.As[int64](s.Data)
	require.NoError(t, err)
	return v
}

// contents returns every row of the dataset, every column, as stored, for
// comparing datasets.
func contents(t testing.TB, d *loch.Dataset) map[string][]loch.Sample {
	t.Helper()
	out := map[string][]loch.Sample{}
	for _, name := range func() []string { s := d.Schema(); return s.Names() }() {
		out[name] = column(t, d, name, true)
	}
	return out
}

// recorder is a Progress that records what it is told.
type recorder struct {
	totalRows, totalBytes int64
	rows, bytes           int64
	totals, adds          int
}

func (r *recorder) Total(rows, bytes int64) { r.totalRows, r.totalBytes = rows, bytes; r.totals++ }
func (r *recorder) Add(rows, bytes int64)   { r.rows += rows; r.bytes += bytes; r.adds++ }

// openStore opens the store at url, closed at the end of the test.
func openStore(t testing.TB, url string) storage.Store {
	t.Helper()
	st, err := storage.Open(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

func readTestFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}
