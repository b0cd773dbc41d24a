package query

import (
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// imageSchema is an image dataset with metadata: the images take almost
// all the bytes.
var imageSchema = schema.Schema{Columns: []schema.Column{
	{Name: "image", Kind: schema.Image, ChunkBytes: 64 << 10},
	{Name: "label", Kind: schema.ClassLabel, Shape: schema.Shape{}, ClassNames: []string{"cat", "dog", "fox"}},
	{Name: "meta", Kind: schema.JSONKind},
}}

// makeImages commits n rows of imageSchema through st.
func makeImages(t *testing.T, url string, st storage.Store, n int) *loch.Dataset {
	t.Helper()
	d, err := loch.Create(ctx, url, imageSchema, loch.WithStore(st))
	require.NoError(t, err)
	rows := make([]loch.Row, n)
	for i := range rows {
		pix := make([]uint8, 32*32*3)
		for k := range pix {
			pix[k] = uint8(i + k)
		}
		js, err := loch.JSON(map[string]any{"quality": []string{"low", "high"}[i%2], "i": i})
		require.NoError(t, err)
		rows[i] = loch.Row{"image": loch.Tensor([]int{32, 32, 3}, pix), "label": loch.Scalar(int64(i % 3)), "meta": js}
	}
	require.NoError(t, d.Extend(ctx, rows))
	_, err = d.Commit(ctx, "images")
	require.NoError(t, err)
	return d
}

// TestProjectionPushdown: a query reads only the columns it references.
// A filter over the label and json columns of an image dataset reads no
// byte of any image chunk, on every backend; asking for the images'
// shapes reads their chunk headers only; a query that needs no column
// reads no chunk.
func TestProjectionPushdown(t *testing.T) {
	backends := map[string]func(t *testing.T) string{
		"local": func(t *testing.T) string { return t.TempDir() + "/ds" },
		"mem":   func(t *testing.T) string { return "mem://pushdown-" + strings.ReplaceAll(t.Name(), "/", "-") },
		"s3":    func(t *testing.T) string { return testserver.MinIO(t).URL },
		"gcs":   func(t *testing.T) string { return testserver.GCS(t).URL },
		"azure": func(t *testing.T) string { return testserver.Azurite(t).URL },
	}
	for _, name := range []string{"local", "mem", "s3", "gcs", "azure"} {
		t.Run(name, func(t *testing.T) {
			url := backends[name](t)
			st, err := storage.Open(ctx, url)
			require.NoError(t, err)
			defer st.Close()
			cs := newCounting(st)
			d := makeImages(t, url, cs, 300)
			defer d.Close()
			imageChunks, metaChunks := map[string]bool{}, map[string]bool{}
			sc := d.Scan()
			require.NoError(t, sc.Load(ctx, 4))
			sch := sc.Schema()
			for _, c := range sch.Columns {
				for _, id := range sc.Chunks(c.UID) {
					if c.Name == "image" {
						imageChunks[sc.ChunkKey(id)] = true
					} else {
						metaChunks[sc.ChunkKey(id)] = true
					}
				}
			}
			require.Greater(t, len(imageChunks), 5)
			var metaStored int64
			for _, c := range sc.Columns() {
				if c.Name != "image" {
					metaStored += c.StoredBytes
				}
			}

			e, err := New(ctx, d, Options{})
			require.NoError(t, err)
			defer e.Close()
			cs.readOf(func(string) bool { return true })

			sel, err := e.Select(ctx, "SELECT image, label FROM ds WHERE meta->>'quality' = 'high' AND label IN ('cat', 'dog') ORDER BY random()")
			require.NoError(t, err)
			require.Len(t, sel.RowIDs, 100)
			require.Equal(t, []string{"image", "label"}, sel.Columns)
			require.Zero(t, cs.readOf(func(k string) bool { return imageChunks[k] }), "image bytes read by a metadata filter")

			n, err := e.Write(ctx, "SELECT label, count(*) FROM ds WHERE meta->>'quality' = 'low' GROUP BY label", FormatCSV, 0, io.Discard)
			require.NoError(t, err)
			require.EqualValues(t, 3, n)
			got := cs.readOf(isChunk)
			require.LessOrEqual(t, got, metaStored, "a metadata query reads at most the metadata's stored bytes")
			require.Greater(t, got, int64(0))

			_, err = e.Write(ctx, "SELECT image.shape, image.bytes FROM ds LIMIT 3", FormatCSV, 0, io.Discard)
			require.NoError(t, err)
			headers := cs.readOf(func(k string) bool { return imageChunks[k] })
			require.Greater(t, headers, int64(0))
			require.Less(t, headers, int64(len(imageChunks))*4096, "shapes come from chunk headers, not pixels")

			_, err = e.Write(ctx, "SELECT count(*) FROM ds", FormatCSV, 0, io.Discard)
			require.NoError(t, err)
			require.Zero(t, cs.readOf(isChunk), "count(*) reads no chunk")
		})
	}
}

// TestChunkCache: with a chunk cache, a second engine's query reads the
// chunks from it, none from the store.
func TestChunkCache(t *testing.T) {
	url := t.TempDir() + "/ds"
	st, err := storage.Open(ctx, url)
	require.NoError(t, err)
	defer st.Close()
	cs := newCounting(st)
	d := makeImages(t, url, cs, 200)
	defer d.Close()
	cache, err := chunkcache.Open(t.TempDir(), 1<<30, nil)
	require.NoError(t, err)
	defer cache.Close()
	q := "SELECT label, count(*) FROM ds WHERE (meta->>'quality') = 'high' GROUP BY label ORDER BY label"
	var first string
	for run := range 2 {
		cs.readOf(func(string) bool { return true })
		e, err := New(ctx, d, Options{Cache: cache})
		require.NoError(t, err)
		var out strings.Builder
		_, err = e.Write(ctx, q, FormatCSV, 0, &out)
		require.NoError(t, err)
		e.Close()
		read := cs.readOf(isChunk)
		if run == 0 {
			require.Positive(t, read)
			first = out.String()
			continue
		}
		require.Zero(t, read, "the second query reads its chunks from the cache")
		require.Equal(t, first, out.String())
	}
}

// TestPushdownLongInList: an IN list longer than a filter argument takes
// is left to DuckDB (it used to fail the query at bind: "5001 predicates
// and constants, at most 4096"); a shorter one is still pushed.
func TestPushdownLongInList(t *testing.T) {
	d, _ := vectorDataset(t)
	e, err := New(ctx, d, Options{})
	require.NoError(t, err)
	defer e.Close()
	count := func(n int) (int64, int64) {
		lits := make([]string, n)
		for i := range lits {
			lits[i] = strconv.Itoa(i + 3)
		}
		before := e.emitted.Load()
		rows, done, err := e.Rows(ctx, "SELECT count(*) FROM ds WHERE label IN ("+strings.Join(lits, ",")+")")
		require.NoError(t, err)
		defer done()
		require.True(t, rows.Next())
		var got int64
		require.NoError(t, rows.Scan(&got))
		require.NoError(t, rows.Err())
		return got, e.emitted.Load() - before
	}
	got, emitted := count(5000)
	require.EqualValues(t, 75, got) // label 3: every fourth row
	require.EqualValues(t, 300, emitted)
	got, emitted = count(4000)
	require.EqualValues(t, 75, got)
	require.EqualValues(t, 75, emitted)
}
