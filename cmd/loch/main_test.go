package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/imaging/imagingtest"
	"github.com/lochdata/loch/schema"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"loch": main})
}

// TestScript runs the script tests in testdata/script. Besides the standard
// commands they have:
//
//	mkdata DIR                 create a dataset with test rows at DIR; sets $V1 and $V2,
//	                           and $V1P and $V2P to their first 8 digits
//	flipchunk DIR              flip one data byte of the largest chunk; sets $CHUNK to its key
//	exits CODE PROG [ARGS...]  run PROG, want exit status CODE and, for a failure,
//	                           exactly one stderr line starting "loch: "
//	cmppng FILE ROW            FILE holds the pixels of test image ROW
//	npyinfo FILE               print "descr=... shape=(...)" of a .npy file, checking its layout
//	tarls FILE                 print the member names of a tar file
//	untar FILE DIR             extract a tar file into DIR
//	imgfmt FILE                print the format and shape of an encoded image
//	jsonq FILE PATH WANT       the JSON value at PATH (dot-separated keys and list
//	                           indexes) of FILE (or stdout) is WANT, compactly encoded
//	setjson VAR FILE PATH      set $VAR to the JSON value at PATH of FILE: a string as
//	                           it is, any other value compactly encoded
//	jsonobj FILE               FILE (or stdout) holds exactly one JSON object and nothing else
//	samecols A B               the info --json documents A and B have the same columns:
//	                           names, dtypes, kinds, declared shapes, compression, class names
//	mkplaintar FILE            write a WebDataset shard without loch's .loch.json member
//	expandenv FILE             replace $VAR and ${VAR} in FILE with the script's variables
//	mkvec FILE D X...          write the float32 values X as a .npy file of shape [D] (as
//	                           many values as D) or [n, D]
//	httpserve DIR              serve DIR over http on 127.0.0.1 until the script ends; sets
//	                           $HTTP to its base URL (http://127.0.0.1:PORT)
//	mkbomb FILE W H            write a black grayscale png of W x H pixels whose IDAT is a
//	                           real zlib stream of them (imagingtest.PNGBomb)
func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mkdata":     cmdMkdata,
			"flipchunk":  cmdFlipChunk,
			"swapchunk":  cmdSwapChunk,
			"exits":      cmdExits,
			"cmppng":     cmdCmpPNG,
			"npyinfo":    cmdNPYInfo,
			"tarls":      cmdTarLs,
			"untar":      cmdUntar,
			"imgfmt":     cmdImgFmt,
			"jsonq":      cmdJSONQ,
			"setjson":    cmdSetJSON,
			"jsonobj":    cmdJSONObj,
			"samecols":   cmdSameCols,
			"mkplaintar": cmdMkPlainTar,
			"httpserve":  cmdHTTPServe,
			"expandenv":  cmdExpandEnv,
			"mkvec":      cmdMkVec,
			"mkbomb":     cmdMkBomb,
		},
	})
}

// testSchema has a column of each kind the CLI treats differently.
func testSchema() schema.Schema {
	return schema.Schema{Columns: []schema.Column{
		{Name: "image", Kind: schema.Image, Shape: schema.Shape{-1, -1, 3}, SampleCompression: schema.PNG},
		{Name: "thumb", Kind: schema.Image, Shape: schema.Shape{8, 8, 3}, SampleCompression: schema.JPEG},
		{Name: "label", Kind: schema.ClassLabel, Shape: schema.Shape{}, ClassNames: []string{"cat", "dog", "bird"}},
		{Name: "vec", DType: schema.Float32, Shape: schema.Shape{3}, ChunkCompression: schema.Zstd},
		{Name: "score", DType: schema.Float64, Shape: schema.Shape{}},
		{Name: "half", DType: schema.Float16, Shape: schema.Shape{2}},
		{Name: "caption", Kind: schema.TextKind},
		{Name: "meta", Kind: schema.JSONKind},
		{Name: "ragged", DType: schema.Float32, Shape: schema.Shape{-1}},
		{Name: "blob", DType: schema.Bytes},
	}}
}

// testImage returns the pixels of row i's image: (4+i) x (6+i) x 3.
func testImage(i int) ([]byte, []int) {
	shape := []int{4 + i, 6 + i, 3}
	pix := make([]byte, shape[0]*shape[1]*shape[2])
	for k := range pix {
		pix[k] = byte(k*7 + i*13)
	}
	return pix, shape
}

// testRow returns row i of the test dataset.
func testRow(i int) (loch.Row, error) {
	pix, shape := testImage(i)
	thumb := bytes.Repeat([]byte{byte(40 * i)}, 8*8*3)
	meta, err := loch.JSON(map[string]any{"row": i, "tags": []string{"a", "b"}})
	if err != nil {
		return nil, err
	}
	ragged := make([]float32, i+1)
	for k := range ragged {
		ragged[k] = float32(k) / 2
	}
	// float16 1.0 and -2.0
	half := loch.Sample{Shape: []int{2}, Data: []byte{0x00, 0x3c, 0x00, 0xc0}}
	row := loch.Row{
		"image":   loch.Tensor(shape, pix),
		"thumb":   loch.Tensor([]int{8, 8, 3}, thumb),
		"label":   loch.Scalar(int64(i % 3)),
		"vec":     loch.Tensor([]int{3}, []float32{float32(i), float32(i) + 0.5, -float32(i)}),
		"score":   loch.Scalar(0.25 * float64(i)),
		"half":    half,
		"caption": loch.String(fmt.Sprintf("a photo of row %d", i)),
		"meta":    meta,
		"ragged":  loch.Tensor([]int{i + 1}, ragged),
		"blob":    loch.Bytes([]byte{0xde, 0xad, byte(i)}),
	}
	if i == 4 {
		row["meta"] = loch.Null()
	}
	return row, nil
}

// makeTestData creates the test dataset at dir: rows 0..2 in a first
// commit, rows 3..4 in a second. It returns the two version ids.
func makeTestData(ctx context.Context, dir string) (v1, v2 string, err error) {
	d, err := loch.Create(ctx, dir, testSchema(), loch.WithAuthor("tester"))
	if err != nil {
		return "", "", err
	}
	defer d.Close()
	add := func(from, to int, msg string) (string, error) {
		for i := from; i < to; i++ {
			row, err := testRow(i)
			if err != nil {
				return "", err
			}
			if err := d.Append(ctx, row); err != nil {
				return "", fmt.Errorf("append row %d: %w", i, err)
			}
		}
		return d.Commit(ctx, msg)
	}
	if v1, err = add(0, 3, "add 3 rows"); err != nil {
		return "", "", err
	}
	if v2, err = add(3, 5, "add 2 rows"); err != nil {
		return "", "", err
	}
	return v1, v2, nil
}

func cmdMkdata(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mkdata DIR")
	}
	v1, v2, err := makeTestData(context.Background(), ts.MkAbs(args[0]))
	ts.Check(err)
	ts.Setenv("V1", v1)
	ts.Setenv("V2", v2)
	ts.Setenv("V1P", v1[:8])
	ts.Setenv("V2P", v2[:8])
}

func cmdFlipChunk(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: flipchunk DIR")
	}
	key, err := flipChunk(ts.MkAbs(args[0]))
	ts.Check(err)
	ts.Setenv("CHUNK", key)
}

// flipChunk flips the last data byte of the largest chunk of the dataset
// in the folder root and returns the chunk's key.
func flipChunk(root string) (string, error) {
	var largest string
	var size int64
	err := filepath.WalkDir(filepath.Join(root, "chunks"), func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		if info.Size() > size {
			largest, size = path, info.Size()
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if largest == "" {
		return "", fmt.Errorf("no chunk under %s", root)
	}
	data, err := os.ReadFile(largest)
	if err != nil {
		return "", err
	}
	data[len(data)-5] ^= 0xff // the last data byte, before the data checksum
	if err := os.WriteFile(largest, data, 0o644); err != nil {
		return "", err
	}
	key, err := filepath.Rel(root, largest)
	return filepath.ToSlash(key), err
}

// cmdSwapChunk copies the first chunk of COLUMN in DIR over its second (a
// sound object under another chunk's name; they must be of one size) and
// sets $CHUNK to the name overwritten.
func cmdSwapChunk(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: swapchunk DIR COLUMN")
	}
	root := ts.MkAbs(args[0])
	ctx := context.Background()
	d, err := loch.Open(ctx, root)
	ts.Check(err)
	defer d.Close()
	sc := d.Scan()
	ts.Check(sc.Load(ctx, 1))
	sch := sc.Schema()
	c, ok := sch.Column(args[1])
	if !ok {
		ts.Fatalf("no column %s", args[1])
	}
	ids := sc.Chunks(c.UID)
	if len(ids) < 2 {
		ts.Fatalf("column %s has %d chunks, want 2", args[1], len(ids))
	}
	from := filepath.Join(root, filepath.FromSlash(sc.ChunkKey(ids[0])))
	to := filepath.Join(root, filepath.FromSlash(sc.ChunkKey(ids[1])))
	data, err := os.ReadFile(from)
	ts.Check(err)
	if old, err := os.Stat(to); err != nil || old.Size() != int64(len(data)) {
		ts.Fatalf("chunks %s and %s are not of one size", from, to)
	}
	ts.Check(os.WriteFile(to, data, 0o644))
	ts.Setenv("CHUNK", sc.ChunkKey(ids[1]))
}

func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		got = ee.ExitCode()
	} else {
		ts.Check(err)
	}
	if got != want {
		ts.Fatalf("exit status %d, want %d", got, want)
	}
	if want != 0 {
		stderr := ts.ReadFile("stderr")
		if !regexp.MustCompile(`^loch: [^\n]+\n$`).MatchString(stderr) {
			ts.Fatalf("stderr is not one line starting with 'loch: ': %q", stderr)
		}
	}
}

func cmdCmpPNG(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: cmppng FILE ROW")
	}
	row, err := strconv.Atoi(args[1])
	ts.Check(err)
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	format, _, err := imaging.Config(data)
	ts.Check(err)
	if format != "png" {
		ts.Fatalf("%s is %s, want png", args[0], format)
	}
	pix, shape, err := imaging.Decode(data)
	ts.Check(err)
	wantPix, wantShape := testImage(row)
	if fmt.Sprint(shape) != fmt.Sprint(wantShape) || !bytes.Equal(pix, wantPix) {
		ts.Fatalf("%s: pixels of shape %v differ from test image %d (shape %v)", args[0], shape, row, wantShape)
	}
}

func cmdImgFmt(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: imgfmt FILE")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	format, shape, err := imaging.Config(data)
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "%s %v\n", format, shape)
}

func cmdNPYInfo(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: npyinfo FILE")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	descr, shape, err := parseNPY(data)
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "descr=%s shape=%s\n", descr, shape)
}

var npyDictRE = regexp.MustCompile(`^\{'descr': '([<|>][a-z][0-9]+)', 'fortran_order': False, 'shape': \(([0-9, ]*)\), \} *\n$`)

// parseNPY checks the layout of a version 1.0 .npy file: magic, header
// length, 64-byte alignment, and a data length that matches the shape.
func parseNPY(data []byte) (descr, shape string, err error) {
	if len(data) < 10 || string(data[:6]) != npyMagic || data[6] != 1 || data[7] != 0 {
		return "", "", errors.New("not a version 1.0 .npy file")
	}
	hlen := int(binary.LittleEndian.Uint16(data[8:]))
	if 10+hlen > len(data) || (10+hlen)%64 != 0 {
		return "", "", fmt.Errorf("header length %d: data would start at %d, not a multiple of 64 within %d bytes", hlen, 10+hlen, len(data))
	}
	m := npyDictRE.FindStringSubmatch(string(data[10 : 10+hlen]))
	if m == nil {
		return "", "", fmt.Errorf("bad header %q", data[10:10+hlen])
	}
	size, err := strconv.Atoi(m[1][2:])
	if err != nil {
		return "", "", err
	}
	n := 1
	for _, f := range strings.Split(m[2], ",") {
		if f = strings.TrimSpace(f); f != "" {
			d, err := strconv.Atoi(f)
			if err != nil {
				return "", "", err
			}
			n *= d
		}
	}
	if got := len(data) - 10 - hlen; got != n*size {
		return "", "", fmt.Errorf("%d data bytes, want %d for shape (%s) of %s", got, n*size, m[2], m[1])
	}
	return m[1], "(" + m[2] + ")", nil
}

func cmdTarLs(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: tarls FILE")
	}
	eachTarMember(ts, args[0], func(h *tar.Header, _ io.Reader) {
		fmt.Fprintln(ts.Stdout(), h.Name)
	})
}

// eachTarMember calls fn with each member of the tar file name, in order,
// and a reader of its contents.
func eachTarMember(ts *testscript.TestScript, name string, fn func(*tar.Header, io.Reader)) {
	f, err := os.Open(ts.MkAbs(name))
	ts.Check(err)
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		ts.Check(err)
		fn(h, tr)
	}
}

func cmdUntar(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: untar FILE DIR")
	}
	dir := ts.MkAbs(args[1])
	ts.Check(os.MkdirAll(dir, 0o755))
	eachTarMember(ts, args[0], func(h *tar.Header, r io.Reader) {
		if h.Name != filepath.Base(h.Name) {
			ts.Fatalf("tar member %q is not a plain file name", h.Name)
		}
		data, err := io.ReadAll(r)
		ts.Check(err)
		ts.Check(os.WriteFile(filepath.Join(dir, h.Name), data, 0o644))
	})
}

func cmdJSONQ(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: jsonq FILE PATH WANT")
	}
	got, err := json.Marshal(jsonAt(ts, args[0], args[1]))
	ts.Check(err)
	if (string(got) == args[2]) == neg {
		ts.Fatalf("%s = %s, want %s%s", args[1], got, map[bool]string{true: "not "}[neg], args[2])
	}
}

func cmdSetJSON(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: setjson VAR FILE PATH")
	}
	v := jsonAt(ts, args[1], args[2])
	s, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		ts.Check(err)
		s = string(b)
	}
	ts.Setenv(args[0], s)
}

func cmdJSONObj(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: jsonobj FILE")
	}
	dec := json.NewDecoder(strings.NewReader(ts.ReadFile(args[0])))
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		ts.Fatalf("%s is not a JSON object: %v", args[0], err)
	}
	var more any
	if err := dec.Decode(&more); err != io.EOF {
		ts.Fatalf("%s holds more than one JSON value (%v)", args[0], err)
	}
}

func cmdSameCols(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: samecols A B")
	}
	defs := func(file string) []infoColumnJSON {
		var doc infoJSON
		ts.Check(json.Unmarshal([]byte(ts.ReadFile(file)), &doc))
		for i := range doc.Columns {
			c := &doc.Columns[i]
			// Statistics and observed shapes are of the samples, not the
			// definition.
			c.MinShape, c.MaxShape, c.StoredBytes, c.RawBytes, c.Ratio, c.Samples = nil, nil, 0, 0, 0, 0
		}
		return doc.Columns
	}
	a, b := defs(args[0]), defs(args[1])
	if fmt.Sprint(a) != fmt.Sprint(b) {
		ts.Fatalf("columns differ:\n%s: %+v\n%s: %+v", args[0], a, args[1], b)
	}
}

func cmdMkPlainTar(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mkplaintar FILE")
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range []struct{ name, data string }{
		{"a.label.cls", "1"}, {"a.txt", "first"}, {"b.label.cls", "0"}, {"b.txt", "second"},
	} {
		ts.Check(tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.data))}))
		_, err := tw.Write([]byte(m.data))
		ts.Check(err)
	}
	ts.Check(tw.Close())
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), buf.Bytes(), 0o644))
}

func cmdExpandEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: expandenv FILE")
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(os.Expand(ts.ReadFile(args[0]), ts.Getenv)), 0o644))
}

func cmdHTTPServe(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: httpserve DIR")
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(ts.MkAbs(args[0]))))
	ts.Defer(srv.Close)
	ts.Setenv("HTTP", srv.URL)
}

// jsonAt returns the value at path (dot-separated keys and list indexes) of
// the JSON document in file.
func jsonAt(ts *testscript.TestScript, file, path string) any {
	var v any
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(file)), &v))
	for _, key := range strings.Split(path, ".") {
		switch t := v.(type) {
		case map[string]any:
			v = t[key]
		case []any:
			i, err := strconv.Atoi(key)
			ts.Check(err)
			if i < 0 || i >= len(t) {
				ts.Fatalf("%s: index %d out of range [0, %d)", path, i, len(t))
			}
			v = t[i]
		default:
			ts.Fatalf("%s: %q selects from %T", path, key, v)
		}
	}
	return v
}

func TestNPYHeader(t *testing.T) {
	for _, tc := range []struct {
		dtype schema.DType
		shape []int
		descr string
		tuple string
	}{
		{schema.Float32, []int{2, 3}, "<f4", "(2, 3)"},
		{schema.Int64, []int{5}, "<i8", "(5,)"},
		{schema.Uint8, []int{4, 6, 3}, "|u1", "(4, 6, 3)"},
		{schema.Bool, []int{}, "|b1", "()"},
		{schema.Float16, []int{7}, "<f2", "(7,)"},
		{schema.BFloat16, []int{1, 1}, "<u2", "(1, 1)"},
		{schema.Float64, []int{0}, "<f8", "(0,)"},
	} {
		n := schema.NumElements(tc.shape)
		var buf bytes.Buffer
		require.NoError(t, writeNPY(&buf, tc.dtype, tc.shape, make([]byte, n*tc.dtype.Size())))
		descr, shape, err := parseNPY(buf.Bytes())
		require.NoError(t, err, "%s %v", tc.dtype, tc.shape)
		require.Equal(t, tc.descr, descr)
		require.Equal(t, tc.tuple, shape)
	}
	_, err := npyHeader(schema.Text, []int{3})
	require.ErrorContains(t, err, "no .npy form")
	for _, dt := range schema.DTypes() { // every fixed-size dtype has a form of its size
		descr, err := npyDescr(dt)
		if dt.Size() == 0 {
			require.Error(t, err, dt)
			continue
		}
		require.NoError(t, err, dt)
		require.Equal(t, strconv.Itoa(dt.Size()), descr[2:], dt)
	}
	require.Error(t, writeNPY(io.Discard, schema.Float32, []int{2}, make([]byte, 4)), "data shorter than the shape")
}

func TestShapeRange(t *testing.T) {
	for _, tc := range []struct {
		col  schema.Entry
		want string
	}{
		{schema.Entry{Stats: schema.Stats{MinShape: []int{32, 48, 3}, MaxShape: []int{480, 640, 3}}}, "[32..480, 48..640, 3]"},
		{schema.Entry{Stats: schema.Stats{MinShape: []int{3}, MaxShape: []int{3}}}, "[3]"},
		{schema.Entry{Column: schema.Column{Shape: schema.Shape{-1, 4}}}, "[?, 4]"},
		{schema.Entry{Column: schema.Column{Shape: schema.Shape{}}}, "[]"},
		{schema.Entry{}, "any"},
	} {
		require.Equal(t, tc.want, shapeRange(&tc.col))
	}
}

func TestPanicIsOneLine(t *testing.T) {
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"version"}, nil, panicWriter{}, &stderr)
	require.Equal(t, exitError, code)
	require.Equal(t, "loch: internal error: write refused\n", stderr.String())
}

// panicWriter panics on every write.
type panicWriter struct{}

func (panicWriter) Write([]byte) (int, error) { panic("write\nrefused") }

func TestInterrupted(t *testing.T) {
	dir := t.TempDir()
	_, _, err := makeTestData(context.Background(), filepath.Join(dir, "ds"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // as if Ctrl-C came before the first read
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"export", filepath.Join(dir, "ds"), filepath.Join(dir, "out")}, nil, &stdout, &stderr)
	require.Equal(t, exitError, code)
	require.Equal(t, "loch: interrupted\n", stderr.String())
	entries, err := os.ReadDir(filepath.Join(dir, "out"))
	if err == nil {
		require.Empty(t, entries, "an interrupted export leaves no partial shard")
	}
}

// TestExitAfterInterrupt: after Ctrl-C, a command that has not returned
// within the grace period is ended (exit status 1, "loch: interrupted");
// one that returns in time, or was never interrupted, is left alone.
func TestExitAfterInterrupt(t *testing.T) {
	exited := make(chan int, 1)
	exit := func(code int) { exited <- code }

	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	hung := make(chan struct{}) // a command that never returns
	cancel()
	exitAfterInterrupt(ctx, hung, time.Millisecond, func() {}, &stderr, exit)
	require.Equal(t, exitError, <-exited)
	require.Equal(t, "loch: interrupted\n", stderr.String())

	returned := make(chan struct{})
	close(returned)
	exitAfterInterrupt(ctx, returned, time.Hour, func() {}, &stderr, exit) // interrupted, but it returned
	exitAfterInterrupt(context.Background(), returned, time.Millisecond, func() {}, &stderr, exit)
	require.Empty(t, exited, "a command that returned is not ended")
}

func TestVersionFlag(t *testing.T) {
	var short, full, stderr bytes.Buffer
	require.Equal(t, exitOK, run(context.Background(), []string{"--version"}, nil, &short, &stderr))
	require.Equal(t, exitOK, run(context.Background(), []string{"version"}, nil, &full, &stderr))
	first, _, _ := strings.Cut(full.String(), "\n")
	require.Equal(t, first+"\n", short.String())
	require.Empty(t, stderr.String())
}

func cmdMkBomb(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: mkbomb FILE W H")
	}
	w, err := strconv.Atoi(args[1])
	ts.Check(err)
	h, err := strconv.Atoi(args[2])
	ts.Check(err)
	path := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(filepath.Dir(path), 0o755))
	ts.Check(os.WriteFile(path, imagingtest.PNGBomb(w, h), 0o644))
}

func cmdMkVec(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: mkvec FILE D X...")
	}
	dim, err := strconv.Atoi(args[1])
	ts.Check(err)
	var vals []float32
	for _, a := range args[2:] {
		f, err := strconv.ParseFloat(a, 32)
		ts.Check(err)
		vals = append(vals, float32(f))
	}
	shape := []int{dim}
	if len(vals) != dim {
		shape = []int{len(vals) / dim, dim}
	}
	head, err := npyHeader(schema.Float32, shape)
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), append(head, loch.AsBytes(vals)...), 0o644))
}
