package ingest

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/half"
	"github.com/lochdata/loch/schema"
)

// npyBytes returns a .npy file (format 1.0) with the given header fields
// and data.
func npyBytes(descr string, fortran bool, shape []int, data []byte) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	order := "False"
	if fortran {
		order = "True"
	}
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }", descr, order, tuple)
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	var b bytes.Buffer
	b.WriteString(npyMagic)
	b.Write([]byte{1, 0})
	binary.Write(&b, binary.LittleEndian, uint16(len(h)))
	b.WriteString(h)
	b.Write(data)
	return b.Bytes()
}

func TestParseNPYHeader(t *testing.T) {
	for _, tc := range []struct {
		header string
		dtype  schema.DType
		size   int
		swap   bool
		fort   bool
		shape  []int
		err    string
	}{
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", schema.Float32, 4, false, false, []int{3, 4}, ""},
		{`{"descr": ">i8", "fortran_order": True, "shape": (2,)}`, schema.Int64, 8, true, true, []int{2}, ""},
		{"{'shape': (0, 5), 'descr': '|u1', 'fortran_order': False}", schema.Uint8, 1, false, false, []int{0, 5}, ""},
		{"{'descr': '|b1', 'fortran_order': False, 'shape': (7,), }", schema.Bool, 1, false, false, []int{7}, ""},
		{"{'descr': '<f2', 'fortran_order': False, 'shape': (1, 1, 1), }", schema.Float16, 2, false, false, []int{1, 1, 1}, ""},
		{"{'descr': '>u2', 'fortran_order': False, 'shape': (3L, 2L), }", schema.Uint16, 2, true, false, []int{3, 2}, ""},
		{"{'descr': '<U5', 'fortran_order': False, 'shape': (2,), }", schema.Text, 20, false, false, []int{2}, ""},
		{"{'descr': '|S3', 'fortran_order': False, 'shape': (2,), }", schema.Bytes, 3, false, false, []int{2}, ""},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (), }", schema.Float32, 4, false, false, []int{}, ""},
		{"{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 0, 0, false, false, nil, "complex"},
		{"{'descr': '<M8[ns]', 'fortran_order': False, 'shape': (2,), }", 0, 0, false, false, nil, "unknown"},
		{"{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", 0, 0, false, false, nil, "unknown"},
		{"{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (2,), }", 0, 0, false, false, nil, "structured"},
		{"{'descr': '<U2', 'fortran_order': False, 'shape': (2, 2), }", 0, 0, false, false, nil, "one dimension"},
		{"{'descr': '<f4', 'fortran_order': False}", 0, 0, false, false, nil, "want exactly"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 0, 0, false, false, nil, "unexpected"},
		{"{'descr': '<f4', 'descr': '<f4', 'shape': (2,)}", 0, 0, false, false, nil, "twice"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 0, 0, false, false, nil, "bad dimension"},
		{"{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 0, 0, false, false, nil, "too large"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (2,) } junk", 0, 0, false, false, nil, "after"},
		{"", 0, 0, false, false, nil, "want '{'"},
	} {
		h, err := parseNPYHeader(tc.header)
		if tc.err != "" {
			require.ErrorIs(t, err, ErrInvalidSource, tc.header)
			require.ErrorContains(t, err, tc.err, tc.header)
			continue
		}
		require.NoError(t, err, tc.header)
		require.Equal(t, tc.dtype, h.dtype, tc.header)
		require.Equal(t, tc.size, h.itemSize, tc.header)
		require.Equal(t, tc.swap, h.swap, tc.header)
		require.Equal(t, tc.fort, h.fortran, tc.header)
		require.Equal(t, tc.shape, h.shape, tc.header)
	}
}

func TestReadNPYHeaderVersions(t *testing.T) {
	file := npyBytes("<i4", false, []int{2}, make([]byte, 8))
	h, err := readNPYHeader(bytes.NewReader(file))
	require.NoError(t, err)
	require.Equal(t, 0, h.headLen%64, "numpy pads the header to 64 bytes")

	// Version 2 has a 4-byte header length.
	text := file[10:h.headLen]
	v2 := append([]byte(npyMagic+"\x02\x00"), binary.LittleEndian.AppendUint32(nil, uint32(len(text)))...)
	v2 = append(v2, text...)
	h2, err := readNPYHeader(bytes.NewReader(v2))
	require.NoError(t, err)
	require.Equal(t, h.shape, h2.shape)

	for _, bad := range [][]byte{nil, []byte("\x93NUMPY"), []byte("PK\x03\x04aaaaaaaa"), []byte(npyMagic + "\x04\x00\x00\x00"), file[:40]} {
		_, err := readNPYHeader(bytes.NewReader(bad))
		require.ErrorIs(t, err, ErrInvalidSource, "%q", bad)
	}
}

func FuzzNPYHeader(f *testing.F) {
	f.Add(npyBytes("<f4", false, []int{3, 4}, nil))
	f.Add(npyBytes(">U3", false, []int{2}, nil))
	f.Add(npyBytes("<f8", true, []int{2, 3, 4}, nil))
	f.Add([]byte(npyMagic + "\x02\x00\x10\x00\x00\x00{'descr': '<f4'}"))
	for _, name := range []string{"f8fortran.npy", "names.npy", "structured.npy"} {
		b, err := os.ReadFile(filepath.Join("testdata", "numpy", name))
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := readNPYHeader(bytes.NewReader(data))
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidSource)
			return
		}
		require.True(t, h.dtype.Valid())
		require.Positive(t, h.itemSize)
		require.LessOrEqual(t, h.headLen, len(data))
		total := h.itemSize
		for _, d := range h.shape {
			require.GreaterOrEqual(t, d, 0)
			total *= d
			require.LessOrEqual(t, total, 1<<62)
		}
		// Whatever the header claims, reading the rows fails cleanly on
		// short data and never allocates the claimed size up front.
		if a, err := newNPYArray(bytes.NewReader(data)); err == nil && a.rows > 0 {
			_, err = a.readRows(min(a.rows, 4))
			if err != nil {
				require.ErrorIs(t, err, ErrInvalidSource)
			}
		}
	})
}

func TestFortranToC(t *testing.T) {
	// A 2x3 matrix [[0 1 2] [3 4 5]] in Fortran order is 0 3 1 4 2 5.
	require.Equal(t, []byte{0, 1, 2, 3, 4, 5}, fortranToC([]byte{0, 3, 1, 4, 2, 5}, []int{2, 3}, 1))
	// 2x2x2 with 2-byte elements.
	f := []byte{}
	for _, v := range []byte{0, 4, 2, 6, 1, 5, 3, 7} {
		f = append(f, v, 0)
	}
	c := fortranToC(f, []int{2, 2, 2}, 2)
	for i := range 8 {
		require.Equal(t, byte(i), c[2*i])
	}
}

// fixtures are the arrays of testdata/numpy (see gen.py), by file.
func fixture(t *testing.T, names ...string) []string {
	var out []string
	for _, n := range names {
		out = append(out, filepath.Join("testdata", "numpy", n+".npy"))
	}
	return out
}

func TestNumpyFixtures(t *testing.T) {
	ctx := context.Background()
	all := []string{"b", "i1", "u2", "i4be", "i8", "f2", "f4", "f8fortran", "u1img", "names", "raw"}
	url := memURL(t)
	var prog recorder
	res, err := NPY(ctx, fixture(t, all...), url, Options{Progress: &prog})
	require.NoError(t, err)
	require.EqualValues(t, 5, res.Rows)
	require.EqualValues(t, 5, prog.totalRows)

	d := openDataset(t, url)
	s := d.Schema()
	require.Equal(t, all, s.Names())
	want := map[string]struct {
		dtype schema.DType
		shape schema.Shape
	}{
		"b": {schema.Bool, schema.Shape{}}, "i1": {schema.Int8, schema.Shape{}}, "u2": {schema.Uint16, schema.Shape{}},
		"i4be": {schema.Int32, schema.Shape{}}, "i8": {schema.Int64, schema.Shape{}}, "f2": {schema.Float16, schema.Shape{}},
		"f4": {schema.Float32, schema.Shape{3}}, "f8fortran": {schema.Float64, schema.Shape{2, 3}},
		"u1img": {schema.Uint8, schema.Shape{2, 2, 3}}, "names": {schema.Text, nil}, "raw": {schema.Bytes, nil},
	}
	for name, w := range want {
		c, _ := s.Column(name)
		require.Equal(t, w.dtype, c.DType, name)
		require.Equal(t, w.shape, c.Shape, name)
	}

	cols := map[string][]loch.Sample{}
	for _, name := range all {
		cols[name] = column(t, d, name, false)
	}
	le := binary.LittleEndian
	for i := range 5 {
		require.Equal(t, []byte{boolByte(i%2 == 0)}, cols["b"][i].Data)
		require.Equal(t, []byte{byte(int8(i - 2))}, cols["i1"][i].Data)
		require.Equal(t, le.AppendUint16(nil, uint16(i*1000)), cols["u2"][i].Data)
		require.Equal(t, le.AppendUint32(nil, uint32(int32(i*-70000))), cols["i4be"][i].Data, "big-endian is converted")
		require.Equal(t, le.AppendUint64(nil, uint64(i)*1e12), cols["i8"][i].Data)
		require.Equal(t, le.AppendUint16(nil, half.Float16(float32(i)/4)), cols["f2"][i].Data)
		var f4 []byte
		for _, v := range []float32{float32(i), float32(i) * 0.5, float32(-i)} {
			f4 = le.AppendUint32(f4, math.Float32bits(v))
		}
		require.Equal(t, []int{3}, cols["f4"][i].Shape)
		require.Equal(t, f4, cols["f4"][i].Data)
		var f8 []byte
		for k := range 6 {
			f8 = le.AppendUint64(f8, math.Float64bits(float64(i*6+k)))
		}
		require.Equal(t, []int{2, 3}, cols["f8fortran"][i].Shape)
		require.Equal(t, f8, cols["f8fortran"][i].Data, "fortran order is transposed")
		img := make([]byte, 12)
		for k := range img {
			img[k] = byte(i*12 + k)
		}
		require.Equal(t, img, cols["u1img"][i].Data)
		require.Equal(t, fmt.Sprintf("row%d", i)+strings.Repeat("é", i), string(cols["names"][i].Data))
		require.Equal(t, strings.Repeat("x", i), string(cols["raw"][i].Data))
	}

	// The same arrays from archives.
	url2 := memURL(t)
	_, err = NPZ(ctx, filepath.Join("testdata", "numpy", "plain.npz"), url2, Options{})
	require.NoError(t, err)
	d2 := openDataset(t, url2)
	require.Equal(t, []string{"b", "i8", "f4"}, func() []string { s := d2.Schema(); return s.Names() }())
	for _, name := range []string{"b", "i8", "f4"} {
		require.Equal(t, cols[name], column(t, d2, name, false), name)
	}
	url3 := memURL(t)
	_, err = NPZ(ctx, filepath.Join("testdata", "numpy", "compressed.npz"), url3, Options{Parallelism: 1})
	require.NoError(t, err)
	d3 := openDataset(t, url3)
	for _, name := range []string{"f2", "u1img", "names"} {
		require.Equal(t, cols[name], column(t, d3, name, false), name)
	}
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func TestNumpyErrors(t *testing.T) {
	ctx := context.Background()
	url := memURL(t)
	_, err := NPY(ctx, fixture(t, "b", "short", "i8"), url, Options{})
	require.ErrorIs(t, err, ErrInvalidSource)
	require.ErrorContains(t, err, "differ in their first dimension")
	require.ErrorContains(t, err, "short.npy has 3")
	require.ErrorContains(t, err, "b.npy has 5")
	_, err = loch.Open(ctx, url)
	require.ErrorIs(t, err, loch.ErrNotFound, "a bad source is found before the dataset is created")

	for name, msg := range map[string]string{"scalar": "scalar", "complex": "complex", "structured": "structured"} {
		_, err := NPY(ctx, fixture(t, name), memURL(t), Options{})
		require.ErrorIs(t, err, ErrInvalidSource, name)
		require.ErrorContains(t, err, msg, name)
		require.ErrorContains(t, err, name+".npy", name)
	}

	_, err = NPY(ctx, []string{filepath.Join(t.TempDir(), "missing.npy")}, memURL(t), Options{})
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, "missing.npy")

	dir := t.TempDir()
	trunc := filepath.Join(dir, "trunc.npy")
	writeFile(t, trunc, npyBytes("<i8", false, []int{4}, make([]byte, 20)))
	url = memURL(t)
	res, err := NPY(ctx, []string{trunc}, url, Options{})
	require.ErrorIs(t, err, ErrInvalidSource)
	require.ErrorContains(t, err, "trunc.npy")
	require.True(t, res.Created)
	require.Zero(t, openDataset(t, url).Len())

	_, err = NPY(ctx, []string{filepath.Join(dir, "a", "x.npy"), filepath.Join(dir, "b", "x.npy")}, memURL(t), Options{})
	require.Error(t, err)

	notZip := filepath.Join(dir, "x.npz")
	writeFile(t, notZip, []byte("hello"))
	_, err = NPZ(ctx, notZip, memURL(t), Options{})
	require.ErrorIs(t, err, ErrInvalidSource)
	require.ErrorContains(t, err, "x.npz")
}

func TestNPZFromGo(t *testing.T) {
	// Many rows (several batches), written with Go's zip, from a URL.
	ctx := context.Background()
	const n = 10000
	a := make([]byte, 0, n*3*4)
	bs := make([]byte, 0, n*8)
	for i := range n {
		for k := range 3 {
			a = binary.LittleEndian.AppendUint32(a, uint32(i*3+k))
		}
		bs = binary.BigEndian.AppendUint64(bs, math.Float64bits(float64(i)/3))
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, data := range map[string][]byte{
		"a.npy":      npyBytes("<u4", false, []int{n, 3}, a),
		"my vec.npy": npyBytes(">f8", false, []int{n}, bs),
	} {
		w, err := zw.Create(name)
		require.NoError(t, err)
		_, err = w.Write(data)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	src := memURL(t)
	require.NoError(t, openStore(t, src).Put(ctx, "arrays.npz", buf.Bytes()))

	url := memURL(t)
	res, err := NPZ(ctx, src+"/arrays.npz", url, Options{Parallelism: 3})
	require.NoError(t, err)
	require.EqualValues(t, n, res.Rows)
	require.EqualValues(t, n*(12+8), res.Bytes)
	d := openDataset(t, url)
	av := column(t, d, "a", false)
	fv := column(t, d, "my_vec", false)
	for i := 0; i < n; i += 997 {
		v, err := loch.As[uint32](av[i].Data)
		require.NoError(t, err)
		require.Equal(t, []uint32{uint32(3 * i), uint32(3*i + 1), uint32(3*i + 2)}, v)
		f, err := loch.As[float64](fv[i].Data)
		require.NoError(t, err)
		require.Equal(t, []float64{float64(i) / 3}, f)
	}
}

func TestNPYAppendChecksShape(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := filepath.Join(dir, "v.npy")
	writeFile(t, a, npyBytes("<i2", false, []int{2, 3}, make([]byte, 12)))
	url := memURL(t)
	_, err := NPY(ctx, []string{a}, url, Options{})
	require.NoError(t, err)
	writeFile(t, a, npyBytes("<i2", false, []int{2, 4}, make([]byte, 16)))
	_, err = NPY(ctx, []string{a}, url, Options{Append: true})
	require.ErrorIs(t, err, ErrIncompatible)
	require.ErrorContains(t, err, "v.npy")
	writeFile(t, a, npyBytes("<i4", false, []int{2, 3}, make([]byte, 24)))
	_, err = NPY(ctx, []string{a}, url, Options{Append: true})
	require.ErrorIs(t, err, ErrIncompatible)
	require.ErrorContains(t, err, "int32")
	writeFile(t, a, npyBytes("<i2", false, []int{1, 3}, []byte{1, 0, 2, 0, 3, 0}))
	res, err := NPY(ctx, []string{a}, url, Options{Append: true})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Rows)
	require.EqualValues(t, 3, openDataset(t, url).Len())
}
