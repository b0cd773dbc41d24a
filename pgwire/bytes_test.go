package pgwire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// pngOf is a w x h RGB png whose pixels depend on seed.
func pngOf(t testing.TB, w, h int, seed uint8) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{seed + uint8(x), uint8(y) * 40, seed * 3, 255})
		}
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

// seedPics creates table pics (an image kept as png, one stored decoded,
// a tensor larger than query.MaxInline) with rows 0 and 1, and row 2 all
// NULL. Element [i][j] of row r's tensor is 70i + j + r.
func seedPics(t testing.TB, c *pgx.Conn) {
	t.Helper()
	_, err := c.Exec(ctx, "CREATE TABLE pics (id BIGINT, image IMAGE('png'), raw IMAGE('none'), t TENSOR(float32))")
	require.NoError(t, err)
	for i := range 2 {
		_, err = c.Exec(ctx, "INSERT INTO pics VALUES ($1, $2, $3, [[(70 * i + j + $4::BIGINT)::FLOAT FOR j IN range(70)] FOR i IN range(70)])",
			int64(i), pngOf(t, 3, 2, uint8(10*i)), pngOf(t, 2, 2, uint8(100+i)), int64(i))
		require.NoError(t, err)
	}
	_, err = c.Exec(ctx, "INSERT INTO pics (id) VALUES (2)")
	require.NoError(t, err)
}

// storedSample is column col of row id of table pics as the Go API reads
// it as stored (ColumnReader.ReadEncoded); nil for NULL.
func storedSample(t testing.TB, f *fixture, col string, id int64) []byte {
	t.Helper()
	d, err := f.srv.cat.OpenTable(ctx, "pics")
	require.NoError(t, err)
	defer d.Close()
	r, err := d.Column(col)
	require.NoError(t, err)
	s, err := r.ReadEncoded(ctx, id)
	require.NoError(t, err)
	if s.Null {
		return nil
	}
	return s.Data
}

func TestSamplesAsBytea(t *testing.T) {
	f := newFixture(t, Options{})
	seedPics(t, f.mustConnect(t, "alice"))
	bob := f.mustConnect(t, "bob")
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		rows, err := bob.Query(ctx, "SELECT id, image, raw, t FROM pics ORDER BY id", mode)
		require.NoError(t, err)
		for _, fd := range rows.FieldDescriptions()[1:] {
			require.Equal(t, uint32(oidBytea), fd.DataTypeOID, fd.Name)
		}
		n := 0
		for rows.Next() {
			var id int64
			var img, raw, tensor []byte
			require.NoError(t, rows.Scan(&id, &img, &raw, &tensor))
			require.Equal(t, storedSample(t, f, "image", id), img, "mode %v row %d", mode, id)
			require.Equal(t, storedSample(t, f, "raw", id), raw, "mode %v row %d", mode, id)
			require.Equal(t, storedSample(t, f, "t", id), tensor, "mode %v row %d", mode, id)
			n++
		}
		require.NoError(t, rows.Err())
		require.Equal(t, 3, n)
	}

	// What each kind holds: the png as inserted, decoded pixels (HWC
	// uint8), float32 elements little-endian.
	var img, raw, tensor []byte
	var shape, rawShape, dtype string
	require.NoError(t, bob.QueryRow(ctx, "SELECT image, raw, t, (t).shape::VARCHAR, raw.shape::VARCHAR, (t).dtype FROM pics WHERE id = 1").
		Scan(&img, &raw, &tensor, &shape, &rawShape, &dtype))
	require.Equal(t, pngOf(t, 3, 2, 10), img)
	require.Len(t, raw, 2*2*3)
	require.Equal(t, []byte{101, 0, 101 * 3 % 256}, raw[:3])
	require.Equal(t, "[70, 70]", shape)
	require.Equal(t, "[2, 2, 3]", rawShape)
	require.Equal(t, "float32", dtype)
	require.Len(t, tensor, 4*70*70)
	for k := range 70 * 70 {
		require.Equal(t, float32(k+1), math.Float32frombits(binary.LittleEndian.Uint32(tensor[4*k:])), "element %d", k)
	}
	var null []byte
	require.NoError(t, bob.QueryRow(ctx, "SELECT image FROM pics WHERE id = 2").Scan(&null))
	require.Nil(t, null)
}

// TestCopySamples: images copied out as bytea (binary and text COPY)
// and into another table are the same images.
func TestCopySamples(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.mustConnect(t, "alice")
	seedPics(t, c)
	for _, format := range []string{"binary", "text"} {
		_, err := c.Exec(ctx, "CREATE TABLE pics2 (id BIGINT, image IMAGE('png'))")
		require.NoError(t, err)
		var out bytes.Buffer
		_, err = c.PgConn().CopyTo(ctx, &out, "COPY pics (id, image) TO STDOUT (FORMAT "+format+")")
		require.NoError(t, err)
		tag, err := c.PgConn().CopyFrom(ctx, &out, "COPY pics2 FROM STDIN (FORMAT "+format+")")
		require.NoError(t, err, format)
		require.Equal(t, "COPY 3", tag.String())
		for id := range int64(3) {
			var img []byte
			require.NoError(t, c.QueryRow(ctx, "SELECT image FROM pics2 WHERE id = $1", id).Scan(&img))
			require.Equal(t, storedSample(t, f, "image", id), img, "%s row %d", format, id)
		}
		_, err = c.Exec(ctx, "DROP TABLE pics2")
		require.NoError(t, err)
	}
}

func TestPSQLShowsSamplesAsHex(t *testing.T) {
	f := newFixture(t, Options{})
	seedPics(t, f.mustConnect(t, "alice"))
	out := psql(t, f, "bob", `\d pics`)
	require.Regexp(t, `(?m)^\s*image\s+\|\s+bytea\s+\|`, out)
	require.Regexp(t, `(?m)^\s*t\s+\|\s+bytea\s+\|`, out)
	out = psql(t, f, "bob", `\pset format unaligned`, "SELECT image FROM pics WHERE id = 0")
	require.Contains(t, out, `\x`+hex.EncodeToString(storedSample(t, f, "image", 0)))
}

// noisePNG is a w x h RGB png of random pixels (seeded): about 3w*h
// bytes, as a photo's png is.
func noisePNG(t testing.TB, w, h int, seed uint64) []byte {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(r.Uint32())
		if i%4 == 3 {
			img.Pix[i] = 255
		}
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

// BenchmarkImagesAsBytea reads table pics's png images (rows of them,
// 96x96 RGB of noise, 27 KB each) as bytea to pgx, binary, against the same bytes read
// in process with the Go API (ReadEncodedRange, baseline); it reports
// images/s and MB/s of image bytes.
func BenchmarkImagesAsBytea(b *testing.B) {
	const rows = 1000
	f := newFixture(b, Options{})
	c := f.mustConnect(b, "alice")
	_, err := c.Exec(ctx, "CREATE TABLE pics (id BIGINT, image IMAGE('png'))")
	require.NoError(b, err)
	var src [][]any
	for i := range rows {
		src = append(src, []any{int64(i), noisePNG(b, 96, 96, uint64(i))})
	}
	_, err = c.CopyFrom(ctx, pgx.Identifier{"pics"}, []string{"id", "image"}, pgx.CopyFromRows(src))
	require.NoError(b, err)
	b.Run("pgx", func(b *testing.B) {
		size := 0
		for range b.N {
			size = 0
			rs, err := c.Query(ctx, "SELECT image FROM pics")
			require.NoError(b, err)
			for rs.Next() {
				size += len(rs.RawValues()[0])
			}
			require.NoError(b, rs.Err())
		}
		b.SetBytes(int64(size))
		b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "images/s")
	})
	b.Run("go-api", func(b *testing.B) {
		d, err := f.srv.cat.OpenTable(ctx, "pics")
		require.NoError(b, err)
		defer d.Close()
		size := 0
		for range b.N {
			size = 0
			r, err := d.Column("image")
			require.NoError(b, err)
			ss, err := r.ReadEncodedRange(ctx, 0, rows)
			require.NoError(b, err)
			for _, s := range ss {
				size += len(s.Data)
			}
		}
		b.SetBytes(int64(size))
		b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "images/s")
	})
}
