package loch

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/schema"
)

// chunkKeys lists the chunk keys of column name in every fragment of d.
func chunkKeys(t *testing.T, d *Dataset, name string) []string {
	t.Helper()
	sch := d.Schema()
	c, ok := sch.Column(name)
	require.True(t, ok)
	var out []string
	for _, f := range d.current().frags {
		require.NoError(t, f.load(ctx, d))
		for _, r := range f.cols[c.UID] {
			out = append(out, r.Key)
		}
	}
	return out
}

// caption is row i's distinct caption of 40 bytes.
func caption(i int) string { return fmt.Sprintf("caption of row %03d, forty bytes long....", i) }

// TestUpdateInPlace: an updated row keeps its id and position; only the
// chunks holding updated values are written again; statistics and counts
// agree with the rows; the diff names the row and column.
func TestUpdateInPlace(t *testing.T) {
	d, _ := mustCreate(t, schema.Schema{Columns: []schema.Column{
		{Name: "n", DType: schema.Int64, ChunkBytes: 1024},
		{Name: "caption", DType: schema.Text, ChunkBytes: 1024},
		{Name: "img", Kind: schema.Image, DType: schema.Uint8, SampleCompression: schema.PNG},
	}})
	var rows []Row
	for i := 0; i < 300; i++ {
		rows = append(rows, Row{"n": Scalar(int64(i)), "caption": String(caption(i)), "img": Tensor([]int{2, 2, 3}, make([]uint8, 12))})
	}
	require.NoError(t, d.Extend(ctx, rows))
	v0, err := d.Commit(ctx, "300 rows")
	require.NoError(t, err)
	nBefore, imgBefore := chunkKeys(t, d, "n"), chunkKeys(t, d, "img")
	capBefore := chunkKeys(t, d, "caption")
	require.Greater(t, len(capBefore), 3, "several caption chunks")
	statsBefore := d.Columns()

	require.NoError(t, d.Update(ctx, 0, Row{"caption": String("a much longer caption than before")}))
	require.NoError(t, d.Update(ctx, 0, Row{"n": Scalar(int64(-1))}), "a second update of a row adds its columns")
	_, err = d.Commit(ctx, "edit row 0")
	require.NoError(t, err)

	require.EqualValues(t, 300, d.Len())
	id := mustRowID(t, d, 0)
	require.EqualValues(t, 0, id, "row 0 stays at position 0")
	capCol := mustColumn(t, d, "caption")
	s, err := capCol.Read(ctx, 0, nil)
	require.NoError(t, err)
	require.Equal(t, "a much longer caption than before", string(s.Data))
	require.Equal(t, int64(-1), readN(t, d)[0])
	for i := 1; i < 300; i++ {
		s, err := capCol.Read(ctx, int64(i), nil)
		require.NoError(t, err)
		require.Equal(t, caption(i), string(s.Data), "row %d", i)
	}

	// Only the chunks that held row 0's values were written again.
	require.Equal(t, imgBefore, chunkKeys(t, d, "img"), "the image column is untouched")
	capAfter := chunkKeys(t, d, "caption")
	require.NotEqual(t, capBefore[0], capAfter[0])
	require.Equal(t, capBefore[1:], capAfter[len(capAfter)-len(capBefore)+1:], "later caption chunks are kept")
	nAfter := chunkKeys(t, d, "n")
	require.Equal(t, nBefore[1:], nAfter[len(nAfter)-len(nBefore)+1:])

	// Statistics count the rows once, and the stored bytes are the chunks'.
	for i, c := range d.Columns() {
		require.Equal(t, statsBefore[i].Samples, c.Samples, "column %s", c.Name)
		require.EqualValues(t, 300, c.Samples)
	}
	requireStoredBytes(t, d)

	df, err := d.Diff(ctx, v0, "", DiffOptions{})
	require.NoError(t, err)
	require.EqualValues(t, 1, df.Modified)
	require.Zero(t, df.Added+df.Deleted)
	require.Equal(t, []RowChange{{ID: 0, Change: ChangeModified, Columns: []string{"n", "caption"}}}, df.Rows)

	// A row deleted in a commit cannot be updated in it, and the reverse.
	require.NoError(t, d.Delete(ctx, 5))
	require.ErrorIs(t, d.Update(ctx, 5, Row{"n": Scalar(int64(5))}), ErrInvalidArgument)
	d.Discard()
	require.NoError(t, d.Update(ctx, 6, Row{"n": Scalar(int64(6))}))
	require.ErrorIs(t, d.Delete(ctx, 6), ErrInvalidArgument)
	d.Discard()

	// Many updates of one fragment keep one extension on its reference.
	for i := 0; i < 5; i++ {
		require.NoError(t, d.Update(ctx, uint64(10+i), Row{"caption": String("again")}))
		_, err = d.Commit(ctx, "again")
		require.NoError(t, err)
	}
	for _, f := range d.current().frags {
		require.LessOrEqual(t, len(f.ref.Extensions), 1)
	}
	_, problems, err := d.Verify(ctx)
	require.NoError(t, err)
	require.Empty(t, problems)
}

// TestUpdateInPlaceMerge: two branches update different rows (and
// different columns of one row) of one fragment; the merge keeps both;
// the same row changed differently on both sides is a conflict.
func TestUpdateInPlaceMerge(t *testing.T) {
	d := manySmallCommits(t, t.TempDir()+"/ds", 1, 20)
	_, err := d.CreateBranch(ctx, "b", "")
	require.NoError(t, err)
	require.NoError(t, d.Update(ctx, 3, Row{"n": Scalar(int64(-3))}))
	_, err = d.Commit(ctx, "main: row 3")
	require.NoError(t, err)

	b := mustOpen(t, d.url, WithRef("b"))
	require.NoError(t, b.Update(ctx, 7, Row{"n": Scalar(int64(-7))}))
	_, err = b.Commit(ctx, "b: row 7")
	require.NoError(t, err)

	res, err := d.Merge(ctx, "b", MergeOptions{})
	require.NoError(t, err)
	require.Empty(t, res.Conflicts)
	got := readN(t, d)
	require.Len(t, got, 20)
	require.Contains(t, got, int64(-3))
	require.Contains(t, got, int64(-7))
	for _, n := range []int64{3, 7} {
		require.NotContains(t, got, n)
	}
	_, problems, err := d.Verify(ctx)
	require.NoError(t, err)
	require.Empty(t, problems)

	// Both sides change row 9 differently: a conflict naming it.
	require.NoError(t, d.Update(ctx, 9, Row{"n": Scalar(int64(90))}))
	_, err = d.Commit(ctx, "main: row 9")
	require.NoError(t, err)
	require.NoError(t, b.Refresh(ctx))
	require.NoError(t, b.Update(ctx, 9, Row{"n": Scalar(int64(91))}))
	_, err = b.Commit(ctx, "b: row 9")
	require.NoError(t, err)
	_, err = d.Merge(ctx, "b", MergeOptions{})
	var ce *ConflictError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Conflicts, 1)
	require.EqualValues(t, 9, ce.Conflicts[0].ID)
}

// TestClassCounts: a class-label column's stored class counts follow
// appends, updates in place, deletes, compaction and a merge, and always
// equal the live rows' labels.
func TestClassCounts(t *testing.T) {
	d, _ := mustCreate(t, schema.Schema{Columns: []schema.Column{
		{Name: "label", Kind: schema.ClassLabel, ClassNames: []string{"a", "b", "c"}},
	}})
	check := func(what string) {
		t.Helper()
		want := make([]int64, 3)
		col := mustColumn(t, d, "label")
		all, err := col.ReadRange(ctx, 0, d.Len())
		require.NoError(t, err)
		for _, s := range all {
			v, err := As[int64](s.Data)
			require.NoError(t, err)
			want[v[0]]++
		}
		c := statsOf(t, d, "label")
		require.NotNil(t, c.Classes, what)
		got := append(append([]int64(nil), c.Classes.Counts...), make([]int64, 3)...)[:3]
		require.Equal(t, want, got, what)
		require.Equal(t, d.Len(), c.Samples, what)
	}
	for i := 0; i < 30; i++ {
		require.NoError(t, d.Append(ctx, Row{"label": Scalar(int64(i % 3))}))
		if i%10 == 9 {
			_, err := d.Commit(ctx, "ten")
			require.NoError(t, err)
		}
	}
	check("appends")
	require.NoError(t, d.Update(ctx, 0, Row{"label": Scalar(int64(2))}))
	require.NoError(t, d.Update(ctx, 1, Row{"label": Scalar(int64(2))}))
	_, err := d.Commit(ctx, "updates")
	require.NoError(t, err)
	check("updates")
	require.NoError(t, d.Delete(ctx, 2, 5, 8, 11))
	_, err = d.Commit(ctx, "deletes")
	require.NoError(t, err)
	check("deletes")
	_, err = d.Compact(ctx, CompactOptions{})
	require.NoError(t, err)
	check("compaction")
	_, err = d.CreateBranch(ctx, "b", "")
	require.NoError(t, err)
	b := mustOpen(t, d.url, WithRef("b"))
	require.NoError(t, b.Append(ctx, Row{"label": Scalar(int64(1))}))
	require.NoError(t, b.Update(ctx, 3, Row{"label": Scalar(int64(1))}))
	_, err = b.Commit(ctx, "b")
	require.NoError(t, err)
	require.NoError(t, d.Append(ctx, Row{"label": Scalar(int64(0))}))
	_, err = d.Commit(ctx, "main")
	require.NoError(t, err)
	_, err = d.Merge(ctx, "b", MergeOptions{})
	require.NoError(t, err)
	check("merge")
}

// TestUpdateCopiesSamples: the caller may reuse a sample's buffer once
// Update returns (as the C ABI does); the staged value is kept.
func TestUpdateCopiesSamples(t *testing.T) {
	d := manySmallCommits(t, t.TempDir()+"/ds", 1, 3)
	buf := Scalar(int64(20))
	require.NoError(t, d.Update(ctx, 1, Row{"n": buf}))
	copy(buf.Data, Scalar(int64(99)).Data)
	require.NoError(t, d.Append(ctx, Row{"n": buf}))
	_, err := d.Commit(ctx, "update, then reuse the buffer")
	require.NoError(t, err)
	require.Equal(t, []int64{0, 20, 2, 99}, readN(t, d))
}

// TestCommitLeavesOldStats: a commit builds its statistics from copies of
// its base's: a scan of the version before still sees that version's class
// counts and shapes.
func TestCommitLeavesOldStats(t *testing.T) {
	d, _ := mustCreate(t, schema.Schema{Columns: []schema.Column{
		{Name: "label", Kind: schema.ClassLabel, ClassNames: []string{"a", "b"}},
		{Name: "v", DType: schema.Int32, Shape: schema.Shape{-1}},
	}})
	require.NoError(t, d.Append(ctx, Row{"label": Scalar(int64(0)), "v": Tensor([]int{2}, []int32{1, 2})}))
	_, err := d.Commit(ctx, "one")
	require.NoError(t, err)
	sc := d.Scan()
	before := sc.Columns()
	require.Equal(t, []int64{1}, before[0].Classes.Counts)
	require.NoError(t, d.Append(ctx, Row{"label": Scalar(int64(0)), "v": Tensor([]int{5}, []int32{1, 2, 3, 4, 5})}))
	_, err = d.Commit(ctx, "two")
	require.NoError(t, err)
	require.Equal(t, []int64{2}, statsOf(t, d, "label").Classes.Counts)
	require.Equal(t, []int{5}, statsOf(t, d, "v").MaxShape)
	require.Equal(t, before, sc.Columns(), "the scan of version one keeps its statistics")
}
