package loch

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testserver"
)

// roundTrip passes v through JSON, as a plan or description crosses
// processes.
func roundTrip[T any](t *testing.T, v *T) *T {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out T
	require.NoError(t, json.Unmarshal(b, &out))
	return &out
}

// TestCompactInTasks plans a compaction, rewrites its groups through
// other (read-only) handles as other processes would, and commits once:
// the same rows, ids and order as Compact, with deleted rows dropped, and
// a commit that landed meanwhile kept (rebased).
func TestCompactInTasks(t *testing.T) {
	for _, where := range testserver.Stores {
		t.Run(where, func(t *testing.T) {
			url := testserver.StoreURL(t, where)
			d := manySmallCommits(t, url, 12, 5)
			require.NoError(t, d.Delete(ctx, 3, 4, 17, 40, 41, 42, 43, 44)) // fragment 8 wholly
			_, err := d.Commit(ctx, "delete")
			require.NoError(t, err)
			before := snapshotRows(t, d)

			plan, err := d.PlanCompaction(ctx, CompactOptions{TargetRows: 40, Message: "in tasks"})
			require.NoError(t, err)
			plan = roundTrip(t, plan)
			require.Equal(t, d.Version(), plan.Base)
			require.Equal(t, "main", plan.Branch)
			require.Equal(t, "in tasks", plan.Message)
			require.True(t, plan.Report.DryRun)
			require.Greater(t, len(plan.Groups), 1)
			require.Equal(t, len(plan.Groups), plan.Report.Groups)
			require.Len(t, d.current().frags, 12, "planning writes nothing")

			var done []CompactedGroup
			for i := range plan.Groups {
				w, err := Open(ctx, url, WithVersion(plan.Base))
				require.NoError(t, err)
				g, err := w.CompactGroup(ctx, plan, i)
				require.NoError(t, err)
				require.NoError(t, w.Close())
				done = append(done, *roundTrip(t, g))
			}

			// Another writer appends meanwhile: the commit rebases.
			other := mustOpen(t, url)
			require.NoError(t, other.Append(ctx, Row{"n": Scalar(int64(1000))}))
			_, err = other.Commit(ctx, "meanwhile")
			require.NoError(t, err)

			slices.Reverse(done) // any order
			rep, err := d.CommitCompaction(ctx, plan, done)
			require.NoError(t, err)
			require.Equal(t, plan.Report.Groups, rep.Groups)
			require.Equal(t, plan.Report.Rewritten, rep.Rewritten)
			require.Equal(t, plan.Report.Rows, rep.Rows)
			require.EqualValues(t, 8, rep.Dropped)
			require.Zero(t, rep.Yielded)
			require.Equal(t, d.Version(), rep.Version)
			require.Equal(t, len(plan.Groups)+1, len(d.current().frags), "the groups and the append")
			got := snapshotRows(t, d)
			require.Equal(t, before.ids, got.ids[:len(before.ids)])
			require.Equal(t, before.rows, got.rows[:len(before.rows)])
			require.Equal(t, []int64{1000}, readN(t, d)[len(before.ids):])
			log, err := d.Log(ctx)
			require.NoError(t, err)
			require.Equal(t, "in tasks", log[0].Message)
			_, problems, err := d.Verify(ctx)
			require.NoError(t, err)
			require.Empty(t, problems)
		})
	}
}

// TestCompactInTasksPartial: groups whose description never arrives are
// not compacted; a plan with nothing to do has no groups.
func TestCompactInTasksPartial(t *testing.T) {
	d := manySmallCommits(t, t.TempDir()+"/ds", 8, 5)
	want := readN(t, d)
	plan, err := d.PlanCompaction(ctx, CompactOptions{TargetRows: 20})
	require.NoError(t, err)
	require.Len(t, plan.Groups, 2)
	g, err := d.CompactGroup(ctx, plan, 1)
	require.NoError(t, err)
	rep, err := d.CommitCompaction(ctx, plan, []CompactedGroup{*g})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Groups)
	require.Equal(t, 8-plan.Groups[1][1]+plan.Groups[1][0]+1, rep.FragmentsAfter)
	require.Equal(t, want, readN(t, d))

	rep, err = d.CommitCompaction(ctx, plan, nil)
	require.NoError(t, err)
	require.Zero(t, rep.Groups)

	full, err := d.PlanCompaction(ctx, CompactOptions{TargetRows: 5})
	require.NoError(t, err)
	require.Empty(t, full.Groups)
	require.NotNil(t, full.Groups, "an empty list in JSON, not null")
}

// TestCommitCompactionRefusals: descriptions of another plan or dataset,
// twice the same group, and fragments that do not hold the group's rows.
func TestCommitCompactionRefusals(t *testing.T) {
	url := t.TempDir() + "/ds"
	d := manySmallCommits(t, url, 8, 5)
	plan, err := d.PlanCompaction(ctx, CompactOptions{TargetRows: 20})
	require.NoError(t, err)
	require.Len(t, plan.Groups, 2)
	g0, err := d.CompactGroup(ctx, plan, 0)
	require.NoError(t, err)
	g1, err := d.CompactGroup(ctx, plan, 1)
	require.NoError(t, err)
	head := d.Version()

	for name, tc := range map[string]struct {
		plan   func(p CompactPlan) CompactPlan
		groups func(a, b CompactedGroup) []CompactedGroup
		is     error
		msg    string
	}{
		"twice": {nil, func(a, b CompactedGroup) []CompactedGroup { return []CompactedGroup{a, a} }, ErrInvalidArgument, "described twice"},
		"other base": {nil, func(a, b CompactedGroup) []CompactedGroup {
			a.Base = "00000000000000000000000000000000"
			return []CompactedGroup{a}
		}, ErrInvalidArgument, "is not of the plan"},
		"other group": {nil, func(a, b CompactedGroup) []CompactedGroup {
			a.Group = [2]int{0, 1}
			return []CompactedGroup{a}
		}, ErrInvalidArgument, "is not of the plan"},
		"a missing fragment": {nil, func(a, b CompactedGroup) []CompactedGroup {
			a.Key = "fragments/00000000000000000000000000000000"
			return []CompactedGroup{a}
		}, ErrNotFound, "fragments/00000000000000000000000000000000"},
		"rows": {nil, func(a, b CompactedGroup) []CompactedGroup {
			a.Rows++
			return []CompactedGroup{a}
		}, ErrCorrupt, "live rows"},
		"not a key": {nil, func(a, b CompactedGroup) []CompactedGroup {
			a.Key = "chunks/x"
			return []CompactedGroup{a}
		}, ErrInvalidArgument, "not a fragment key"},
		"other dataset": {func(p CompactPlan) CompactPlan {
			p.Dataset = "ffff"
			return p
		}, func(a, b CompactedGroup) []CompactedGroup { return []CompactedGroup{a} }, ErrInvalidArgument, "the plan is of dataset ffff"},
		"other branch": {func(p CompactPlan) CompactPlan {
			p.Branch = "dev"
			return p
		}, func(a, b CompactedGroup) []CompactedGroup { return []CompactedGroup{a} }, ErrInvalidArgument, `the plan is of branch "dev"`},
		"newer format": {func(p CompactPlan) CompactPlan {
			p.Format = "1.99"
			return p
		}, func(a, b CompactedGroup) []CompactedGroup { return nil }, ErrInvalidArgument, "plan format"},
	} {
		t.Run(name, func(t *testing.T) {
			p := *plan
			if tc.plan != nil {
				p = tc.plan(p)
			}
			_, err := d.CommitCompaction(ctx, &p, tc.groups(*g0, *g1))
			require.ErrorIs(t, err, tc.is)
			require.ErrorContains(t, err, tc.msg)
			require.Equal(t, head, d.Version(), "nothing committed")
		})
	}
	_, err = d.CompactGroup(ctx, plan, 2)
	require.ErrorIs(t, err, ErrInvalidArgument)
	ro := mustOpen(t, url, WithVersion(head))
	_, err = ro.PlanCompaction(ctx, CompactOptions{})
	require.ErrorIs(t, err, ErrReadOnly)
	_, err = ro.CommitCompaction(ctx, plan, nil)
	require.ErrorIs(t, err, ErrReadOnly)
}

// TestCompactAllDeletedFragment: a fragment whose every row is deleted is
// rewritten into nothing (no fragment with an empty key), by Compact and
// in tasks.
func TestCompactAllDeletedFragment(t *testing.T) {
	for _, tasks := range []bool{false, true} {
		d := manySmallCommits(t, t.TempDir()+"/ds", 3, 100)
		var del []uint64
		for id := uint64(100); id < 200; id++ {
			del = append(del, id)
		}
		require.NoError(t, d.Delete(ctx, del...))
		_, err := d.Commit(ctx, "delete fragment 1")
		require.NoError(t, err)
		want := readN(t, d)
		opts := CompactOptions{TargetRows: 100}
		var rep *CompactReport
		if tasks {
			plan, err := d.PlanCompaction(ctx, opts)
			require.NoError(t, err)
			require.Equal(t, [][2]int{{1, 2}}, plan.Groups)
			require.Equal(t, 2, plan.Report.FragmentsAfter)
			g, err := d.CompactGroup(ctx, plan, 0)
			require.NoError(t, err)
			require.Empty(t, g.Key)
			rep, err = d.CommitCompaction(ctx, plan, []CompactedGroup{*g})
			require.NoError(t, err)
		} else {
			rep, err = d.Compact(ctx, opts)
			require.NoError(t, err)
		}
		require.EqualValues(t, 100, rep.Dropped)
		require.Equal(t, 2, rep.FragmentsAfter)
		require.Len(t, d.current().frags, 2)
		require.Equal(t, want, readN(t, d))
		_, problems, err := d.Verify(ctx)
		require.NoError(t, err)
		require.Empty(t, problems, "tasks %v", tasks)
	}
}
