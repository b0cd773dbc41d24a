package loch

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/schema"
)

func TestPlanGroups(t *testing.T) {
	o := CompactOptions{TargetRows: 100, TargetBytes: 1 << 40}.withDefaults()
	f := func(live, rows int64) fragInfo { return fragInfo{live: live, rows: rows} }
	for _, tc := range []struct {
		name  string
		frags []fragInfo
		o     CompactOptions
		want  [][2]int
	}{
		{"nothing", nil, o, nil},
		{"one small alone stays", []fragInfo{f(10, 10)}, o, nil},
		{"full fragments stay", []fragInfo{f(100, 100), f(60, 60)}, o, nil},
		{"small run merged", []fragInfo{f(10, 10), f(10, 10), f(10, 10)}, o, [][2]int{{0, 3}}},
		{"cut at the target", []fragInfo{f(40, 40), f(40, 40), f(40, 40), f(10, 10)}, o, [][2]int{{0, 2}, {2, 4}}},
		{"a full fragment splits runs", []fragInfo{f(10, 10), f(10, 10), f(90, 90), f(10, 10)}, o, [][2]int{{0, 2}}},
		{"deleted rows alone", []fragInfo{f(60, 100)}, o, [][2]int{{0, 1}}},
		{"few deleted rows stay", []fragInfo{f(95, 100)}, o, nil},
		{"deletions ignored", []fragInfo{f(60, 100)}, CompactOptions{TargetRows: 100, TargetBytes: 1 << 40, MaxDeleted: -1}.withDefaults(), nil},
		{"tiered: too few", []fragInfo{f(1, 1), f(1, 1), f(1, 1)}, CompactOptions{TargetRows: 1 << 20, TargetBytes: 1 << 40, Fanout: 4}.withDefaults(), nil},
		{"tiered: a class of fanout", []fragInfo{f(64, 64), f(1, 1), f(1, 1), f(1, 1), f(1, 1)}, CompactOptions{TargetRows: 1 << 20, TargetBytes: 1 << 40, Fanout: 4}.withDefaults(), [][2]int{{1, 5}}},
		{"tiered: classes differ", []fragInfo{f(1, 1), f(1, 1), f(64, 64), f(1, 1), f(1, 1)}, CompactOptions{TargetRows: 1 << 20, TargetBytes: 1 << 40, Fanout: 4}.withDefaults(), nil},
		{"tiered: deleted rows", []fragInfo{f(1<<20, 2<<20)}, CompactOptions{TargetRows: 1 << 20, TargetBytes: 1 << 40, Fanout: 4}.withDefaults(), [][2]int{{0, 1}}},
		{"bytes count", []fragInfo{{live: 1, rows: 1, bytes: 1 << 30}, {live: 1, rows: 1, bytes: 1 << 30}}, CompactOptions{TargetRows: 100, TargetBytes: 1 << 30}.withDefaults(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, planGroups(tc.frags, tc.o))
		})
	}
}

// snapshotRows reads every column of every row (and its id) of d in order.
func snapshotRows(t *testing.T, d *Dataset) *model {
	t.Helper()
	m := &model{}
	cols := d.Schema().Columns
	for i := int64(0); i < d.Len(); i++ {
		id := mustRowID(t, d, i)
		m.ids = append(m.ids, id)
		m.rows = append(m.rows, Row{})
	}
	for _, c := range cols {
		col := mustColumn(t, d, c.Name)
		for i := int64(0); i < d.Len(); i++ {
			s, err := col.Read(ctx, i, nil)
			require.NoError(t, err)
			m.rows[i][c.Name] = s
		}
	}
	return m
}

// TestCompactProperty writes random schemas (every dtype, ragged shapes,
// nulls, split samples, every codec, png) through many small commits with
// updates, deletes and added columns, compacts, and checks that every row
// keeps its id, position and values, that older versions still read, that
// Verify passes and that the diff shows no change.
func TestCompactProperty(t *testing.T) {
	r := testseed.Rand(t, 34)
	for round := 0; round < 3; round++ {
		cols := randomColumns(r, 4)
		d, dir := mustCreate(t, schema.Schema{Columns: cols})
		var ids []uint64
		for step := 0; step < 12; step++ {
			var rows []Row
			for i := 0; i < 1+r.IntN(15); i++ {
				row := Row{}
				for _, c := range d.stageColumns() {
					row[c.Name] = randomSample(r, c)
				}
				rows = append(rows, row)
			}
			start := d.nextRowID(t)
			require.NoError(t, d.Extend(ctx, rows))
			for i := range rows {
				ids = append(ids, start+uint64(i))
			}
			if len(ids) > 3 && r.IntN(2) == 0 {
				k := r.IntN(len(ids) - 1) // not the row just appended: staged rows are not deletable
				if k < len(ids)-len(rows) {
					require.NoError(t, d.Delete(ctx, ids[k]))
					ids = slices.Delete(ids, k, k+1)
				}
			}
			if len(ids) > len(rows) && r.IntN(3) == 0 {
				k := r.IntN(len(ids) - len(rows))
				c := d.stageColumns()[r.IntN(len(d.stageColumns()))]
				require.NoError(t, d.Update(ctx, ids[k], Row{c.Name: randomSample(r, c)}))
			}
			if r.IntN(4) == 0 {
				require.NoError(t, d.AddColumn(ctx, randomColumn(r, fmt.Sprintf("added%d", step))))
			}
			_, err := d.Commit(ctx, fmt.Sprintf("step %d", step))
			require.NoError(t, err)
			requireStoredBytes(t, d)
		}
		before := snapshotRows(t, d)
		requireStoredBytes(t, d)
		requireSampleCounts(t, d, before)
		oldVersion, oldFrags := d.Version(), len(d.current().frags)
		oldCols := d.Columns()

		rep, err := d.Compact(ctx, CompactOptions{TargetRows: int64(8 + r.IntN(40))})
		require.NoError(t, err)
		require.NotEqual(t, oldVersion, rep.Version)
		require.Equal(t, d.Version(), rep.Version)
		require.Equal(t, oldFrags, rep.FragmentsBefore)
		require.Less(t, rep.FragmentsAfter, oldFrags)
		require.Equal(t, len(d.current().frags), rep.FragmentsAfter)
		require.Greater(t, rep.Rows, int64(0))
		require.Zero(t, rep.Yielded)
		checkModel(t, d, before)

		// Statistics: sample counts and stored bytes match the data.
		for i, c := range d.Columns() {
			require.LessOrEqual(t, c.Samples, oldCols[i].Samples, c.Name)
		}
		requireStoredBytes(t, d)
		requireSampleCounts(t, d, before)

		// The diff of the compaction is empty: same rows, same values.
		df, err := d.Diff(ctx, oldVersion, "", DiffOptions{})
		require.NoError(t, err)
		require.Zero(t, df.Added+df.Deleted+df.Modified, "%+v", df)

		old, err := Open(ctx, dir, WithVersion(oldVersion))
		require.NoError(t, err)
		checkModel(t, old, before)
		old.Close()

		// Reopened, the same; a second compaction finds nothing to do.
		again, err := Open(ctx, dir)
		require.NoError(t, err)
		checkModel(t, again, before)
		rep2, err := again.Compact(ctx, CompactOptions{TargetRows: 1 << 20})
		require.NoError(t, err)
		checkModel(t, again, before)
		rep3, err := again.Compact(ctx, CompactOptions{TargetRows: 1 << 20})
		require.NoError(t, err)
		require.Zero(t, rep3.Groups, "after %+v", rep2)
		require.Equal(t, again.Version(), rep3.Version)
		again.Close()

		_, problems, err := d.Verify(ctx)
		require.NoError(t, err)
		require.Empty(t, problems)
	}
}

// requireStoredBytes checks that each column's stored_bytes statistic is
// the size of the chunks the version's fragments name.
func requireStoredBytes(t *testing.T, d *Dataset) {
	t.Helper()
	for _, c := range d.Columns() {
		var stored int64
		for _, f := range d.current().frags {
			require.NoError(t, f.load(ctx, d))
			for _, ref := range f.cols[c.UID] {
				stored += ref.Size
			}
		}
		require.Equal(t, stored, c.StoredBytes, "column %s stored bytes", c.Name)
	}
}

// requireSampleCounts checks that each column's samples statistic counts
// the non-null samples of m's rows (which are d's).
func requireSampleCounts(t *testing.T, d *Dataset, m *model) {
	t.Helper()
	for _, c := range d.Columns() {
		var n int64
		for _, r := range m.rows {
			if s, ok := r[c.Name]; ok && !s.Null {
				n++
			}
		}
		require.Equal(t, n, c.Samples, "column %s samples", c.Name)
	}
}

// manySmallCommits makes a dataset of n commits of k rows each: int64 id
// and a float32[16] vector.
func manySmallCommits(t *testing.T, url string, n, k int, opts ...Option) *Dataset {
	t.Helper()
	d, err := Create(ctx, url, schema.Schema{Columns: []schema.Column{
		{Name: "n", DType: schema.Int64},
		{Name: "v", DType: schema.Float32, Shape: schema.Shape{16}, ChunkCompression: schema.LZ4},
	}}, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	for c := 0; c < n; c++ {
		var rows []Row
		for i := 0; i < k; i++ {
			x := int64(c*k + i)
			v := make([]float32, 16)
			for j := range v {
				v[j] = float32(x) + float32(j)/16
			}
			rows = append(rows, Row{"n": Scalar(x), "v": Tensor([]int{16}, v)})
		}
		require.NoError(t, d.Extend(ctx, rows))
		_, err := d.Commit(ctx, fmt.Sprintf("commit %d", c))
		require.NoError(t, err)
	}
	return d
}

// readN returns column n of every row in order.
func readN(t *testing.T, d *Dataset) []int64 {
	t.Helper()
	return readColumn(t, d, "n", func(s Sample) int64 {
		v, err := As[int64](s.Data)
		require.NoError(t, err)
		return v[0]
	})
}

// readColumn returns conv of the sample of column name in every row, in
// order.
func readColumn[T any](t *testing.T, d *Dataset, name string, conv func(Sample) T) []T {
	t.Helper()
	all, err := mustColumn(t, d, name).ReadRange(ctx, 0, d.Len())
	require.NoError(t, err)
	out := make([]T, len(all))
	for i, s := range all {
		out[i] = conv(s)
	}
	return out
}

// TestCompactStores compacts 60 commits of 5 rows on local disk and on
// MinIO: one fragment remains, every value and id is kept, and the object
// count falls.
func TestCompactStores(t *testing.T) {
	for _, where := range testserver.Stores {
		t.Run(where, func(t *testing.T) {
			d := manySmallCommits(t, testserver.StoreURL(t, where), 60, 5)
			want := readN(t, d)
			before := snapshotRows(t, d)
			require.Len(t, d.current().frags, 60)
			rep, err := d.Compact(ctx, CompactOptions{DryRun: true})
			require.NoError(t, err)
			require.True(t, rep.DryRun)
			require.Equal(t, 1, rep.Groups)
			require.Equal(t, 60, rep.Rewritten)
			require.Len(t, d.current().frags, 60, "a dry run writes nothing")

			rep, err = d.Compact(ctx, CompactOptions{})
			require.NoError(t, err)
			require.Equal(t, 1, rep.Groups)
			require.Equal(t, 60, rep.Rewritten)
			require.Equal(t, 1, rep.FragmentsAfter)
			require.EqualValues(t, 300, rep.Rows)
			require.Less(t, rep.BytesAfter, rep.BytesBefore, "one chunk per column instead of 60")
			require.Equal(t, want, readN(t, d))
			checkModel(t, d, before)
			f := d.current().frags[0]
			require.NotNil(t, f.ref.IDStart, "one run of ids: an id_start")
			require.EqualValues(t, 0, *f.ref.IDStart)

			log, err := d.Log(ctx)
			require.NoError(t, err)
			require.Equal(t, "compact", log[0].Message)

			// Appends after compaction go on from the same ids.
			require.NoError(t, d.Append(ctx, Row{"n": Scalar(int64(300))}))
			_, err = d.Commit(ctx, "after")
			require.NoError(t, err)
			id := mustRowID(t, d, 300)
			require.EqualValues(t, 300, id)
			_, problems, err := d.Verify(ctx)
			require.NoError(t, err)
			require.Empty(t, problems)
		})
	}
}

// TestCompactDropsDeleted rewrites a fragment most of whose rows are
// deleted: the live rows keep their ids (no longer one run: explicit ids).
func TestCompactDropsDeleted(t *testing.T) {
	d := manySmallCommits(t, t.TempDir()+"/ds", 1, 100)
	var del []uint64
	for id := uint64(0); id < 100; id++ {
		if id%3 != 0 {
			del = append(del, id)
		}
	}
	require.NoError(t, d.Delete(ctx, del...))
	_, err := d.Commit(ctx, "delete two thirds")
	require.NoError(t, err)
	before := snapshotRows(t, d)
	rep, err := d.Compact(ctx, CompactOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Groups)
	require.EqualValues(t, 66, rep.Dropped)
	require.EqualValues(t, 34, rep.Rows)
	checkModel(t, d, before)
	f := d.current().frags[0]
	require.Nil(t, f.ref.IDStart)
	require.Zero(t, f.ref.Deleted)
	require.EqualValues(t, 34, d.Columns()[0].Samples, "dropped samples leave the statistics")
	// Row ids still find their rows (for updates and deletes).
	require.NoError(t, d.Update(ctx, 99, Row{"n": Scalar(int64(-1))}))
	_, err = d.Commit(ctx, "update")
	require.NoError(t, err)
	require.Contains(t, readN(t, d), int64(-1))
}

// TestCompactConcurrent runs another writer's commit while a compaction is
// rewriting (from its progress callback): an append, a delete of a row of
// the compacted fragments, and an added column.
func TestCompactConcurrent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, o *Dataset)
		check  func(t *testing.T, d *Dataset, rep *CompactReport, want []int64)
	}{
		{"append", func(t *testing.T, o *Dataset) {
			require.NoError(t, o.Append(ctx, Row{"n": Scalar(int64(1000))}))
		}, func(t *testing.T, d *Dataset, rep *CompactReport, want []int64) {
			require.Equal(t, 1, rep.Groups)
			require.Equal(t, append(want, 1000), readN(t, d))
			require.Len(t, d.current().frags, 2)
		}},
		{"delete", func(t *testing.T, o *Dataset) {
			require.NoError(t, o.Delete(ctx, 7, 8, 31))
		}, func(t *testing.T, d *Dataset, rep *CompactReport, want []int64) {
			require.Equal(t, 1, rep.Groups)
			want = slices.DeleteFunc(want, func(n int64) bool { return n == 7 || n == 8 || n == 31 })
			require.Equal(t, want, readN(t, d))
			require.EqualValues(t, 3, d.current().frags[0].ref.Deleted, "the deletion carried over")
		}},
		{"update", func(t *testing.T, o *Dataset) {
			require.NoError(t, o.Update(ctx, 5, Row{"n": Scalar(int64(-5))}))
		}, func(t *testing.T, d *Dataset, rep *CompactReport, want []int64) {
			require.Equal(t, 1, rep.Yielded, "an update in place changed a fragment: the group yields")
			want[5] = -5
			require.Equal(t, want, readN(t, d), "the update stands, in place")
		}},
		{"add column", func(t *testing.T, o *Dataset) {
			require.NoError(t, o.AddColumn(ctx, schema.Column{Name: "extra", DType: schema.Int32}))
		}, func(t *testing.T, d *Dataset, rep *CompactReport, want []int64) {
			require.Equal(t, 1, rep.Yielded, "a changed schema: the group yields")
			require.Zero(t, rep.Groups)
			require.Equal(t, want, readN(t, d))
			sch := d.Schema()
			_, ok := sch.Column("extra")
			require.True(t, ok, "the other writer's commit stands")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := t.TempDir() + "/ds"
			d := manySmallCommits(t, url, 10, 4)
			want := readN(t, d)
			other := mustOpen(t, url)
			var once atomic.Bool
			pctx := WithProgress(ctx, func(phase string, done, total int64) {
				if phase == "compact" && done == total && once.CompareAndSwap(false, true) {
					tc.change(t, other)
					_, err := other.Commit(ctx, "meanwhile")
					require.NoError(t, err)
				}
			})
			rep, err := d.Compact(pctx, CompactOptions{})
			require.NoError(t, err)
			require.True(t, once.Load())
			tc.check(t, d, rep, want)
			_, problems, err := d.Verify(ctx)
			require.NoError(t, err)
			require.Empty(t, problems)
		})
	}
}

// TestCompactRefusals: staged writes, read-only handles and bad options.
func TestCompactRefusals(t *testing.T) {
	url := t.TempDir() + "/ds"
	d := manySmallCommits(t, url, 3, 2)
	require.NoError(t, d.Append(ctx, Row{"n": Scalar(int64(9))}))
	_, err := d.Compact(ctx, CompactOptions{})
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, "commit or discard")
	d.Discard()
	_, err = d.Compact(ctx, CompactOptions{Fanout: 1})
	require.ErrorIs(t, err, ErrInvalidArgument)
	ro := mustOpen(t, url, WithVersion(d.Version()))
	_, err = ro.Compact(ctx, CompactOptions{})
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrNotFound))
}

// TestAutoCompact: 200 commits of one row with automatic compaction keep
// the fragment count logarithmic, and every row in place.
func TestAutoCompact(t *testing.T) {
	d := manySmallCommits(t, t.TempDir()+"/ds", 200, 1, WithAutoCompact(CompactOptions{Fanout: 4}))
	rep, err := d.LastAutoCompaction()
	require.NoError(t, err)
	require.NotNil(t, rep)
	want := make([]int64, 200)
	for i := range want {
		want[i] = int64(i)
	}
	require.Equal(t, want, readN(t, d))
	// 200 in base 4 is 3020: at most (fanout-1) fragments per size class.
	require.LessOrEqual(t, len(d.current().frags), 3*4, "fragments: %d", len(d.current().frags))
	for i := int64(0); i < 200; i++ {
		id := mustRowID(t, d, i)
		require.EqualValues(t, i, id)
	}
	_, problems, err := d.Verify(ctx)
	require.NoError(t, err)
	require.Empty(t, problems)
}
