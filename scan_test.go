package loch

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/schema"
)

// scanSample reads a row's sample through the Scan API as a scheduling
// reader does: slot, planned reads, fetches, sample.
func scanSample(t *testing.T, sc *Scan, pos int64, uid int, sparse bool) (Sample, []*Fetched) {
	t.Helper()
	row, err := sc.Locate(pos)
	require.NoError(t, err)
	slot := sc.Slot(row, uid)
	var got []*Fetched
	for _, r := range sc.Reads(slot, sparse) {
		f, err := sc.Fetch(ctx, r)
		require.NoError(t, err)
		require.LessOrEqual(t, f.Mem(), sc.Estimate(r), "the estimate bounds the memory")
		got = append(got, f)
	}
	require.Len(t, got, slot.Pieces())
	s, err := sc.Sample(slot, got)
	require.NoError(t, err)
	return s, got
}

// TestScanMatchesColumn reads every sample of random schemas (every dtype,
// ragged shapes, nulls, split samples, every codec, png) through the Scan
// API, planned dense and sparse, and compares with Column reads.
func TestScanMatchesColumn(t *testing.T) {
	r := testseed.Rand(t, 11)
	var cols []schema.Column
	for i := range 6 {
		cols = append(cols, randomColumn(r, string(rune('a'+i))))
	}
	d, _ := mustCreate(t, schema.Schema{Columns: cols})
	for range 2 {
		for range 40 {
			row := Row{}
			for _, c := range cols {
				row[c.Name] = randomSample(r, c)
			}
			require.NoError(t, d.Append(ctx, row))
		}
		_, err := d.Commit(ctx, "rows")
		require.NoError(t, err)
	}
	require.NoError(t, d.Delete(ctx, 3, 41))
	_, err := d.Commit(ctx, "delete")
	require.NoError(t, err)

	sc := loadedScan(t, d, 4)
	require.Equal(t, d.Len(), sc.Len())
	var ids []uint64
	for pos := range sc.Len() {
		id, err := sc.RowID(pos)
		require.NoError(t, err)
		want := mustRowID(t, d, pos)
		require.Equal(t, want, id)
		ids = append(ids, id)
	}
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	pos, err := sc.Positions(ids)
	require.NoError(t, err)
	for i, p := range pos {
		id, _ := sc.RowID(p)
		require.Equal(t, ids[i], id)
	}
	sch := sc.Schema()
	for _, c := range sch.Columns {
		var sum int64
		for _, b := range sc.Blocks(c.UID) {
			require.Positive(t, b)
			sum += b
		}
		require.Equal(t, sc.Len(), sum, "column %s: blocks tile the rows", c.Name)
		col := mustColumn(t, d, c.Name)
		for p := range sc.Len() {
			want, err := col.ReadEncoded(ctx, p)
			require.NoError(t, err)
			decoded, err := col.Read(ctx, p, nil)
			require.NoError(t, err)
			for _, sparse := range []bool{false, true} {
				got, _ := scanSample(t, sc, p, c.UID, sparse)
				require.Equal(t, want.Null, got.Null, "column %s row %d", c.Name, p)
				if want.Null {
					continue
				}
				require.Equal(t, want.Shape, got.Shape)
				require.Equal(t, want.Encoding, got.Encoding)
				require.True(t, bytes.Equal(want.Data, got.Data), "column %s row %d", c.Name, p)
				out, err := got.DecodeInto(make([]byte, got.DecodedLen()))
				require.NoError(t, err)
				require.True(t, bytes.Equal(decoded.Data, out.Data), "column %s row %d decoded", c.Name, p)
			}
		}
	}
}

// TestScanSparsePlansReadByRange: a sparse plan reads one sample's blocks
// by range, whatever the chunk's codec (format 1.1 compresses blocks
// alone); a dense plan reads whole chunks.
func TestScanSparsePlansReadByRange(t *testing.T) {
	codecs := []schema.ChunkCodec{schema.CodecNone, schema.LZ4, schema.Zstd}
	var cols []schema.Column
	for _, c := range codecs {
		cols = append(cols, schema.Column{Name: string(c), DType: schema.Uint8, Shape: schema.Shape{1000}, ChunkBytes: 1 << 20, ChunkCompression: c})
	}
	d, _ := mustCreate(t, schema.Schema{Columns: cols})
	r := rand.New(rand.NewPCG(7, 7))
	vals := make([][]byte, 200)
	for i := range vals {
		vals[i] = make([]byte, 1000)
		for k := range vals[i] {
			vals[i][k] = byte(r.Uint32()) // incompressible: the chunks stay larger than two blocks
		}
		row := Row{}
		for _, c := range codecs {
			row[string(c)] = Tensor([]int{1000}, vals[i])
		}
		require.NoError(t, d.Append(ctx, row))
	}
	_, err := d.Commit(ctx, "rows")
	require.NoError(t, err)
	sc := loadedScan(t, d, 1)
	sch := sc.Schema()
	for _, codec := range codecs {
		c, _ := sch.Column(string(codec))
		s, got := scanSample(t, sc, 150, c.UID, true)
		require.False(t, got[0].Whole(), "codec %s: a sparse read reads the sample's blocks", codec)
		require.Equal(t, 1, got[0].Len())
		sparseBytes := got[0].Bytes
		require.Equal(t, vals[150], s.Data)
		_, err = got[0].At(0)
		require.ErrorIs(t, err, ErrInvalidArgument, "a span is not a chunk")

		_, got = scanSample(t, sc, 150, c.UID, false)
		require.True(t, got[0].Whole(), "a dense plan reads whole chunks")
		require.Less(t, 2*sparseBytes, got[0].Bytes, "codec %s: a sample read reads the header and the sample's 64 KiB blocks, not the 200 KB chunk", codec)
		for j := range got[0].Len() {
			smp, err := got[0].At(j)
			require.NoError(t, err)
			require.Len(t, smp.Data, 1000)
		}
		_, err = s.DecodeInto(make([]byte, 3))
		require.ErrorIs(t, err, ErrInvalidArgument)
	}
}

// TestScanClassifiesErrors: a missing chunk is ErrNotFound, a damaged one
// ErrCorrupt, both naming the chunk.
func TestScanClassifiesErrors(t *testing.T) {
	d, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "v", DType: schema.Float64, Shape: schema.Shape{4}}}})
	for i := range 10 {
		require.NoError(t, d.Append(ctx, Row{"v": Tensor([]int{4}, []float64{1, 2, 3, float64(i)})}))
	}
	_, err := d.Commit(ctx, "ten")
	require.NoError(t, err)
	sc := loadedScan(t, d, 1)
	sch := sc.Schema()
	c, _ := sch.Column("v")
	id := sc.Chunks(c.UID)[0]
	path := filepath.Join(dir, filepath.FromSlash(sc.ChunkKey(id)))
	obj, err := os.ReadFile(path)
	require.NoError(t, err)

	damaged := bytes.Clone(obj)
	damaged[len(damaged)-20] ^= 1
	require.NoError(t, os.WriteFile(path, damaged, 0o644))
	for _, r := range []Read{{Chunk: id}, sc.Reads(sc.Slot(mustLocate(t, sc, 2), c.UID), true)[0]} {
		_, err = sc.Fetch(ctx, r)
		require.ErrorIs(t, err, ErrCorrupt)
		require.Contains(t, err.Error(), sc.ChunkKey(id))
	}

	require.NoError(t, os.Remove(path))
	_, err = sc.Fetch(ctx, Read{Chunk: id})
	require.ErrorIs(t, err, ErrNotFound)
	require.Contains(t, err.Error(), sc.ChunkKey(id))

	_, err = sc.Locate(sc.Len())
	require.ErrorIs(t, err, ErrNotFound)
	_, err = sc.Positions([]uint64{1, 1})
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = sc.Positions([]uint64{1 << 40})
	require.ErrorIs(t, err, ErrNotFound)
}

func mustLocate(t *testing.T, sc *Scan, pos int64) RowLoc {
	r, err := sc.Locate(pos)
	require.NoError(t, err)
	return r
}

// TestSlotCursor: a cursor finds the slots Slot finds, row after row, in
// a snapshot of several fragments with deletions, nulls and split samples.
func TestSlotCursor(t *testing.T) {
	d, _ := mustCreate(t, schema.Schema{Columns: []schema.Column{
		{Name: "v", DType: schema.Float32, Shape: schema.Shape{-1}, ChunkBytes: 1024},
		{Name: "n", DType: schema.Int64, Shape: schema.Shape{}, ChunkBytes: 1024},
	}})
	var ids []uint64
	for f := range 3 {
		next := d.nextRowID(t)
		for i := range 150 {
			row := Row{"n": Scalar(int64(i))}
			if i%7 != 0 {
				v := make([]float32, 1+(i*37)%400) // some larger than a chunk: split
				row["v"] = Tensor([]int{len(v)}, v)
			}
			require.NoError(t, d.Append(ctx, row))
			ids = append(ids, next+uint64(i))
		}
		_, err := d.Commit(ctx, fmt.Sprint("fragment ", f))
		require.NoError(t, err)
	}
	require.NoError(t, d.Delete(ctx, ids[3], ids[160], ids[161], ids[449]))
	_, err := d.Commit(ctx, "delete")
	require.NoError(t, err)
	sc := loadedScan(t, d, 4)
	locs, err := sc.LocateRange(0, sc.Len(), nil)
	require.NoError(t, err)
	require.Len(t, locs, int(sc.Len()))
	sch := sc.Schema()
	for _, c := range sch.Columns {
		cur := sc.SlotCursor(c.UID)
		for p, r := range locs {
			want, err := sc.Locate(int64(p))
			require.NoError(t, err)
			require.Equal(t, want, r, "LocateRange at %d", p)
			require.Equal(t, sc.Slot(r, c.UID), cur.Slot(r), "column %s, row %d", c.Name, p)
		}
		// Runs tile the rows: each row's slot is the run's first sample
		// plus its place in the run.
		cur = sc.SlotCursor(c.UID)
		for p := 0; p < len(locs); {
			first, n := cur.Run(locs[p:])
			require.GreaterOrEqual(t, n, 1)
			for j := range n {
				want := sc.Slot(locs[p+j], c.UID)
				if n > 1 {
					require.Equal(t, first.Chunk(0), want.Chunk(0), "column %s, row %d", c.Name, p+j)
					require.Equal(t, first.Index()+j, want.Index(), "column %s, row %d", c.Name, p+j)
				} else {
					require.Equal(t, want, first)
				}
			}
			p += n
		}
	}
}

// TestFetchedFixed: a run of fixed-size samples comes back at once, equal
// to the samples one by one; a run with a null, a sample of another size
// or outside the chunk does not.
func TestFetchedFixed(t *testing.T) {
	d, _ := mustCreate(t, schema.Schema{Columns: []schema.Column{
		{Name: "n", DType: schema.Int32, Shape: schema.Shape{}},
		{Name: "m", DType: schema.Int32, Shape: schema.Shape{}},
	}})
	for i := range 100 {
		row := Row{"n": Scalar(int32(i))}
		if i != 50 {
			row["m"] = Scalar(int32(-i))
		}
		require.NoError(t, d.Append(ctx, row))
	}
	_, err := d.Commit(ctx, "rows")
	require.NoError(t, err)
	sc := loadedScan(t, d, 1)
	sch := d.Schema()
	for _, name := range []string{"n", "m"} {
		c, _ := sch.Column(name)
		r, err := sc.Locate(0)
		require.NoError(t, err)
		slot := sc.Slot(r, c.UID)
		f, err := sc.Fetch(ctx, Read{Chunk: slot.Chunk(0)})
		require.NoError(t, err)
		data, ok := f.Fixed(10, 40, 4)
		require.True(t, ok, name)
		for j := 10; j < 40; j++ {
			want, null, err := f.Data(j)
			require.NoError(t, err)
			require.False(t, null)
			require.Equal(t, want, data[(j-10)*4:(j-9)*4], "%s sample %d", name, j)
		}
		_, ok = f.Fixed(40, 60, 4)
		require.Equal(t, name == "n", ok, "%s: a run over the null of m is not fixed", name)
		_, ok = f.Fixed(10, 40, 8)
		require.False(t, ok, "another size")
		_, ok = f.Fixed(90, 101, 4)
		require.False(t, ok, "past the chunk")
	}
}

// TestSwappedChunkIsRefused: a sound chunk copied over another chunk's name
// (same size, same row count, every checksum of its own valid) is refused as
// corrupt by every read path, naming the chunk, instead of serving the other
// chunk's values (issue 35: `cp chunks/90/90b5... chunks/ce/ce0d...` was
// served as the truth by query and show).
func TestSwappedChunkIsRefused(t *testing.T) {
	d, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "label", DType: schema.Int64}}})
	for c := range 2 {
		for i := range 10 {
			require.NoError(t, d.Append(ctx, Row{"label": Scalar(int64(c*100 + i))}))
		}
		_, err := d.Commit(ctx, "ten")
		require.NoError(t, err)
	}
	sc := loadedScan(t, d, 1)
	sch := sc.Schema()
	c, _ := sch.Column("label")
	ids := sc.Chunks(c.UID)
	require.Len(t, ids, 2)
	first := filepath.Join(dir, filepath.FromSlash(sc.ChunkKey(ids[0])))
	second := filepath.Join(dir, filepath.FromSlash(sc.ChunkKey(ids[1])))
	a, err := os.ReadFile(first)
	require.NoError(t, err)
	b, err := os.ReadFile(second)
	require.NoError(t, err)
	require.Equal(t, len(a), len(b), "the swap keeps the size")
	require.NoError(t, os.WriteFile(second, a, 0o644))

	d2 := mustOpen(t, dir)
	col, _ := d2.Column("label")
	_, err = col.ReadRange(ctx, 10, 20)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), sc.ChunkKey(ids[1]))
	require.Contains(t, err.Error(), "another chunk")
	got, err := col.ReadRange(ctx, 0, 10)
	require.NoError(t, err, "the chunk that was copied is sound under its own name")
	require.Len(t, got, 10)

	sc2 := d2.Scan()
	require.NoError(t, sc2.Load(ctx, 1))
	cache, err := chunkcache.Open(t.TempDir(), 1<<20, nil)
	require.NoError(t, err)
	defer cache.Close()
	for name, s := range map[string]*Scan{"plain": sc2, "cached": sc2.WithCache(cache)} {
		id := s.Chunks(c.UID)[1]
		for _, r := range []Read{{Chunk: id}, s.Reads(s.Slot(mustLocate(t, s, 15), c.UID), true)[0]} {
			_, err = s.Fetch(ctx, r)
			require.ErrorIs(t, err, ErrCorrupt, name)
			require.Contains(t, err.Error(), s.ChunkKey(id), name)
		}
	}
}

// TestSwappedMetadataIsRefused: a sound fragment, manifest or commit copied
// over another object of its kind is refused as corrupt when read, naming
// the object, instead of being read as the object its name says.
func TestSwappedMetadataIsRefused(t *testing.T) {
	for _, kind := range []string{"fragments", "manifests", "commits"} {
		t.Run(kind, func(t *testing.T) {
			d, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "label", DType: schema.Int64}}})
			var versions []string
			for c := range 2 {
				for i := range 10 {
					require.NoError(t, d.Append(ctx, Row{"label": Scalar(int64(c*100 + i))}))
				}
				v, err := d.Commit(ctx, "ten")
				require.NoError(t, err)
				versions = append(versions, v)
			}
			require.NoError(t, d.Close())
			// The newest version's object of this kind that the first
			// version does not name: the one to overwrite.
			names := namedBy(t, dir, versions[1], kind)
			old := namedBy(t, dir, versions[0], kind)
			var to, from string
			for _, n := range names {
				if !slices.Contains(old, n) {
					to = n
				}
			}
			from = old[0]
			require.NotEmpty(t, to)
			a, err := os.ReadFile(filepath.Join(dir, from))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, to), a, 0o644))

			d2, err := Open(ctx, dir)
			if err == nil {
				defer d2.Close()
				col, cerr := d2.Column("label")
				require.NoError(t, cerr)
				_, err = col.ReadRange(ctx, 0, 20)
			}
			require.ErrorIs(t, err, ErrCorrupt)
			require.Contains(t, err.Error(), to)
			require.Contains(t, err.Error(), "does not match the object's name")
		})
	}
}

// namedBy lists the keys of the objects of one kind ("fragments",
// "manifests", "commits") that version names.
func namedBy(t *testing.T, dir, version, kind string) []string {
	t.Helper()
	d, err := Open(ctx, dir, WithRef(version))
	require.NoError(t, err)
	defer d.Close()
	switch kind {
	case "commits":
		return []string{"commits/" + version}
	case "manifests":
		return []string{d.snap.commit.Manifest}
	}
	var out []string
	for _, f := range d.snap.man.Fragments {
		out = append(out, f.Key)
	}
	return out
}

// TestLoadCancelledIsNotKept: a fragment load that fails because its
// context ended (a cancelled reader, or a sibling load that failed first
// in Scan.Load) is not kept; before, the handle's snapshot kept failing
// with "context canceled" on every later read, hiding the real error of
// the sibling behind it.
func TestLoadCancelledIsNotKept(t *testing.T) {
	d, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "n", DType: schema.Int64}}})
	require.NoError(t, d.Append(ctx, Row{"n": Scalar(int64(7))}))
	_, err := d.Commit(ctx, "a row")
	require.NoError(t, err)
	fresh := mustOpen(t, dir)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, fresh.Scan().Load(cancelled, 1), context.Canceled)
	sc := fresh.Scan()
	require.NoError(t, sc.Load(ctx, 1), "the next load tries again")
	col := mustColumn(t, fresh, "n")
	s, err := col.Read(ctx, 0, nil)
	require.NoError(t, err)
	got, _ := As[int64](s.Data)
	require.Equal(t, []int64{7}, got)
}

// TestScanChunkRows: ChunkRows gives the live positions of each chunk's
// rows: they tile the snapshot's positions, and each row's slot lies in
// the chunk whose positions hold it, with deleted rows in two fragments.
func TestScanChunkRows(t *testing.T) {
	sch := schema.Schema{Columns: []schema.Column{{Name: "x", DType: schema.Int64, Shape: schema.Shape{}, ChunkBytes: 8 * 128}}}
	d, _ := mustCreate(t, sch)
	for f := range 2 {
		var rows []Row
		for i := range 450 {
			rows = append(rows, Row{"x": Scalar(int64(f*1000 + i))})
		}
		require.NoError(t, d.Extend(ctx, rows))
		_, err := d.Commit(ctx, "rows")
		require.NoError(t, err)
	}
	sc0 := loadedScan(t, d, 2)
	var del []uint64
	for _, pos := range []int64{0, 127, 128, 150, 449, 450, 700} {
		id, err := sc0.RowID(pos)
		require.NoError(t, err)
		del = append(del, id)
	}
	require.NoError(t, d.Delete(ctx, del...))
	_, err := d.Commit(ctx, "delete")
	require.NoError(t, err)

	sc := loadedScan(t, d, 2)
	uid := sc.Columns()[0].UID
	var next int64
	for _, id := range sc.Chunks(uid) {
		lo, hi := sc.ChunkRows(id)
		require.Equal(t, next, lo, "chunk %s", sc.ChunkKey(id))
		require.LessOrEqual(t, lo, hi)
		next = hi
		for pos := lo; pos < hi; pos++ {
			loc, err := sc.Locate(pos)
			require.NoError(t, err)
			require.Equal(t, id, sc.Slot(loc, uid).Chunk(0), "row %d", pos)
		}
	}
	require.Equal(t, sc.Len(), next)
}
