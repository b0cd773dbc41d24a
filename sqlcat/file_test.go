package sqlcat

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// testImage encodes a w x h RGB image in format (png or jpeg).
func testImage(t *testing.T, format string, w, h int, seed byte) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{byte(x) + seed, byte(y) * seed, seed, 255})
		}
	}
	var b bytes.Buffer
	if format == "png" {
		require.NoError(t, png.Encode(&b, img))
	} else {
		require.NoError(t, jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}))
	}
	return b.Bytes()
}

// TestInsertImagesFromParquet: a Parquet file of captions and image paths
// (written by DuckDB's COPY) becomes an image table in one INSERT through
// loch_file; the stored images are the files' bytes.
func TestInsertImagesFromParquet(t *testing.T) {
	dir := t.TempDir()
	s := newSession(t, filepath.Join(dir, "lake"))
	s.FileBase = dir
	var files [][]byte
	var values []string
	for i := range 5 {
		format := "png"
		if i%2 == 1 {
			format = "jpeg"
		}
		b := testImage(t, format, 8+i, 6, byte(i+1))
		name := fmt.Sprintf("img%d.%s", i, format)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
		files = append(files, b)
		values = append(values, fmt.Sprintf("(%d, 'caption %d', '%s')", i, i, name))
	}
	pq := filepath.Join(dir, "captions.parquet")
	run(t, s, fmt.Sprintf("COPY (SELECT * FROM (VALUES %s) v(id, caption, path)) TO '%s' (FORMAT parquet)", join(values), pq))

	run(t, s, "CREATE TABLE pngs (id BIGINT, caption TEXT, image IMAGE('png'))")
	run(t, s, "CREATE TABLE jpegs (id BIGINT, caption TEXT, image IMAGE('jpeg'))")
	r := run(t, s, fmt.Sprintf("INSERT INTO pngs SELECT id, caption, loch_file(path) FROM read_parquet('%s') WHERE path LIKE '%%.png'", pq))
	require.EqualValues(t, 3, r.Rows)
	r = run(t, s, fmt.Sprintf("INSERT INTO jpegs (caption, image, id) SELECT caption, loch_file(path), id FROM read_parquet('%s') WHERE path LIKE '%%.jpeg'", pq))
	require.EqualValues(t, 2, r.Rows)

	for _, table := range []string{"pngs", "jpegs"} {
		d, err := s.cat.OpenTable(ctx, table)
		require.NoError(t, err)
		col := d.Schema().Columns[2]
		require.Equal(t, schema.Image, col.Kind)
		idc, err := d.Column("id")
		require.NoError(t, err)
		ids, err := idc.ReadRange(ctx, 0, d.Len())
		require.NoError(t, err)
		imc, err := d.Column("image")
		require.NoError(t, err)
		imgs, err := imc.ReadEncodedRange(ctx, 0, d.Len())
		require.NoError(t, err)
		require.Len(t, imgs, len(ids))
		for k := range ids {
			i := int(int64(binary.LittleEndian.Uint64(ids[k].Data)))
			require.Equal(t, files[i], imgs[k].Data, "%s row %d: the stored image is the file's bytes", table, k)
		}
		d.Close()
	}
	// an image in the other format is decoded and re-encoded: same pixels
	run(t, s, fmt.Sprintf("INSERT INTO pngs SELECT id, caption, loch_file(path) FROM read_parquet('%s') WHERE id = 1", pq))
	got := rowsOf(t, s, "SELECT id, image.shape AS shape FROM pngs WHERE id = 1")
	require.Len(t, got, 1)
	require.Equal(t, []any{6.0, 9.0, 3.0}, got[0]["shape"])

	// a missing file: nothing inserted, the error names the file
	_, err := s.Run(ctx, "INSERT INTO pngs VALUES (9, 'x', loch_file('nope.png'))", Output{})
	require.ErrorContains(t, err, "nope.png")
	require.Len(t, rowsOf(t, s, "SELECT id FROM pngs"), 4)
	// bytes that are not an image
	_, err = s.Run(ctx, "INSERT INTO pngs VALUES (9, 'x', 'abc'::BLOB)", Output{})
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
	require.ErrorContains(t, err, "row 1, column image: a BLOB of 3 bytes, want png or jpeg bytes (first bytes 61 62 63)")
}

func join(ss []string) string {
	var b bytes.Buffer
	for i, s := range ss {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s)
	}
	return b.String()
}

// TestLochFileS3: loch_file reads an s3:// URL (MinIO) through the storage
// layer, into a table of a catalog on MinIO.
func TestLochFileS3(t *testing.T) {
	bucket := testserver.MinIO(t)
	st, err := storage.Open(ctx, bucket.URL)
	require.NoError(t, err)
	img := testImage(t, "png", 5, 4, 9)
	require.NoError(t, st.Put(ctx, "raw/a.png", img))
	objURL := strings.Replace(bucket.URL, "/prefix?", "/prefix/raw/a.png?", 1)

	s := newSession(t, bucket.URL)
	run(t, s, "CREATE TABLE imgs (image IMAGE)")
	r := run(t, s, fmt.Sprintf("INSERT INTO imgs SELECT loch_file('%s')", objURL))
	require.EqualValues(t, 1, r.Rows)
	d, err := s.cat.OpenTable(ctx, "imgs")
	require.NoError(t, err)
	defer d.Close()
	c, err := d.Column("image")
	require.NoError(t, err)
	got, err := c.ReadEncoded(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, img, got.Data)
}
