package loch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/schema"
)

var ctx = context.Background()

func mustCreate(t *testing.T, s schema.Schema, opts ...Option) (*Dataset, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ds")
	d, err := Create(ctx, dir, s, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d, dir
}

func TestCreateOpen(t *testing.T) {
	s := schema.Schema{Columns: []schema.Column{
		{Name: "x", DType: schema.Float32, Shape: schema.Shape{3}},
		{Name: "label", Kind: schema.ClassLabel, ClassNames: []string{"a", "b"}},
		{Name: "note", Kind: schema.TextKind},
	}}
	d, dir := mustCreate(t, s)
	require.EqualValues(t, 0, d.Len())
	v0 := d.Version()

	_, err := Create(ctx, dir, s)
	require.ErrorIs(t, err, ErrExists)

	require.NoError(t, d.Append(ctx, Row{"x": Tensor([]int{3}, []float32{1, 2, 3}), "label": Scalar[int64](1), "note": String("hi")}))
	require.NoError(t, d.Append(ctx, Row{"x": Tensor([]int{3}, []float32{4, 5, 6})}))
	require.EqualValues(t, 0, d.Len(), "staged rows are invisible before commit")
	v1, err := d.Commit(ctx, "two rows")
	require.NoError(t, err)
	require.NotEqual(t, v0, v1)

	d2 := mustOpen(t, dir)
	require.EqualValues(t, 2, d2.Len())
	require.Equal(t, v1, d2.Version())
	x := mustColumn(t, d2, "x")
	s1, err := x.Read(ctx, 1, nil)
	require.NoError(t, err)
	f, err := As[float32](s1.Data)
	require.NoError(t, err)
	require.Equal(t, []float32{4, 5, 6}, f)
	note := mustColumn(t, d2, "note")
	n0, err := note.Read(ctx, 0, nil)
	require.NoError(t, err)
	require.Equal(t, "hi", string(n0.Data))
	n1, err := note.Read(ctx, 1, nil)
	require.NoError(t, err)
	require.True(t, n1.Null)

	old := mustOpen(t, dir, WithVersion(v0))
	require.EqualValues(t, 0, old.Len())
	require.ErrorIs(t, old.Append(ctx, Row{}), ErrReadOnly)

	log, err := d2.Log(ctx)
	require.NoError(t, err)
	require.Len(t, log, 2)
	require.Equal(t, "two rows", log[0].Message)
	require.Equal(t, v0, log[1].ID)

	_, err = Open(ctx, filepath.Join(t.TempDir(), "nothing"))
	require.ErrorIs(t, err, ErrNotFound)
	_, err = Open(ctx, dir, WithVersion(strings.Repeat("ab", 16)))
	require.ErrorIs(t, err, ErrNotFound)
}

// model is the expected content of a dataset: rows as column -> sample.
type model struct {
	ids  []uint64
	rows []Row
}

// add records rows appended with the ids from next on.
func (m *model) add(next uint64, rows []Row) {
	for i := range rows {
		m.ids = append(m.ids, next+uint64(i))
	}
	m.rows = append(m.rows, rows...)
}

// randomColumns returns random columns named c0, c1 and on: as many as
// the loop draws, at least 2 and fewer than 2+spread.
func randomColumns(r *rand.Rand, spread int) []schema.Column {
	var cols []schema.Column
	for i := 0; i < 2+r.IntN(spread); i++ {
		cols = append(cols, randomColumn(r, fmt.Sprintf("c%d", i)))
	}
	return cols
}

func randomColumn(r *rand.Rand, name string) schema.Column {
	c := schema.Column{Name: name, ChunkBytes: 1024 * (1 + r.IntN(4))}
	switch r.IntN(6) {
	case 0:
		c.DType = schema.Text
	case 1:
		c.DType = schema.JSON
	case 2:
		c.Kind = schema.Image
		c.DType = schema.Uint8
		c.SampleCompression = []schema.SampleCompression{schema.PNG, schema.SampleNone}[r.IntN(2)]
	default:
		dts := schema.DTypes()
		for {
			c.DType = dts[r.IntN(len(dts))]
			if !c.DType.Variable() {
				break
			}
		}
		if r.IntN(2) == 0 {
			c.Shape = schema.Shape{1 + r.IntN(4), 1 + r.IntN(3)}
		} else if r.IntN(2) == 0 {
			c.Shape = schema.Shape{-1, 2}
		}
	}
	if c.SampleCompression == "" || c.SampleCompression == schema.SampleNone {
		c.ChunkCompression = []schema.ChunkCodec{schema.CodecNone, schema.LZ4, schema.Zstd}[r.IntN(3)]
	}
	return c
}

// randomSample returns a random value for column c, null one time in
// ten. Text and json columns whose name ends in an even digit hold few
// distinct values (stored in dictionary chunks, docs/format.md §3.3), the
// others many.
func randomSample(r *rand.Rand, c schema.Column) Sample {
	if r.IntN(10) == 0 {
		return Null()
	}
	few := strings.ContainsAny(c.Name[len(c.Name)-1:], "02468")
	switch {
	case c.DType == schema.Text && few:
		return String([]string{"", "cat", "dog", strings.Repeat("é", 40)}[r.IntN(4)])
	case c.DType == schema.Text:
		return String(strings.Repeat("é", r.IntN(700)))
	case c.DType == schema.JSON && few:
		s, _ := JSON(map[string]any{"k": r.IntN(3), "pad": "xxxxxxxxxxxxxxxxxxxx"})
		return s
	case c.DType == schema.JSON:
		s, _ := JSON(map[string]any{"k": r.IntN(100), "pad": strings.Repeat("x", r.IntN(50))})
		return s
	case c.Kind == schema.Image:
		h, w := 1+r.IntN(30), 1+r.IntN(30)
		pix := make([]byte, h*w*3)
		for i := range pix {
			pix[i] = byte(r.IntN(256))
		}
		return Tensor([]int{h, w, 3}, pix)
	}
	shape := []int{}
	if c.Shape != nil {
		shape = slices.Clone([]int(c.Shape))
		for i := range shape {
			if shape[i] < 0 {
				shape[i] = r.IntN(300) // sometimes beyond the chunk size: split samples
			}
		}
	} else {
		shape = []int{r.IntN(5)}
	}
	b := make([]byte, schema.NumElements(shape)*c.DType.Size())
	for i := range b {
		b[i] = byte(r.IntN(3))
	}
	if c.DType == schema.Bool {
		for i := range b {
			b[i] &= 1
		}
	}
	return Sample{Shape: shape, Data: b}
}

func checkModel(t *testing.T, d *Dataset, m *model) {
	t.Helper()
	require.EqualValues(t, len(m.rows), d.Len())
	for i := range m.rows {
		id := mustRowID(t, d, int64(i))
		require.Equal(t, m.ids[i], id, "row %d", i)
	}
	for _, c := range d.Schema().Columns {
		col := mustColumn(t, d, c.Name)
		all, err := col.ReadRange(ctx, 0, d.Len())
		require.NoError(t, err)
		for i, want := range m.rows {
			got, err := col.Read(ctx, int64(i), nil)
			require.NoError(t, err)
			for _, g := range []Sample{got, all[i]} {
				w, ok := want[c.Name]
				if !ok || w.Null {
					require.True(t, g.Null, "column %s row %d: want null", c.Name, i)
					continue
				}
				require.False(t, g.Null, "column %s row %d", c.Name, i)
				require.True(t, bytes.Equal(w.Data, g.Data), "column %s row %d: %d vs %d bytes", c.Name, i, len(w.Data), len(g.Data))
				if c.DType.Variable() {
					require.Equal(t, []int{len(w.Data)}, g.Shape)
				} else {
					require.Equal(t, w.Shape, g.Shape, "column %s row %d", c.Name, i)
				}
			}
		}
	}
}

// TestRoundTripProperty writes random schemas (every dtype, ragged shapes,
// nulls, split samples, every codec, png) through several commits with
// updates, deletes and added columns, and checks every version against an
// in-memory model.
// TestParallelismBound: a parallelism above MaxParallelism is refused by
// Create and Open, naming it and the bound, before anything is written
// (issue 35 item 3); the bound itself is accepted.
func TestParallelismBound(t *testing.T) {
	s := schema.Schema{Columns: []schema.Column{{Name: "x", DType: schema.Int64}}}
	dir := filepath.Join(t.TempDir(), "ds")
	_, err := Create(ctx, dir, s, WithParallelism(1<<40))
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, "parallelism 1099511627776: want at most 4096")
	require.NoDirExists(t, dir)
	d, err := Create(ctx, dir, s, WithParallelism(MaxParallelism))
	require.NoError(t, err)
	require.NoError(t, d.Close())
	_, err = Open(ctx, dir, WithParallelism(MaxParallelism+1))
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, "parallelism 4097: want at most 4096")
}

func TestRoundTripProperty(t *testing.T) {
	r := testseed.Rand(t, 7)
	for round := 0; round < 4; round++ {
		cols := randomColumns(r, 4)
		d, dir := mustCreate(t, schema.Schema{Columns: cols}, WithCacheBytes(int64(r.IntN(2))<<20))
		m := &model{}
		var versions []string
		var models []model
		for step := 0; step < 5; step++ {
			n := r.IntN(60)
			var rows []Row
			for i := 0; i < n; i++ {
				row := Row{}
				for _, c := range d.stageColumns() {
					row[c.Name] = randomSample(r, c)
				}
				rows = append(rows, row)
			}
			require.NoError(t, d.Extend(ctx, rows))
			// deletes and updates of committed rows
			if len(m.rows) > 0 && r.IntN(2) == 0 {
				k := r.IntN(len(m.rows))
				require.NoError(t, d.Delete(ctx, m.ids[k]))
				m.ids = slices.Delete(m.ids, k, k+1)
				m.rows = slices.Delete(m.rows, k, k+1)
			}
			// An updated row keeps its place (docs/format.md §2.5).
			if len(m.rows) > 0 && r.IntN(2) == 0 {
				k := r.IntN(len(m.rows))
				c := d.stageColumns()[r.IntN(len(d.stageColumns()))]
				s := randomSample(r, c)
				require.NoError(t, d.Update(ctx, m.ids[k], Row{c.Name: s}))
				nr := Row{}
				for kk, v := range m.rows[k] {
					nr[kk] = v
				}
				nr[c.Name] = s
				m.rows[k] = normalize(d, []Row{nr})[0]
			}
			start := d.nextRowID(t)
			for i := range rows {
				m.ids = append(m.ids, start+uint64(i))
			}
			m.rows = append(m.rows, normalize(d, rows)...)
			if r.IntN(3) == 0 {
				c := randomColumn(r, fmt.Sprintf("added%d", step))
				require.NoError(t, d.AddColumn(ctx, c))
			}
			v, err := d.Commit(ctx, fmt.Sprintf("step %d", step))
			require.NoError(t, err)
			checkModel(t, d, m)
			versions = append(versions, v)
			models = append(models, model{ids: slices.Clone(m.ids), rows: slices.Clone(m.rows)})
		}
		for i, v := range versions {
			old, err := Open(ctx, dir, WithVersion(v))
			require.NoError(t, err)
			checkModel(t, old, &models[i])
			old.Close()
		}
		n, problems, err := d.Verify(ctx)
		require.NoError(t, err)
		require.Empty(t, problems)
		require.Greater(t, n, 5)
	}
}

// stageColumns lists the columns a row may hold now (committed and staged).
func (d *Dataset) stageColumns() []schema.Column {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if d.stage != nil {
		return slices.Clone(d.stage.cols)
	}
	return d.current().man.Schema.Columns
}

func (d *Dataset) nextRowID(t *testing.T) uint64 {
	root, err := d.latestRoot(ctx)
	require.NoError(t, err)
	return root.NextRowID
}

// normalize turns rows as written into rows as read: png images decode to
// the same pixels, text shapes become [len].
func normalize(d *Dataset, rows []Row) []Row {
	var out []Row
	for _, r := range rows {
		nr := Row{}
		for k, s := range r {
			if s.Encoding == schema.PNG {
				pix, shape, _ := imaging.Decode(s.Data)
				s = Sample{Shape: shape, Data: pix}
			}
			nr[k] = s
		}
		out = append(out, nr)
	}
	_ = d
	return out
}

func TestBadInputStagesNothing(t *testing.T) {
	d, _ := mustCreate(t, schema.Schema{Columns: []schema.Column{
		{Name: "x", DType: schema.Float32, Shape: schema.Shape{2}},
		{Name: "j", Kind: schema.JSONKind},
		{Name: "label", Kind: schema.ClassLabel, ClassNames: []string{"a", "b"}},
		{Name: "img", Kind: schema.Image, SampleCompression: schema.PNG},
	}})
	good := Row{"x": Tensor([]int{2}, []float32{1, 2})}
	cases := map[string]Row{
		"unknown column": {"y": Scalar[int8](1)},
		"wrong shape":    {"x": Tensor([]int{3}, []float32{1, 2, 3})},
		"wrong dtype":    {"x": Tensor([]int{2}, []float64{1, 2})},
		"bad json":       {"j": Bytes([]byte("{nope"))},
		"label range":    {"label": Scalar[int64](5)},
		"not a png":      {"img": Encoded(schema.PNG, []byte("garbage"), []int{2, 2, 3})},
	}
	for name, row := range cases {
		err := d.Extend(ctx, []Row{good, row})
		require.ErrorIs(t, err, ErrInvalidArgument, name)
		require.NotEmpty(t, err.Error())
	}
	_, err := d.Commit(ctx, "nothing")
	require.NoError(t, err)
	require.EqualValues(t, 0, d.Len(), "the good rows of failed batches were not staged")
	require.Error(t, d.Delete(ctx, 12345))
}

// TestConcurrentAppendsRebase races appending handles on one dataset: every
// commit lands, every row is present once, ids are unique.
func TestConcurrentAppendsRebase(t *testing.T) {
	_, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "w", DType: schema.Int64}}})
	const writers, per = 4, 5
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		go func() {
			d, err := Open(ctx, dir)
			if err != nil {
				errs <- err
				return
			}
			defer d.Close()
			for k := 0; k < per; k++ {
				if err := d.Append(ctx, Row{"w": Scalar(int64(w*100 + k))}); err != nil {
					errs <- err
					return
				}
				if _, err := d.Commit(ctx, "w"); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < writers; w++ {
		require.NoError(t, <-errs)
	}
	d := mustOpen(t, dir)
	require.EqualValues(t, writers*per, d.Len())
	col, _ := d.Column("w")
	seen := map[int64]bool{}
	ids := map[uint64]bool{}
	for i := int64(0); i < d.Len(); i++ {
		s, err := col.Read(ctx, i, nil)
		require.NoError(t, err)
		v, _ := As[int64](s.Data)
		require.False(t, seen[v[0]])
		seen[v[0]] = true
		id := mustRowID(t, d, i)
		require.False(t, ids[id])
		ids[id] = true
	}
	log, err := d.Log(ctx)
	require.NoError(t, err)
	require.Len(t, log, writers*per+1)
}

// TestConflictingDeleteFails: a delete rebases onto another writer's
// append, and fails with ErrConflict, changing nothing, when the other
// writer deleted the same row.
func TestConflictingDeleteFails(t *testing.T) {
	d1, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "w", DType: schema.Int64}}})
	require.NoError(t, d1.Append(ctx, Row{"w": Scalar[int64](1)}))
	_, err := d1.Commit(ctx, "one")
	require.NoError(t, err)
	d2 := mustOpen(t, dir)
	id, _ := d1.RowID(ctx, 0)
	require.NoError(t, d1.Delete(ctx, id))
	require.NoError(t, d2.Append(ctx, Row{"w": Scalar[int64](2)}))
	_, err = d2.Commit(ctx, "append")
	require.NoError(t, err)
	_, err = d1.Commit(ctx, "delete")
	require.NoError(t, err, "a delete rebases onto an append")
	require.EqualValues(t, 1, d1.Len())

	id, _ = d1.RowID(ctx, 0)
	require.NoError(t, d1.Delete(ctx, id))
	require.NoError(t, d2.Refresh(ctx))
	require.NoError(t, d2.Delete(ctx, id))
	_, err = d2.Commit(ctx, "delete")
	require.NoError(t, err)
	_, err = d1.Commit(ctx, "delete")
	require.ErrorIs(t, err, ErrConflict)
	require.ErrorContains(t, err, fmt.Sprintf("row ids %d;", id))
	require.NoError(t, d1.Refresh(ctx))
	require.EqualValues(t, 0, d1.Len(), "the conflicting commit changed nothing")
}

// countingStore counts the bytes written through it.
type countingStore struct {
	storageStore
	written map[string]int
}

// TestCommitMetadataGrowsWithChange appends 1,000 rows to a small and to a
// 100x larger dataset: the metadata written by the commit is the same size.
func TestCommitMetadataGrowsWithChange(t *testing.T) {
	measure := func(existing int) int {
		d, _ := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "v", DType: schema.Int64}, {Name: "t", Kind: schema.TextKind}}})
		rows := make([]Row, existing)
		for i := range rows {
			rows[i] = Row{"v": Scalar(int64(i)), "t": String(fmt.Sprint(i))}
		}
		require.NoError(t, d.Extend(ctx, rows))
		_, err := d.Commit(ctx, "base")
		require.NoError(t, err)
		cs := &countingStore{storageStore: d.store, written: map[string]int{}}
		d.store = cs
		for i := 0; i < 1000; i++ {
			require.NoError(t, d.Append(ctx, Row{"v": Scalar(int64(i)), "t": String("new")}))
		}
		_, err = d.Commit(ctx, "append 1000")
		require.NoError(t, err)
		meta := 0
		for k, n := range cs.written {
			if !strings.HasPrefix(k, "chunks/") {
				meta += n
			}
		}
		return meta
	}
	small, large := measure(1000), measure(100000)
	t.Logf("metadata written by a 1,000-row append: %d bytes on 1,000 rows, %d bytes on 100,000 rows", small, large)
	require.InDelta(t, small, large, 64, "commit metadata must not grow with the dataset")
}

func TestCorruptChunkDetected(t *testing.T) {
	d, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "v", DType: schema.Float64, Shape: schema.Shape{4}}}})
	for i := 0; i < 10; i++ {
		require.NoError(t, d.Append(ctx, Row{"v": Tensor([]int{4}, []float64{1, 2, 3, float64(i)})}))
	}
	_, err := d.Commit(ctx, "ten")
	require.NoError(t, err)
	var chunkPath string
	filepath.WalkDir(filepath.Join(dir, "chunks"), func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			chunkPath = p
		}
		return nil
	})
	require.NotEmpty(t, chunkPath)
	b, err := os.ReadFile(chunkPath)
	require.NoError(t, err)
	b[len(b)-20] ^= 1 // a data byte
	require.NoError(t, os.WriteFile(chunkPath, b, 0o644))

	d2 := mustOpen(t, dir)
	col, _ := d2.Column("v")
	_, err = col.ReadRange(ctx, 0, 10)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), "chunks/")
	_, problems, err := d2.Verify(ctx)
	require.NoError(t, err)
	require.Len(t, problems, 1)
	rel, _ := filepath.Rel(dir, chunkPath)
	require.Equal(t, filepath.ToSlash(rel), problems[0].Key)
}

func TestTruncatedManifestAndNewerFormat(t *testing.T) {
	d, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "v", DType: schema.Int64}}})
	require.NoError(t, d.Append(ctx, Row{"v": Scalar[int64](1)}))
	_, err := d.Commit(ctx, "one")
	require.NoError(t, err)
	files, _ := filepath.Glob(filepath.Join(dir, "manifests", "*"))
	require.NotEmpty(t, files)
	for _, f := range files {
		b, _ := os.ReadFile(f)
		require.NoError(t, os.WriteFile(f, b[:len(b)/2], 0o644))
	}
	_, err = Open(ctx, dir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), "manifests/")

	d2, dir2 := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "v", DType: schema.Int64}}})
	d2.Close()
	p := filepath.Join(dir2, "log", fmt.Sprintf("%020d", 1))
	b, _ := os.ReadFile(p)
	b[5] = 9
	require.NoError(t, os.WriteFile(p, b, 0o644))
	_, err = Open(ctx, dir2)
	require.ErrorIs(t, err, ErrNewerFormat)
	require.True(t, errors.Is(err, ErrNewerFormat))
}

// TestConcurrentReaders reads one handle from many goroutines (run with
// -race) while another handle commits.
func TestConcurrentReaders(t *testing.T) {
	d, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{
		{Name: "v", DType: schema.Int32, Shape: schema.Shape{-1}, ChunkBytes: 2048, ChunkCompression: schema.LZ4},
	}}, WithCacheBytes(64<<10))
	for i := 0; i < 500; i++ {
		v := make([]int32, i%50)
		for k := range v {
			v[k] = int32(i)
		}
		require.NoError(t, d.Append(ctx, Row{"v": Tensor([]int{len(v)}, v)}))
	}
	_, err := d.Commit(ctx, "500")
	require.NoError(t, err)
	col := mustColumn(t, d, "v")
	w := mustOpen(t, dir)
	done := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			r := rand.New(rand.NewPCG(uint64(g), 0))
			for k := 0; k < 300; k++ {
				i := r.Int64N(500)
				s, err := col.Read(ctx, i, nil)
				if err != nil {
					done <- err
					return
				}
				v, _ := As[int32](s.Data)
				if len(v) != int(i%50) || (len(v) > 0 && v[0] != int32(i)) {
					done <- fmt.Errorf("row %d: got %v", i, v)
					return
				}
			}
			done <- nil
		}()
	}
	require.NoError(t, w.Append(ctx, Row{"v": Tensor([]int{1}, []int32{9})}))
	_, err = w.Commit(ctx, "one more")
	require.NoError(t, err)
	for g := 0; g < 8; g++ {
		require.NoError(t, <-done)
	}
	require.EqualValues(t, 500, col.Len(), "a ColumnReader stays on its snapshot")
}

func TestLinkFetch(t *testing.T) {
	d, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "ref", Kind: schema.Link}, {Name: "t", Kind: schema.TextKind}}})
	// Beside the dataset: under the default local root.
	src := filepath.Join(filepath.Dir(dir), "orig.bin")
	require.NoError(t, os.WriteFile(src, []byte("original bytes"), 0o644))
	require.NoError(t, d.Append(ctx, Row{"ref": String(src)}))
	require.NoError(t, d.Append(ctx, Row{"ref": String(src + ".missing")}))
	_, err := d.Commit(ctx, "links")
	require.NoError(t, err)
	col, _ := d.Column("ref")
	b, err := col.Fetch(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, "original bytes", string(b))
	_, err = col.Fetch(ctx, 1)
	require.ErrorIs(t, err, ErrNotFound)
	require.Contains(t, err.Error(), "orig.bin.missing")
	tc, _ := d.Column("t")
	_, err = tc.Fetch(ctx, 0)
	require.ErrorIs(t, err, ErrInvalidArgument)
}

// TestPNGChannels stores opaque RGBA, RGB and gray tensors in a png column:
// each reads back with its own shape and exact pixels.
func TestPNGChannels(t *testing.T) {
	d, _ := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "img", Kind: schema.Image, SampleCompression: schema.PNG}}})
	var want []Sample
	for _, c := range []int{4, 3, 1} {
		pix := make([]byte, 6*5*c)
		for i := range pix {
			pix[i] = byte(i)
			if c == 4 && i%4 == 3 {
				pix[i] = 255
			}
		}
		s := Tensor([]int{6, 5, c}, pix)
		want = append(want, s)
		require.NoError(t, d.Append(ctx, Row{"img": s}))
	}
	_, err := d.Commit(ctx, "channels")
	require.NoError(t, err)
	col, _ := d.Column("img")
	for i, w := range want {
		got, err := col.Read(ctx, int64(i), nil)
		require.NoError(t, err)
		require.Equal(t, w.Shape, got.Shape)
		require.Equal(t, w.Data, got.Data)
	}
}

// TestExtendReportsTheFirstBadRow: rows are prepared in parallel, and the
// error names the first bad row, whichever worker finds a bad one first;
// the column is named once; nothing is staged.
func TestExtendReportsTheFirstBadRow(t *testing.T) {
	s := schema.Schema{Columns: []schema.Column{{Name: "x", DType: schema.Float32, Shape: schema.Shape{3}}}}
	d, _ := mustCreate(t, s, WithParallelism(8))
	good := Tensor([]int{3}, []float32{1, 2, 3})
	bad := Tensor([]int{4}, []float32{1, 2, 3, 4})
	for _, first := range []int{0, 5, 499} {
		for range 5 { // workers race to their first bad row
			rows := make([]Row, 500)
			for i := range rows {
				rows[i] = Row{"x": good}
				if i >= first && i%2 == first%2 {
					rows[i] = Row{"x": bad}
				}
			}
			err := d.Extend(ctx, rows)
			require.ErrorIs(t, err, ErrInvalidArgument)
			require.Contains(t, err.Error(), fmt.Sprintf(": row %d: column \"x\" (generic float32): shape [4], want [3]", first))
			require.Equal(t, 1, strings.Count(err.Error(), `column "x"`), err.Error())
		}
	}
	_, err := d.Commit(ctx, "nothing")
	require.NoError(t, err)
	require.EqualValues(t, 0, d.Len(), "a refused extend stages nothing")
}
