package ingest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

func TestExpandBraces(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		want    []string
		err     string
	}{
		{"shard.tar", []string{"shard.tar"}, ""},
		{"", []string{""}, ""},
		{"shard-{000..003}.tar", []string{"shard-000.tar", "shard-001.tar", "shard-002.tar", "shard-003.tar"}, ""},
		{"s-{8..11}.tar", []string{"s-8.tar", "s-9.tar", "s-10.tar", "s-11.tar"}, ""},
		{"s-{08..11}", []string{"s-08", "s-09", "s-10", "s-11"}, ""},
		{"s-{3..1}", []string{"s-3", "s-2", "s-1"}, ""},
		{"{-1..1}", []string{"-1", "0", "1"}, ""},
		{"{-01..01}", []string{"-01", "000", "001"}, ""}, // as bash
		{"{5..5}", []string{"5"}, ""},
		{"s3://b/{train,val}-{0..1}.tar", []string{"s3://b/train-0.tar", "s3://b/train-1.tar", "s3://b/val-0.tar", "s3://b/val-1.tar"}, ""},
		{"{a,b{1,2},c}", []string{"a", "b1", "b2", "c"}, ""},
		{"{a,}x", []string{"ax", "x"}, ""},
		{"x{}y", []string{"x{}y"}, ""},
		{"x{abc}y", []string{"x{abc}y"}, ""},
		{"x{a{1,2}}", []string{"x{a1}", "x{a2}"}, ""},
		{"{1..a}", []string{"{1..a}"}, ""},
		{"shard-{0..", nil, "'{' without '}'"},
		{"shard-}", nil, "'}' without '{'"},
		{"a}{b,c}", nil, "'}' without '{'"},
		{"{0..999999}{0..9}", nil, "more than"},
		{"{0..9999999}", nil, "more than"},
		{"{-9223372036854775808..9223372036854775807}", nil, "more than"},
		{"{9223372036854775807..-9223372036854775808}", nil, "more than"},
		{"{0..99999999999999999999}", []string{"{0..99999999999999999999}"}, ""},
	} {
		got, err := ExpandBraces(tc.pattern)
		if tc.err != "" {
			require.ErrorIs(t, err, ErrInvalidSource, tc.pattern)
			require.ErrorContains(t, err, tc.err, tc.pattern)
			continue
		}
		require.NoError(t, err, tc.pattern)
		require.Equal(t, tc.want, got, tc.pattern)
	}
}

func FuzzExpandBraces(f *testing.F) {
	for _, s := range []string{"shard-{000..009}.tar", "{a,b{1,2},c}", "x{}y", "{-01..01}", "{3..1}{a,b}", "a}{", "{{{,}}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pattern string) {
		got, err := ExpandBraces(pattern)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidSource)
			return
		}
		require.NotEmpty(t, got)
		require.LessOrEqual(t, len(got), maxExpansion)
		if !strings.ContainsAny(pattern, "{}") {
			require.Equal(t, []string{pattern}, got)
		}
		again, err := ExpandBraces(pattern)
		require.NoError(t, err)
		require.Equal(t, got, again)
	})
}

// tarFile is one file of a test shard.
type tarFile struct {
	name string
	data []byte
}

func makeTar(t *testing.T, files []tarFile, gz bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		if strings.HasSuffix(f.name, "/") {
			require.NoError(t, tw.WriteHeader(&tar.Header{Name: f.name, Typeflag: tar.TypeDir, Mode: 0o755}))
			continue
		}
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), Typeflag: tar.TypeReg}))
		_, err := tw.Write(f.data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	if !gz {
		return buf.Bytes()
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	_, err := zw.Write(buf.Bytes())
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return z.Bytes()
}

// wdsShards writes three shards (the last gzipped) of 4 samples each and
// returns their paths and the samples' files in order.
func wdsShards(t *testing.T) (string, [][]tarFile) {
	dir := t.TempDir()
	var samples [][]tarFile
	for s := range 3 {
		var files []tarFile
		if s == 0 {
			files = append(files, tarFile{name: "data/"}, tarFile{name: "README"}, tarFile{name: "data/.hidden.txt", data: []byte("x")})
		}
		for i := range 4 {
			key := fmt.Sprintf("data/s%d_%03d", s, i)
			sample := []tarFile{
				{key + ".jpg", encodeJPEG(t, testImage(uint64(s*10+i), 6, 5, 3))},
				{key + ".cls", []byte(fmt.Sprintf(" %d\n", i%3))},
				{key + ".txt", []byte(fmt.Sprintf("caption %d-%d", s, i))},
				{key + ".json", []byte(fmt.Sprintf(`{"s": %d}`, s))},
				{key + ".seg.png", encodePNG(t, testImage(uint64(s*10+i), 6, 5, 1))},
				{key + ".npy", npyBytes("<f4", false, []int{2}, []byte{0, 0, 128, 63, 0, 0, 0, 64})},
				{key + ".bin", []byte{byte(s), byte(i)}},
			}
			if i == 3 {
				sample = sample[:2] // a sample without some files
			}
			files = append(files, sample...)
			samples = append(samples, sample)
		}
		name := fmt.Sprintf("shard-%02d.tar", s)
		if s == 2 {
			name = "shard-02.tar.gz"
		}
		writeFile(t, filepath.Join(dir, name), makeTar(t, files, s == 2))
	}
	return dir, samples
}

func TestWebDataset(t *testing.T) {
	ctx := context.Background()
	dir, samples := wdsShards(t)
	url := memURL(t)
	var prog recorder
	shards := []string{filepath.Join(dir, "shard-{00..01}.tar"), filepath.Join(dir, "shard-02.tar.gz")}
	res, err := WebDataset(ctx, shards, url, Options{Progress: &prog})
	require.NoError(t, err)
	require.EqualValues(t, 12, res.Rows)
	require.EqualValues(t, prog.totalBytes, prog.bytes, "the bytes of the samples add up to the shards' sizes")
	require.Positive(t, prog.totalBytes)

	d := openDataset(t, url)
	s := d.Schema()
	require.Equal(t, []string{"__key__", "jpg", "cls", "txt", "json", "seg.png", "npy", "bin"}, s.Names())
	kinds := map[string]schema.Kind{}
	for _, c := range s.Columns {
		kinds[c.Name] = c.Kind
	}
	require.Equal(t, map[string]schema.Kind{"__key__": schema.TextKind, "jpg": schema.Image, "cls": schema.ClassLabel, "txt": schema.TextKind,
		"json": schema.JSONKind, "seg.png": schema.Image, "npy": schema.Generic, "bin": schema.Generic}, kinds)

	keys := column(t, d, "__key__", false)
	jpg := column(t, d, "jpg", true)
	cls := column(t, d, "cls", false)
	txt := column(t, d, "txt", false)
	seg := column(t, d, "seg.png", true)
	npy := column(t, d, "npy", false)
	bin := column(t, d, "bin", false)
	for r, sample := range samples {
		key := strings.TrimSuffix(sample[0].name, ".jpg")
		require.Equal(t, key, string(keys[r].Data), "row %d", r)
		pix, _ := decoded(t, sample[0].data)
		got, _ := decoded(t, jpg[r].Data)
		require.Equal(t, pix, got, "row %d: jpeg decoded once and kept losslessly", r)
		require.Equal(t, []int64{int64(r % 4 % 3)}, int64s(t, cls[r]))
		if len(sample) == 2 {
			require.True(t, txt[r].Null)
			require.True(t, seg[r].Null)
			require.True(t, npy[r].Null)
			continue
		}
		require.Equal(t, string(sample[2].data), string(txt[r].Data))
		require.Equal(t, sample[4].data, seg[r].Data, "png kept byte for byte")
		require.Equal(t, []int{2}, npy[r].Shape)
		f, err := loch.As[float32](npy[r].Data)
		require.NoError(t, err)
		require.Equal(t, []float32{1, 2}, f)
		require.Equal(t, sample[6].data, bin[r].Data)
	}
}

func TestWebDatasetFromStore(t *testing.T) {
	ctx := context.Background()
	dir, _ := wdsShards(t)
	local := memURL(t)
	_, err := WebDataset(ctx, []string{filepath.Join(dir, "shard-{00..01}.tar"), filepath.Join(dir, "shard-02.tar.gz")}, local, Options{ImageCompression: CompressJPEG})
	require.NoError(t, err)

	src := memURL(t)
	st := openStore(t, src)
	for _, name := range []string{"shard-00.tar", "shard-01.tar", "shard-02.tar.gz"} {
		data := readTestFile(t, filepath.Join(dir, name))
		require.NoError(t, st.Put(ctx, name, data))
	}
	remote := memURL(t)
	res, err := WebDataset(ctx, []string{src + "/shard-{00..01}.tar", src + "/shard-02.tar.gz"}, remote, Options{ImageCompression: CompressJPEG, Parallelism: 1})
	require.NoError(t, err)
	require.EqualValues(t, 12, res.Rows)
	require.Equal(t, contents(t, openDataset(t, local)), contents(t, openDataset(t, remote)))
}

func TestWebDatasetSchemaAndErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first := filepath.Join(dir, "a.tar")
	writeFile(t, first, makeTar(t, []tarFile{{"x.cls", []byte("1")}, {"x.score", []byte("0.5")}}, false))
	second := filepath.Join(dir, "b.tar")
	writeFile(t, second, makeTar(t, []tarFile{{"y.cls", []byte("2")}, {"y.extra", []byte("?")}}, false))

	// A new extension in a later shard needs a schema.
	url := memURL(t)
	res, err := WebDataset(ctx, []string{first, second}, url, Options{})
	require.ErrorIs(t, err, ErrInvalidSource)
	require.ErrorContains(t, err, "b.tar:y")
	require.ErrorContains(t, err, `extension "extra"`)
	require.True(t, res.Created)
	require.Zero(t, openDataset(t, url).Len())

	s, err := schema.Parse([]byte(`[{name: cls, kind: class_label, class_names: [a, b, c]}, {name: score, dtype: float32, shape: []}]`))
	require.NoError(t, err)
	url = memURL(t)
	res, err = WebDataset(ctx, []string{first, second}, url, Options{Schema: &s})
	require.NoError(t, err)
	require.Equal(t, []string{"extra"}, res.Ignored)
	d := openDataset(t, url)
	require.Equal(t, []int64{2}, int64s(t, column(t, d, "cls", false)[1]))
	f, err := loch.As[float32](column(t, d, "score", false)[0].Data)
	require.NoError(t, err)
	require.Equal(t, []float32{0.5}, f)

	bad := filepath.Join(dir, "bad.tar")
	writeFile(t, bad, makeTar(t, []tarFile{{"x.cls", []byte("cat")}}, false))
	_, err = WebDataset(ctx, []string{bad}, memURL(t), Options{})
	require.ErrorIs(t, err, ErrInvalidSource)
	require.ErrorContains(t, err, "bad.tar:x: x.cls")

	dup := filepath.Join(dir, "dup.tar")
	writeFile(t, dup, makeTar(t, []tarFile{{"x.txt", []byte("a")}, {"x.txt", []byte("b")}}, false))
	_, err = WebDataset(ctx, []string{dup}, memURL(t), Options{})
	require.ErrorContains(t, err, `two "txt" files`)

	badImg := filepath.Join(dir, "img.tar")
	writeFile(t, badImg, makeTar(t, []tarFile{{"x.png", []byte("nope")}, {"y.png", encodePNG(t, testImage(1, 2, 2, 3))}}, false))
	_, err = WebDataset(ctx, []string{badImg}, memURL(t), Options{})
	require.ErrorIs(t, err, ErrBadImage)
	res, err = WebDataset(ctx, []string{badImg}, memURL(t), Options{SkipBad: true})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Rows)
	require.Equal(t, []string{badImg + ":x"}, res.SkippedNames)

	_, err = WebDataset(ctx, []string{filepath.Join(dir, "shard-{0..1}.tar")}, memURL(t), Options{})
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, "shard-0.tar")

	notTar := filepath.Join(dir, "x.tar")
	writeFile(t, notTar, bytes.Repeat([]byte("not a tar "), 100))
	_, err = WebDataset(ctx, []string{notTar}, memURL(t), Options{})
	require.ErrorIs(t, err, ErrInvalidSource)
	require.ErrorContains(t, err, "x.tar")
}
