package ingest

import (
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

func TestJSONValueKinds(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		kind vkind
		str  string
	}{
		{`null`, vNull, ""},
		{`true`, vBool, ""},
		{`false`, vBool, ""},
		{`0`, vInt, ""},
		{`-12`, vInt, ""},
		{`9223372036854775807`, vInt, ""},
		{`9223372036854775808`, vFloat, ""}, // beyond int64
		{`1.0`, vFloat, ""},
		{`1e3`, vFloat, ""},
		{`"a\nb"`, vString, "a\nb"},
		{`{"a":1}`, vJSON, ""},
		{` [1,2] `, vJSON, ""},
	} {
		v, err := jsonValue([]byte(tc.raw))
		require.NoError(t, err, tc.raw)
		require.Equal(t, tc.kind, v.kind, tc.raw)
		require.Equal(t, tc.str, v.str, tc.raw)
	}
}

func TestCellValueKinds(t *testing.T) {
	for _, tc := range []struct {
		cell string
		kind vkind
	}{
		{"", vNull},
		{"0", vInt},
		{"-7", vInt},
		{"+7", vInt},
		{"007", vString}, // a code, not a number
		{"02134", vString},
		{"0.5", vFloat},
		{"-1.5e-3", vFloat},
		{"0x10", vString},
		{"1_000", vString},
		{"NaN", vFloat},
		{"true", vBool},
		{"False", vBool},
		{"yes", vString},
		{`{"a": 1}`, vJSON},
		{"[1, 2]", vJSON},
		{"[not json", vString},
		{"hello", vString},
	} {
		require.Equal(t, tc.kind, cellValue(tc.cell).kind, "%q", tc.cell)
	}
}

func TestInferTypes(t *testing.T) {
	set := func(ks ...vkind) kindSet {
		var s kindSet
		for _, k := range ks {
			s = s.with(k)
		}
		return s
	}
	for _, tc := range []struct {
		name       string
		seen       kindSet
		jsonl, csv vkind
	}{
		{"never set", set(), vString, vString},
		{"only nulls", set(vNull), vString, vString},
		{"integers", set(vInt, vNull), vInt, vInt},
		{"numbers", set(vInt, vFloat), vFloat, vFloat},
		{"floats", set(vFloat), vFloat, vFloat},
		{"booleans", set(vBool, vNull), vBool, vBool},
		{"strings", set(vString), vString, vString},
		{"objects and arrays", set(vJSON), vJSON, vJSON},
		{"numbers and strings", set(vInt, vString), vJSON, vString},
		{"booleans and numbers", set(vBool, vInt), vJSON, vString},
		{"arrays and strings", set(vJSON, vString), vJSON, vString},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.jsonl, tc.seen.infer(jsonlFormat{}.mixed()))
			require.Equal(t, tc.csv, tc.seen.infer(csvFormat{}.mixed()))
		})
	}
}

func TestColumnName(t *testing.T) {
	for in, want := range map[string]string{
		"label":                  "label",
		"image_path":             "image_path",
		"a.b-c":                  "a.b-c",
		"my field":               "my_field",
		"1st":                    "_1st",
		"-x":                     "_-x",
		"":                       "_",
		"é":                      "_",
		"Größe":                  "Gr__e",
		"__key__":                "__key__",
		"x/y":                    "x_y",
		strings.Repeat("a", 200): strings.Repeat("a", 128),
	} {
		got := columnName(in)
		require.Equal(t, want, got, "%q", in)
		c := schema.Column{Name: got, DType: schema.Int64}
		require.NoError(t, c.Normalize(), "%q gives an invalid name %q", in, got)
	}
	names := newFieldNames()
	_, err := names.add("a b")
	require.NoError(t, err)
	_, err = names.add("a_b")
	require.ErrorIs(t, err, ErrInvalidSource)
}

func TestFloat16Bits(t *testing.T) {
	for _, tc := range []struct {
		f    float32
		bits uint16
	}{
		{0, 0x0000},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{0.5, 0x3800},
		{65504, 0x7bff},
		{65520, 0x7c00}, // rounds up to infinity
		{1e6, 0x7c00},
		{float32(math.Inf(-1)), 0xfc00},
		{6.103515625e-05, 0x0400},        // smallest normal
		{5.960464477539063e-08, 0x0001},  // smallest subnormal
		{2.9802322387695312e-08, 0x0000}, // half of it: ties to even, zero
		{1.0009765625, 0x3c01},
		{1.00048828125, 0x3c00}, // tie between 0x3c00 and 0x3c01: even
		{1.00146484375, 0x3c02}, // tie between 0x3c01 and 0x3c02: even
		{0.333251953125, 0x3555},
	} {
		require.Equal(t, tc.bits, half.Float16(tc.f), "%g", tc.f)
	}
	require.Equal(t, uint16(0x7e00), half.Float16(float32(math.NaN()))&0x7e00)
	for _, tc := range []struct {
		f    float32
		bits uint16
	}{{1, 0x3f80}, {-2, 0xc000}, {3.140625, 0x4049}, {1.00390625, 0x3f80}, {1.01171875, 0x3f82}} {
		require.Equal(t, tc.bits, half.BFloat16(tc.f), "%g", tc.f)
	}
}

func TestValueSample(t *testing.T) {
	le := binary.LittleEndian
	col := func(dt schema.DType, shape schema.Shape) *schema.Column {
		c := schema.Column{Name: "c", DType: dt, Shape: shape}
		require.NoError(t, c.Normalize())
		return &c
	}
	jv := func(raw string) value {
		v, err := jsonValue([]byte(raw))
		require.NoError(t, err)
		return v
	}
	for _, tc := range []struct {
		name  string
		col   *schema.Column
		v     value
		shape []int
		data  []byte
		err   string
	}{
		{"int8", col(schema.Int8, schema.Shape{}), jv("-5"), []int{}, []byte{0xfb}, ""},
		{"int8 range", col(schema.Int8, schema.Shape{}), jv("300"), nil, nil, "out of range"},
		{"uint16 negative", col(schema.Uint16, schema.Shape{}), jv("-1"), nil, nil, "out of range"},
		{"int from 3.0", col(schema.Int32, schema.Shape{}), jv("3.0"), []int{}, le.AppendUint32(nil, 3), ""},
		{"int from 3.5", col(schema.Int32, schema.Shape{}), jv("3.5"), nil, nil, "not an integer"},
		{"int from text", col(schema.Int64, schema.Shape{}), cellValue("cat"), nil, nil, "not a number"},
		{"float32 vector", col(schema.Float32, schema.Shape{3}), jv("[1, 2.5, -1e2]"), []int{3},
			le.AppendUint32(le.AppendUint32(le.AppendUint32(nil, math.Float32bits(1)), math.Float32bits(2.5)), math.Float32bits(-100)), ""},
		{"float16", col(schema.Float16, schema.Shape{}), jv("1"), []int{}, []byte{0x00, 0x3c}, ""},
		{"matrix from a csv cell", col(schema.Uint8, schema.Shape{2, 2}), cellValue("[[1,2],[3,4]]"), []int{2, 2}, []byte{1, 2, 3, 4}, ""},
		{"ragged", col(schema.Uint8, nil), jv("[[1,2],[3]]"), nil, nil, "ragged"},
		{"ragged depth", col(schema.Uint8, nil), jv("[[1,2],3]"), nil, nil, "ragged"},
		{"null in array", col(schema.Uint8, nil), jv("[1,null]"), nil, nil, "null inside"},
		{"bool", col(schema.Bool, schema.Shape{}), cellValue("TRUE"), []int{}, []byte{1}, ""},
		{"bool from 0", col(schema.Bool, schema.Shape{}), jv("0"), []int{}, []byte{0}, ""},
		{"text from number", col(schema.Text, nil), jv("12.50"), []int{5}, []byte("12.50"), ""},
		{"json from string", col(schema.JSON, nil), cellValue("hi"), []int{4}, []byte(`"hi"`), ""},
		{"json from csv number", col(schema.JSON, nil), cellValue("12"), []int{2}, []byte(`12`), ""},
		{"json from csv bool", col(schema.JSON, nil), cellValue("True"), []int{4}, []byte(`true`), ""},
		{"bytes", col(schema.Bytes, nil), jv(`"\u0001x"`), []int{2}, []byte{1, 'x'}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := valueSample(tc.col, nil, tc.v)
			if tc.err != "" {
				require.ErrorIs(t, err, ErrInvalidSource)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.shape, s.Shape)
			require.Equal(t, tc.data, s.Data)
		})
	}
	labels := schema.Column{Name: "l", Kind: schema.ClassLabel, DType: schema.Int16, Shape: schema.Shape{}, ClassNames: []string{"cat", "dog"}}
	require.NoError(t, labels.Normalize())
	s, err := valueSample(&labels, classIndex(&labels), jv(`"dog"`))
	require.NoError(t, err)
	require.Equal(t, []byte{1, 0}, s.Data)
	_, err = valueSample(&labels, classIndex(&labels), jv(`"yak"`))
	require.ErrorIs(t, err, ErrInvalidSource)
}

// writeRecordsFixture writes a folder with two images and returns it with
// the images' bytes.
func writeRecordsFixture(t *testing.T) (dir string, imgA, imgB []byte) {
	dir = t.TempDir()
	imgA = encodePNG(t, testImage(1, 6, 5, 3))
	imgB = encodeJPEG(t, testImage(2, 7, 4, 3))
	writeFile(t, filepath.Join(dir, "images", "a.png"), imgA)
	writeFile(t, filepath.Join(dir, "images", "b.jpg"), imgB)
	return dir, imgA, imgB
}

func TestJSONL(t *testing.T) {
	ctx := context.Background()
	dir, imgA, imgB := writeRecordsFixture(t)
	lines := []string{
		`{"id": 1, "score": 0.5, "ok": true, "name": "alpha", "meta": {"k": [1, 2]}, "img": "images/a.png", "url": "s3://b/x.bin", "mixed": 1}`,
		``,
		`{"id": 2, "score": 2, "ok": false, "name": "béta", "meta": [1], "img": "` + filepath.Join(dir, "images", "b.jpg") + `", "url": null, "mixed": "one"}`,
		`{"id": 3, "name": null, "my field": 7}`,
	}
	file := filepath.Join(dir, "data.jsonl")
	writeFile(t, file, []byte(strings.Join(lines, "\n")))
	url := memURL(t)
	var prog recorder
	res, err := JSONL(ctx, file, url, Options{ImageFields: []string{"img"}, LinkFields: []string{"url"}, Progress: &prog})
	require.NoError(t, err)
	require.EqualValues(t, 3, res.Rows)
	require.EqualValues(t, 3, prog.totalRows)
	require.EqualValues(t, 3, prog.rows)

	d := openDataset(t, url)
	s := d.Schema()
	type colType struct {
		Name  string
		Kind  schema.Kind
		DType schema.DType
	}
	var got []colType
	for _, c := range s.Columns {
		got = append(got, colType{c.Name, c.Kind, c.DType})
	}
	require.Equal(t, []colType{
		{"id", schema.Generic, schema.Int64},
		{"score", schema.Generic, schema.Float64},
		{"ok", schema.Generic, schema.Bool},
		{"name", schema.TextKind, schema.Text},
		{"meta", schema.JSONKind, schema.JSON},
		{"img", schema.Image, schema.Uint8},
		{"url", schema.Link, schema.Text},
		{"mixed", schema.JSONKind, schema.JSON},
		{"my_field", schema.Generic, schema.Int64},
	}, got)

	ids := column(t, d, "id", false)
	require.Equal(t, []int64{3}, int64s(t, ids[2]))
	score := column(t, d, "score", false)
	f, err := loch.As[float64](score[1].Data)
	require.NoError(t, err)
	require.Equal(t, []float64{2}, f)
	require.True(t, column(t, d, "score", false)[2].Null, "a missing field is null")
	require.Equal(t, []byte{1}, column(t, d, "ok", false)[0].Data)
	names := column(t, d, "name", false)
	require.Equal(t, "béta", string(names[1].Data))
	require.True(t, names[2].Null, "an explicit null is null")
	require.Equal(t, `{"k": [1, 2]}`, string(column(t, d, "meta", false)[0].Data))
	require.Equal(t, []string{`1`, `"one"`}, []string{string(column(t, d, "mixed", false)[0].Data), string(column(t, d, "mixed", false)[1].Data)})
	urls := column(t, d, "url", false)
	require.Equal(t, "s3://b/x.bin", string(urls[0].Data))
	require.True(t, urls[1].Null)
	imgs := column(t, d, "img", true)
	require.Equal(t, imgA, imgs[0].Data, "png kept byte for byte")
	pix, _ := decoded(t, imgB)
	require.Equal(t, pix, column(t, d, "img", false)[1].Data, "jpeg decoded once, stored losslessly")
	require.True(t, imgs[2].Null)
	require.Equal(t, []int64{7}, int64s(t, column(t, d, "my_field", false)[2]))
}

func TestJSONLErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "data.jsonl")

	writeFile(t, file, []byte("{\"a\": 1}\n{\"a\": 2\n"))
	_, err := JSONL(ctx, file, memURL(t), Options{})
	require.ErrorIs(t, err, ErrInvalidSource)
	require.ErrorContains(t, err, file+":2")

	writeFile(t, file, []byte("{\"a\": 1}\n[1, 2]\n"))
	_, err = JSONL(ctx, file, memURL(t), Options{})
	require.ErrorContains(t, err, file+":2: line is not a JSON object")

	writeFile(t, file, []byte("{\"img\": \"nope.png\"}\n"))
	url := memURL(t)
	res, err := JSONL(ctx, file, url, Options{ImageFields: []string{"img"}, SkipBad: true})
	require.ErrorIs(t, err, fs.ErrNotExist, "a missing image is not skipped")
	require.ErrorContains(t, err, filepath.Join(dir, "nope.png"))
	require.True(t, res.Created)
	require.Zero(t, openDataset(t, url).Len())

	writeFile(t, filepath.Join(dir, "bad.png"), []byte("not a png"))
	writeFile(t, file, []byte("{\"img\": \"bad.png\"}\n{\"img\": null}\n"))
	res, err = JSONL(ctx, file, memURL(t), Options{ImageFields: []string{"img"}, SkipBad: true})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Rows)
	require.Equal(t, []string{file + ":1"}, res.SkippedNames)

	_, err = JSONL(ctx, file, memURL(t), Options{ImageFields: []string{"picture"}})
	require.ErrorContains(t, err, `no field "picture"`)

	_, err = JSONL(ctx, filepath.Join(dir, "missing.jsonl"), memURL(t), Options{})
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, "missing.jsonl")

	writeFile(t, file, nil)
	_, err = JSONL(ctx, file, memURL(t), Options{})
	require.ErrorContains(t, err, "no records")
}

func TestJSONLWithSchema(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "data.jsonl")
	writeFile(t, file, []byte(`{"emb": [1, 2, 3], "label": "dog", "small": 3, "extra": 1}
{"emb": [0.5, 0, -1], "label": 0, "small": -3, "other": "x"}
`))
	s, err := schema.Parse([]byte(`columns:
  - {name: emb, kind: embedding, dtype: float16, shape: [3]}
  - {name: label, kind: class_label, class_names: [cat, dog]}
  - {name: small, dtype: int8, shape: []}
  - {name: absent, kind: text}`))
	require.NoError(t, err)
	url := memURL(t)
	res, err := JSONL(ctx, file, url, Options{Schema: &s})
	require.NoError(t, err)
	require.Equal(t, []string{"extra", "other"}, res.Ignored)
	d := openDataset(t, url)
	emb := column(t, d, "emb", false)
	require.Equal(t, []int{3}, emb[0].Shape)
	require.Equal(t, []byte{0x00, 0x3c, 0x00, 0x40, 0x00, 0x42}, emb[0].Data)
	labels := column(t, d, "label", false)
	require.Equal(t, []int64{1}, int64s(t, labels[0]))
	require.Equal(t, []int64{0}, int64s(t, labels[1]))
	require.Equal(t, []byte{0xfd}, column(t, d, "small", false)[1].Data)
	require.True(t, column(t, d, "absent", false)[0].Null)

	// A value that breaks the schema names the line and the field.
	writeFile(t, file, []byte("{\"emb\": [1, 2]}\n"))
	_, err = JSONL(ctx, file, memURL(t), Options{Schema: &s})
	require.ErrorIs(t, err, ErrInvalidSource)
	require.ErrorContains(t, err, file+`:1: field "emb"`)

	// Appending uses the dataset's schema.
	writeFile(t, file, []byte("{\"emb\": [1, 1, 1], \"label\": \"cat\"}\n"))
	res, err = JSONL(ctx, file, url, Options{Append: true})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Rows)
	require.EqualValues(t, 3, openDataset(t, url).Len())
}

func TestCSV(t *testing.T) {
	ctx := context.Background()
	dir, imgA, _ := writeRecordsFixture(t)
	file := filepath.Join(dir, "data.csv")
	writeFile(t, file, []byte("\ufeffid,score,ok,name,zip,meta,img,url,mixed\n"+
		"1,0.5,true,alpha,02134,\"{\"\"k\"\": 1}\",images/a.png,http://x/1,1\n"+
		"2,,False,\"with, comma\",10001,[1],,,two\n"+
		"3,7,,,,,,,\n"))
	url := memURL(t)
	res, err := CSV(ctx, file, url, Options{ImageFields: []string{"img"}, LinkFields: []string{"url"}})
	require.NoError(t, err)
	require.EqualValues(t, 3, res.Rows)
	d := openDataset(t, url)
	s := d.Schema()
	want := map[string]schema.DType{"id": schema.Int64, "score": schema.Float64, "ok": schema.Bool, "name": schema.Text,
		"zip": schema.Text, "meta": schema.JSON, "img": schema.Uint8, "url": schema.Text, "mixed": schema.Text}
	require.Equal(t, []string{"id", "score", "ok", "name", "zip", "meta", "img", "url", "mixed"}, s.Names())
	for name, dt := range want {
		c, _ := s.Column(name)
		require.Equal(t, dt, c.DType, name)
	}
	require.Equal(t, "02134", string(column(t, d, "zip", false)[0].Data))
	require.Equal(t, "with, comma", string(column(t, d, "name", false)[1].Data))
	require.Equal(t, []byte{0}, column(t, d, "ok", false)[1].Data)
	require.True(t, column(t, d, "score", false)[1].Null)
	require.Equal(t, `{"k": 1}`, string(column(t, d, "meta", false)[0].Data))
	require.Equal(t, imgA, column(t, d, "img", true)[0].Data)
	require.True(t, column(t, d, "img", true)[1].Null)
	require.Equal(t, "two", string(column(t, d, "mixed", false)[1].Data))

	// A tab-separated file, and a short record.
	tsv := filepath.Join(dir, "data.tsv")
	writeFile(t, tsv, []byte("a\tb\n1\t2\n3\n"))
	_, err = CSV(ctx, tsv, memURL(t), Options{Delimiter: '\t'})
	require.ErrorIs(t, err, ErrInvalidSource)
	require.ErrorContains(t, err, "line 3")
	writeFile(t, tsv, []byte("a\tb\n1\t2\n"))
	res, err = CSV(ctx, tsv, memURL(t), Options{Delimiter: '\t'})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Rows)

	writeFile(t, file, []byte("a,a\n1,2\n"))
	_, err = CSV(ctx, file, memURL(t), Options{})
	require.ErrorContains(t, err, `header names column "a" twice`)
}

func TestRecordsFromStoreURL(t *testing.T) {
	ctx := context.Background()
	src := memURL(t)
	st := openStore(t, src)
	img := encodePNG(t, testImage(3, 4, 4, 3))
	require.NoError(t, st.Put(ctx, "imgs/x.png", img))
	require.NoError(t, st.Put(ctx, "data.jsonl", []byte(`{"img": "imgs/x.png", "n": 1}`+"\n")))
	url := memURL(t)
	res, err := JSONL(ctx, src+"/data.jsonl", url, Options{ImageFields: []string{"img"}})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Rows)
	require.Equal(t, img, column(t, openDataset(t, url), "img", true)[0].Data)
}

func TestRecordsLarge(t *testing.T) {
	// Enough records for several jobs, checked against their source.
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "big.jsonl")
	var sb strings.Builder
	const n = 3000
	for i := range n {
		fmt.Fprintf(&sb, "{\"i\": %d, \"s\": \"row %d\"}\n", i, i)
	}
	require.NoError(t, os.WriteFile(file, []byte(sb.String()), 0o644))
	url := memURL(t)
	res, err := JSONL(ctx, file, url, Options{Parallelism: 3})
	require.NoError(t, err)
	require.EqualValues(t, n, res.Rows)
	require.EqualValues(t, sb.Len(), res.Bytes)
	d := openDataset(t, url)
	is := column(t, d, "i", false)
	ss := column(t, d, "s", false)
	for i := range n {
		require.Equal(t, []int64{int64(i)}, int64s(t, is[i]))
		require.Equal(t, fmt.Sprintf("row %d", i), string(ss[i].Data))
	}
}

// TestAppendBesideImagesOfTwoCompressions: appending records without images
// to a dataset holding a png and a jpeg image column is no compression
// conflict, and a missing branch is reported as such, not as a missing
// dataset.
func TestAppendBesideImagesOfTwoCompressions(t *testing.T) {
	dir := t.TempDir()
	url := filepath.Join(dir, "ds")
	d, err := loch.Create(context.Background(), url, schema.Schema{Columns: []schema.Column{
		{Name: "image", Kind: schema.Image, SampleCompression: schema.PNG},
		{Name: "thumb", Kind: schema.Image, SampleCompression: schema.JPEG},
		{Name: "label", DType: schema.Text},
	}})
	require.NoError(t, err)
	d.Close()
	file := filepath.Join(dir, "one.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(`{"label":"dog"}`+"\n"), 0o644))
	res, err := JSONL(context.Background(), file, url, Options{Append: true})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Rows)

	_, err = JSONL(context.Background(), file, url, Options{Append: true, DatasetOptions: []loch.Option{loch.WithRef("no-such-branch")}})
	require.ErrorIs(t, err, loch.ErrNotFound)
	require.NotErrorIs(t, err, loch.ErrNoDataset)
	require.ErrorContains(t, err, "no-such-branch")
}
