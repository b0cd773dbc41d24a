package loch

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/schema"
)

type report struct {
	phase       string
	done, total int64
}

// recorder returns a context whose Progress records every report, and the
// reports so far.
func recorder() (context.Context, func() []report) {
	var mu sync.Mutex
	var got []report
	c := WithProgress(ctx, func(phase string, done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, report{phase, done, total})
	})
	return c, func() []report {
		mu.Lock()
		defer mu.Unlock()
		return append([]report(nil), got...)
	}
}

// phase returns the reports of one phase, checking that done counts up
// one at a time (every stride-th, and the last, when stride > 1) and that
// total stays the same.
func phase(t *testing.T, all []report, name string, stride int64) []report {
	t.Helper()
	var out []report
	for _, r := range all {
		if r.phase == name {
			out = append(out, r)
		}
	}
	require.NotEmpty(t, out, "no %q reports", name)
	for i := 1; i < len(out); i++ {
		require.Equal(t, out[0].total, out[i].total, "%s: the total changed", name)
		require.Greater(t, out[i].done, out[i-1].done, "%s: done went back", name)
		require.LessOrEqual(t, out[i].done-out[i-1].done, stride, "%s: done jumped", name)
	}
	return out
}

func TestProgressVerify(t *testing.T) {
	d, _ := mustCreate(t, gcSchema)
	gcAppend(t, d, &model{}, gcRows(0, 10))
	c, got := recorder()
	checked, problems, err := d.Verify(c)
	require.NoError(t, err)
	require.Empty(t, problems)
	rs := phase(t, got(), "verify", 8) // a fragment counts its chunks at once
	require.EqualValues(t, -1, rs[0].total, "the walk does not know its total")
	require.EqualValues(t, checked, rs[len(rs)-1].done, "the last report counts every object checked")
}

func TestProgressGC(t *testing.T) {
	d, url := mustCreate(t, gcSchema)
	gcAppend(t, d, &model{}, gcRows(0, 10))
	dev := openNewBranch(t, d, url, "dev")
	gcAppend(t, dev, nil, gcRows(100, 10))
	require.NoError(t, d.DeleteBranch(ctx, "dev"))

	c, got := recorder()
	r, err := d.GC(c, GCOptions{})
	require.NoError(t, err)
	require.Positive(t, r.Deleted.Objects)
	mark := phase(t, got(), "mark", 1)
	require.EqualValues(t, -1, mark[0].total)
	del := phase(t, got(), "delete", 1)
	require.Equal(t, report{"delete", 0, r.Deleted.Objects}, del[0], "the total is known before deleting")
	require.Equal(t, report{"delete", r.Deleted.Objects, r.Deleted.Objects}, del[len(del)-1])
}

func TestProgressMerge(t *testing.T) {
	d, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "w", DType: schema.Int32, Shape: schema.Shape{1}}}})
	row := func(v int32) Row { return Row{"w": Tensor([]int{1}, []int32{v})} }
	require.NoError(t, d.Append(ctx, row(0)))
	_, err := d.Commit(ctx, "base")
	require.NoError(t, err)
	dev := openNewBranch(t, d, dir, "dev")
	for i := range int32(3) {
		require.NoError(t, dev.Append(ctx, row(10+i)))
	}
	_, err = dev.Commit(ctx, "three on dev")
	require.NoError(t, err)
	require.NoError(t, d.Append(ctx, row(1)))
	_, err = d.Commit(ctx, "one on main")
	require.NoError(t, err)

	c, got := recorder()
	_, err = d.Merge(c, "dev", MergeOptions{})
	require.NoError(t, err)
	rs := phase(t, got(), "merge", 1024)
	require.Equal(t, report{"merge", 0, 4}, rs[0], "the four rows appended since the base")
	require.Equal(t, report{"merge", 4, 4}, rs[len(rs)-1])
}
