package loch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/schema"
)

// vmodel is the expected content of one version: its columns in schema
// order and its rows by id (samples as read: png decoded).
type vmodel struct {
	cols []schema.Column
	rows map[uint64]Row
}

func (m vmodel) clone() vmodel {
	rows := make(map[uint64]Row, len(m.rows))
	for id, r := range m.rows {
		rows[id] = maps.Clone(r)
	}
	return vmodel{cols: slices.Clone(m.cols), rows: rows}
}

func (m vmodel) names() []string {
	var out []string
	for _, c := range m.cols {
		out = append(out, c.Name)
	}
	return out
}

// sameSampleValue compares samples as read; a missing sample is null.
func sameSampleValue(a, b Sample) bool {
	if a.Null || b.Null {
		return a.Null == b.Null
	}
	return bytes.Equal(a.Data, b.Data) && slices.Equal(a.Shape, b.Shape)
}

// sameRow compares two rows over the given columns; absent rows are equal
// only to absent rows.
func sameRow(a, b Row, inA, inB bool, cols []string) bool {
	if !inA || !inB {
		return inA == inB
	}
	for _, c := range cols {
		x, ok := a[c]
		if !ok {
			x = Null()
		}
		y, ok := b[c]
		if !ok {
			y = Null()
		}
		if !sameSampleValue(x, y) {
			return false
		}
	}
	return true
}

// history is the model of a dataset's versions and references.
type history struct {
	models   map[string]vmodel   // commit id -> content
	parents  map[string][]string // commit id -> parents
	branches map[string]string
	tags     map[string]string
}

func (h *history) ancestors(id string) map[string]bool {
	seen := map[string]bool{id: true}
	queue := []string{id}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		for _, p := range h.parents[c] {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return seen
}

// reachable lists the commits reachable from a reference, sorted.
func (h *history) reachable() []string {
	all := map[string]bool{}
	for _, refs := range []map[string]string{h.branches, h.tags} {
		for _, id := range refs {
			maps.Copy(all, h.ancestors(id))
		}
	}
	return slices.Sorted(maps.Keys(all))
}

// mergeBases lists the best common ancestors of a and b.
func (h *history) mergeBases(a, b string) []string {
	ofA, ofB := h.ancestors(a), h.ancestors(b)
	var common []string
	for id := range ofA {
		if ofB[id] {
			common = append(common, id)
		}
	}
	var best []string
	for _, c := range common {
		dominated := false
		for _, o := range common {
			if o != c && h.ancestors(o)[c] {
				dominated = true
				break
			}
		}
		if !dominated {
			best = append(best, c)
		}
	}
	return best
}

// modelMerge merges theirs into ours against base, row by row.
func modelMerge(b, o, t vmodel, strategy string) (vmodel, []uint64) {
	out := vmodel{cols: slices.Clone(o.cols), rows: map[uint64]Row{}}
	for _, c := range t.cols {
		if !slices.ContainsFunc(out.cols, func(x schema.Column) bool { return x.Name == c.Name }) {
			out.cols = append(out.cols, c)
		}
	}
	names := out.names()
	ids := map[uint64]bool{}
	for _, m := range []vmodel{b, o, t} {
		for id := range m.rows {
			ids[id] = true
		}
	}
	var conflicts []uint64
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		rb, inB := b.rows[id]
		ro, inO := o.rows[id]
		rt, inT := t.rows[id]
		takeTheirs := false
		switch {
		case sameRow(ro, rt, inO, inT, names), sameRow(rb, rt, inB, inT, names):
		case sameRow(rb, ro, inB, inO, names):
			takeTheirs = true
		default:
			conflicts = append(conflicts, id)
			takeTheirs = strategy == MergeTheirs
		}
		if takeTheirs {
			if inT {
				out.rows[id] = maps.Clone(rt)
			}
		} else if inO {
			out.rows[id] = maps.Clone(ro)
		}
	}
	return out, conflicts
}

// modelDiff lists the ids added, deleted and modified from a to b.
func modelDiff(a, b vmodel) (added, deleted, modified []uint64) {
	names := a.names()
	for _, c := range b.cols {
		if !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	ids := map[uint64]bool{}
	for id := range a.rows {
		ids[id] = true
	}
	for id := range b.rows {
		ids[id] = true
	}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		ra, inA := a.rows[id]
		rb, inB := b.rows[id]
		switch {
		case !inA:
			added = append(added, id)
		case !inB:
			deleted = append(deleted, id)
		case !sameRow(ra, rb, true, true, names):
			modified = append(modified, id)
		}
	}
	return
}

// checkVersion opens ref read-only or on its branch and compares every row
// with the model.
func checkVersion(t *testing.T, dir, ref string, m vmodel) {
	t.Helper()
	d, err := Open(ctx, dir, WithRef(ref))
	require.NoError(t, err, "open %s", ref)
	defer d.Close()
	require.EqualValues(t, len(m.rows), d.Len(), "%s: rows", ref)
	sch := d.Schema()
	require.Equal(t, m.names(), sch.Names(), "%s: columns", ref)
	cols := map[string]*ColumnReader{}
	for _, n := range m.names() {
		cols[n], err = d.Column(n)
		require.NoError(t, err)
	}
	seen := map[uint64]bool{}
	for i := int64(0); i < d.Len(); i++ {
		id := mustRowID(t, d, i)
		require.False(t, seen[id], "%s: row id %d twice", ref, id)
		seen[id] = true
		want, ok := m.rows[id]
		require.True(t, ok, "%s: row id %d is not in the model", ref, id)
		for n, c := range cols {
			got, err := c.Read(ctx, i, nil)
			require.NoError(t, err)
			w, ok := want[n]
			if !ok {
				w = Null()
			}
			require.True(t, sameSampleValue(w, got), "%s: row id %d column %s", ref, id, n)
		}
	}
}

// TestVersionsProperty applies random sequences of appends, updates,
// deletes, column additions, commits, branches, tags, merges, reverts,
// deletions of references and garbage collections to loch and to a model,
// and checks that every version reads exactly the model's rows, that diffs
// agree with the model's, and that gc never removes a reachable object.
func TestVersionsProperty(t *testing.T) {
	r := testseed.Rand(t, 11)
	for round := 0; round < 2; round++ {
		cols := randomColumns(r, 3)
		d, dir := mustCreate(t, schema.Schema{Columns: cols})
		h := &history{models: map[string]vmodel{d.Version(): {cols: d.Schema().Columns, rows: map[uint64]Row{}}},
			parents: map[string][]string{d.Version(): nil}, branches: map[string]string{"main": d.Version()}, tags: map[string]string{}}
		d.Close()
		pick := func(m map[string]string) string {
			return slices.Sorted(maps.Keys(m))[r.IntN(len(m))]
		}
		ops := map[string]int{}
		for step := 0; step < 50; step++ {
			switch op := r.IntN(15); {
			case op < 5: // write on a branch
				ops["write"]++
				br := pick(h.branches)
				w, err := Open(ctx, dir, WithRef(br))
				require.NoError(t, err)
				m := h.models[w.Version()].clone()
				var rows []Row
				for i := r.IntN(25); i > 0; i-- {
					row := Row{}
					for _, c := range w.stageColumns() {
						row[c.Name] = randomSample(r, c)
					}
					rows = append(rows, row)
				}
				require.NoError(t, w.Extend(ctx, rows))
				live := slices.Sorted(maps.Keys(m.rows))
				if len(live) > 0 && r.IntN(2) == 0 {
					id := live[r.IntN(len(live))]
					require.NoError(t, w.Delete(ctx, id))
					delete(m.rows, id)
					live = slices.DeleteFunc(live, func(x uint64) bool { return x == id })
				}
				if len(live) > 0 && r.IntN(3) > 0 {
					id := live[r.IntN(len(live))]
					if r.IntN(2) == 0 { // the oldest rows, shared by most branches: conflicts
						id = live[r.IntN(min(len(live), 3))]
					}
					c := w.stageColumns()[r.IntN(len(w.stageColumns()))]
					s := randomSample(r, c)
					require.NoError(t, w.Update(ctx, id, Row{c.Name: s}))
					m.rows[id][c.Name] = normalize(w, []Row{{c.Name: s}})[0][c.Name]
				}
				if r.IntN(4) == 0 {
					c := randomColumn(r, fmt.Sprintf("r%ds%d", round, step))
					require.NoError(t, w.AddColumn(ctx, c))
					m.cols = append(m.cols, c)
				}
				start := w.nextRowID(t)
				for i, row := range normalize(w, rows) {
					m.rows[start+uint64(i)] = row
				}
				parent := w.Version()
				id, err := w.Commit(ctx, fmt.Sprintf("step %d", step))
				require.NoError(t, err)
				w.Close()
				if id != parent {
					h.models[id], h.parents[id], h.branches[br] = m, []string{parent}, id
				}
				checkVersion(t, dir, br, m)
			case op <= 7: // branch from a branch, tag or reachable commit
				ops["branch"]++
				from := pick(h.branches)
				if len(h.tags) > 0 && r.IntN(3) == 0 {
					from = pick(h.tags)
				}
				fromID := h.branches[from]
				if id, ok := h.tags[from]; ok {
					fromID = id
				}
				if r.IntN(3) == 0 {
					all := h.reachable()
					fromID = all[r.IntN(len(all))]
					from = fromID
				}
				name := fmt.Sprintf("b%d", step)
				w, err := Open(ctx, dir)
				require.NoError(t, err)
				id, err := w.CreateBranch(ctx, name, from)
				require.NoError(t, err)
				require.Equal(t, fromID, id)
				_, err = w.CreateBranch(ctx, name, "main")
				require.ErrorIs(t, err, ErrExists)
				w.Close()
				h.branches[name] = id
			case op == 8: // tag
				ops["tag"]++
				br := pick(h.branches)
				name := fmt.Sprintf("t%d", step)
				w, err := Open(ctx, dir, WithRef(br))
				require.NoError(t, err)
				id, err := w.CreateTag(ctx, name, "")
				require.NoError(t, err)
				w.Close()
				require.Equal(t, h.branches[br], id)
				h.tags[name] = id
				tg, err := Open(ctx, dir, WithRef(name))
				require.NoError(t, err)
				require.ErrorIs(t, tg.Append(ctx, Row{}), ErrReadOnly)
				tg.Close()
			case op <= 11: // merge
				ops["merge"]++
				dst := pick(h.branches)
				src := pick(h.branches)
				if len(h.tags) > 0 && r.IntN(4) == 0 {
					src = pick(h.tags)
				}
				srcID, ok := h.branches[src]
				if !ok {
					srcID = h.tags[src]
				}
				strategy := []string{MergeFail, MergeOurs, MergeTheirs}[r.IntN(3)]
				w, err := Open(ctx, dir, WithRef(dst))
				require.NoError(t, err)
				head := w.Version()
				res, err := w.Merge(ctx, src, MergeOptions{Strategy: strategy})
				w.Close()
				bases := h.mergeBases(head, srcID)
				var ce *ConflictError
				if errors.As(err, &ce) {
					require.Equal(t, MergeFail, strategy)
					ops["merge conflict"]++
					// With several best common ancestors (criss-cross
					// merges) loch merges against one of them: its
					// conflicts must be exactly the model's against that one.
					var got []uint64
					for _, c := range ce.Conflicts {
						got = append(got, c.ID)
					}
					want := map[string][]uint64{}
					matched := false
					for _, b := range bases {
						_, conflicts := modelMerge(h.models[b], h.models[head], h.models[srcID], strategy)
						want[b] = conflicts
						matched = matched || (len(conflicts) > 0 && slices.Equal(conflicts, got))
					}
					require.True(t, matched, "loch's conflicting rows %v are the model's against no merge base: %v", got, want)
					checkVersion(t, dir, dst, h.models[head]) // nothing changed
					continue
				}
				require.NoError(t, err)
				require.Contains(t, bases, res.Base)
				want, conflicts := modelMerge(h.models[res.Base], h.models[head], h.models[srcID], strategy)
				switch {
				case res.UpToDate:
					ops["merge up to date"]++
					require.Equal(t, srcID, res.Base)
					require.Equal(t, head, res.Commit)
				case res.FastForward:
					ops["merge fast forward"]++
					require.Equal(t, head, res.Base)
					require.Equal(t, srcID, res.Commit)
					h.branches[dst] = srcID
				default:
					ops["merge commit"]++
					if strategy == MergeFail {
						require.Empty(t, conflicts)
					}
					require.Len(t, res.Conflicts, len(conflicts))
					ops["merge conflicts resolved"] += len(conflicts)
					h.models[res.Commit], h.parents[res.Commit], h.branches[dst] = want, []string{head, srcID}, res.Commit
				}
				checkVersion(t, dir, dst, h.models[h.branches[dst]])
			case op == 12: // revert a branch to one of its ancestors
				ops["revert"]++
				br := pick(h.branches)
				anc := slices.Sorted(maps.Keys(h.ancestors(h.branches[br])))
				to := anc[r.IntN(len(anc))]
				w, err := Open(ctx, dir, WithRef(br))
				require.NoError(t, err)
				head := w.Version()
				id, err := w.Revert(ctx, to, "")
				require.NoError(t, err)
				w.Close()
				h.models[id], h.parents[id], h.branches[br] = h.models[to].clone(), []string{head}, id
				checkVersion(t, dir, br, h.models[id])
			case op == 13: // diff two reachable versions, paged
				ops["diff"]++
				all := h.reachable()
				a, b := all[r.IntN(len(all))], all[r.IntN(len(all))]
				added, deleted, modified := modelDiff(h.models[a], h.models[b])
				w, err := Open(ctx, dir)
				require.NoError(t, err)
				var gotA, gotD, gotM []uint64
				var start uint64
				for {
					df, err := w.Diff(ctx, a, b, DiffOptions{Start: start, Limit: 7})
					require.NoError(t, err)
					require.EqualValues(t, len(added), df.Added)
					require.EqualValues(t, len(deleted), df.Deleted)
					require.EqualValues(t, len(modified), df.Modified)
					for _, rc := range df.Rows {
						switch rc.Change {
						case ChangeAdded:
							gotA = append(gotA, rc.ID)
						case ChangeDeleted:
							gotD = append(gotD, rc.ID)
						case ChangeModified:
							gotM = append(gotM, rc.ID)
							require.NotEmpty(t, rc.Columns)
						}
					}
					if df.Next == nil {
						break
					}
					require.Greater(t, *df.Next, start)
					start = *df.Next
				}
				w.Close()
				require.Equal(t, added, gotA)
				require.Equal(t, deleted, gotD)
				require.Equal(t, modified, gotM)
			default: // delete a reference, then collect garbage
				ops["gc"]++
				w, err := Open(ctx, dir)
				require.NoError(t, err)
				if len(h.tags) > 0 && r.IntN(2) == 0 {
					name := pick(h.tags)
					require.NoError(t, w.DeleteTag(ctx, name))
					delete(h.tags, name)
				} else if len(h.branches) > 1 {
					name := pick(h.branches)
					if name != "main" {
						require.NoError(t, w.DeleteBranch(ctx, name))
						delete(h.branches, name)
					}
				}
				rep, err := w.GC(ctx, GCOptions{})
				require.NoError(t, err)
				t.Logf("gc: %+v", rep.Deleted)
				_, problems, err := w.Verify(ctx)
				require.NoError(t, err)
				require.Empty(t, problems)
				w.Close()
				for _, id := range h.reachable() {
					checkVersion(t, dir, id, h.models[id])
				}
			}
		}
		t.Logf("round %d: %v", round, ops)
		for name, id := range h.branches {
			checkVersion(t, dir, name, h.models[id])
		}
		for name, id := range h.tags {
			checkVersion(t, dir, name, h.models[id])
		}
		w, err := Open(ctx, dir)
		require.NoError(t, err)
		_, problems, err := w.Verify(ctx)
		require.NoError(t, err)
		require.Empty(t, problems)
		w.Close()
	}
}

// TestAsOf opens a branch as it was at earlier times.
func TestAsOf(t *testing.T) {
	d, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "n", DType: schema.Int64}}})
	var times []time.Time
	var versions []string
	for i := 0; i < 5; i++ {
		require.NoError(t, d.Append(ctx, Row{"n": Scalar(int64(i))}))
		v, err := d.Commit(ctx, "one row")
		require.NoError(t, err)
		versions = append(versions, v)
		time.Sleep(5 * time.Millisecond)
		times = append(times, time.Now())
		time.Sleep(5 * time.Millisecond)
	}
	_, err := d.CreateBranch(ctx, "side", "")
	require.NoError(t, err)
	for i, at := range times {
		old, err := Open(ctx, dir, WithAsOf(at))
		require.NoError(t, err)
		require.Equal(t, versions[i], old.Version())
		require.EqualValues(t, i+1, old.Len())
		require.True(t, old.ReadOnly())
		require.ErrorIs(t, old.Append(ctx, Row{}), ErrReadOnly)
		old.Close()
	}
	_, err = Open(ctx, dir, WithAsOf(times[0].Add(-time.Hour)))
	require.ErrorIs(t, err, ErrNotFound)
	_, err = Open(ctx, dir, WithRef("side"), WithAsOf(times[2]))
	require.ErrorIs(t, err, ErrNotFound, "the branch did not exist then")
}

// TestBranchCostIndependentOfSize: creating a branch writes one log entry
// (and the hint) and nothing else, the same on 10 rows as on 200,000; so
// does a tag.
func TestBranchCostIndependentOfSize(t *testing.T) {
	measure := func(rows int) map[string]int {
		d, _ := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "v", DType: schema.Int64}}})
		batch := make([]Row, rows)
		for i := range batch {
			batch[i] = Row{"v": Scalar(int64(i))}
		}
		require.NoError(t, d.Extend(ctx, batch))
		_, err := d.Commit(ctx, "rows")
		require.NoError(t, err)
		cs := &countingStore{storageStore: d.store, written: map[string]int{}}
		d.store = cs
		_, err = d.CreateBranch(ctx, "experiment", "")
		require.NoError(t, err)
		_, err = d.CreateTag(ctx, "v1", "experiment")
		require.NoError(t, err)
		return cs.written
	}
	small, large := measure(10), measure(200000)
	t.Logf("branch and tag on 10 rows wrote %v; on 200,000 rows %v", small, large)
	require.ElementsMatch(t, slices.Collect(maps.Keys(small)), slices.Collect(maps.Keys(large)), "the same objects")
	for k, n := range large {
		require.True(t, strings.HasPrefix(k, keys.LogPrefix), "only log entries are written, not %s", k)
		require.InDelta(t, small[k], n, 8, "%s: the same size but for the digits of the row-id counter", k)
	}
}

// TestIdenticalUpdatesMerge: a branch that rewrites rows with the values
// they already have (the same update twice) still has every row exactly
// once, and merges and diffs by row location stay exact.
func TestIdenticalUpdatesMerge(t *testing.T) {
	d, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "v", DType: schema.Int64}}})
	for i := 0; i < 20; i++ {
		require.NoError(t, d.Append(ctx, Row{"v": Scalar(int64(i))}))
	}
	_, err := d.Commit(ctx, "rows")
	require.NoError(t, err)
	update := func(h *Dataset) {
		for _, id := range []uint64{3, 7} {
			require.NoError(t, h.Update(ctx, id, Row{"v": Scalar(int64(-1))}))
		}
		_, err := h.Commit(ctx, "same update")
		require.NoError(t, err)
	}
	update(d)
	again := openNewBranch(t, d, dir, "again")
	update(again) // byte-identical rows, a second time
	require.NoError(t, again.Append(ctx, Row{"v": Scalar(int64(100))}))
	_, err = again.Commit(ctx, "one more")
	require.NoError(t, err)
	keys := map[string]bool{}
	for _, f := range again.current().frags {
		require.False(t, keys[f.ident()], "fragment %s named twice in one version", f.ident())
		keys[f.ident()] = true
	}
	require.NoError(t, d.Append(ctx, Row{"v": Scalar(int64(200))}))
	_, err = d.Commit(ctx, "main moves")
	require.NoError(t, err)
	res, err := d.Merge(ctx, "again", MergeOptions{})
	require.NoError(t, err)
	require.False(t, res.FastForward)
	require.EqualValues(t, 22, d.Len(), "20 rows and one appended on each side")
	df, err := d.Diff(ctx, "again", "main", DiffOptions{Limit: -1})
	require.NoError(t, err)
	require.Zero(t, df.Modified, "the same values on both sides")
	require.EqualValues(t, 1, df.Added)
}

// TestMergeKeepsShapeStatistics: a column whose samples all come from the
// merged branch gets that branch's shape bounds (they were dropped when the
// target side had none).
func TestMergeKeepsShapeStatistics(t *testing.T) {
	d, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{
		{Name: "v", DType: schema.Int32, Shape: schema.Shape{-1}},
		{Name: "w", DType: schema.Int32, Shape: schema.Shape{1}},
	}})
	require.NoError(t, d.Append(ctx, Row{"w": Tensor([]int{1}, []int32{0})}))
	_, err := d.Commit(ctx, "base")
	require.NoError(t, err)
	dev := openNewBranch(t, d, dir, "dev")
	require.NoError(t, dev.Append(ctx, Row{"v": Tensor([]int{3}, []int32{1, 2, 3})}))
	require.NoError(t, dev.Append(ctx, Row{"v": Tensor([]int{5}, []int32{1, 2, 3, 4, 5})}))
	_, err = dev.Commit(ctx, "v on dev")
	require.NoError(t, err)
	require.NoError(t, d.Append(ctx, Row{"w": Tensor([]int{1}, []int32{1})}))
	_, err = d.Commit(ctx, "w on main")
	require.NoError(t, err)
	res, err := d.Merge(ctx, "dev", MergeOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, res.Commit)
	c := statsOf(t, d, "v")
	require.Equal(t, []int{3}, c.MinShape)
	require.Equal(t, []int{5}, c.MaxShape)
	require.EqualValues(t, 2, c.Samples)
}

// TestLongRefIsCutInErrors: a reference of 100,000 characters that names
// nothing is refused with an error that quotes only its start.
func TestLongRefIsCutInErrors(t *testing.T) {
	_, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "n", DType: schema.Int64}}})
	long := strings.Repeat("x", 100_000)
	_, err := Open(ctx, dir, WithRef(long))
	require.ErrorIs(t, err, ErrNotFound)
	require.Less(t, len(err.Error()), 1000, "the error echoes the reference cut short")
	require.Contains(t, err.Error(), strings.Repeat("x", 200)+"...")
}

// TestRefNamedLikeAVersionPrefix: a branch or tag whose name is a prefix
// of an existing version id is refused (it would hide that version from
// references); one made earlier (here written into the log directly, as
// an older loch could) still names the branch, and the context's
// Warnings say so, as git warns "refname is ambiguous". A qualified name
// (heads/...) and a name that prefixes no version do not warn.
func TestRefNamedLikeAVersionPrefix(t *testing.T) {
	d, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "n", DType: schema.Int64}}})
	v1 := d.Version()
	require.NoError(t, d.Append(ctx, Row{"n": Scalar[int64](1)}))
	v2, err := d.Commit(ctx, "one")
	require.NoError(t, err)

	for _, create := range []func(context.Context, string, string) (string, error){d.CreateBranch, d.CreateTag} {
		_, err := create(ctx, v1[:8], "")
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.ErrorContains(t, err, "the name is a prefix of version "+v1)
	}
	refs, err := d.Refs(ctx)
	require.NoError(t, err)
	require.Len(t, refs, 1, "nothing created")

	_, err = d.updateRoot(ctx, "old branch", func(_, next *manifest.Root) error {
		next.Refs[headsPrefix+v1[:8]] = v2
		return nil
	})
	require.NoError(t, err)
	var warned []string
	wctx := WithWarnings(ctx, func(msg string) { warned = append(warned, msg) })
	id, err := d.Resolve(wctx, v1[:8])
	require.NoError(t, err)
	require.Equal(t, v2, id, "the branch wins")
	require.Equal(t, []string{fmt.Sprintf("%s: reference %q is ambiguous: it names branch %q and is a prefix of version %s; using branch %q (write heads/%s for it, or more digits of the version id for the version)",
		d.URL(), v1[:8], v1[:8], v1, v1[:8], v1[:8])}, warned)

	warned = nil
	o, err := Open(wctx, dir, WithRef(v1[:8]))
	require.NoError(t, err)
	require.Equal(t, v2, o.Version())
	require.NoError(t, o.Close())
	require.Len(t, warned, 1, "Open warns too")

	warned = nil
	_, err = d.Resolve(wctx, headsPrefix+v1[:8])
	require.NoError(t, err)
	_, err = d.CreateBranch(wctx, "abcdef0123", "")
	if err == nil { // unless a version happens to start so
		_, err = d.Resolve(wctx, "abcdef0123")
		require.NoError(t, err)
	}
	id, err = d.Resolve(wctx, v1[:9])
	require.NoError(t, err)
	require.Equal(t, v1, id, "more digits name the version")
	require.Empty(t, warned)
}

// TestParseTime pins the one rule of as_of times that the CLI, SQL, the C
// ABI and Python share: RFC 3339, a date and time in UTC, or a date at
// 00:00 UTC.
func TestParseTime(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2024-05-01T12:00:00Z", time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)},
		{"2024-05-01T14:00:00.5+02:00", time.Date(2024, 5, 1, 12, 0, 0, 5e8, time.UTC)},
		{"2024-05-01 12:00:00", time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)},
		{"2024-05-01 12:00:00.25", time.Date(2024, 5, 1, 12, 0, 0, 25e7, time.UTC)},
		{"2024-05-01T12:00:00", time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)},
		{"2024-05-01", time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)},
	} {
		got, err := ParseTime(tc.in)
		require.NoError(t, err, tc.in)
		require.True(t, tc.want.Equal(got), "%s: got %s, want %s", tc.in, got, tc.want)
	}
	for _, bad := range []string{"", "yesterday", "2024-05-01T12:00", "05/01/2024", "2024-05-01 12:00:00+02:00", "2024-13-01"} {
		_, err := ParseTime(bad)
		require.ErrorIs(t, err, ErrInvalidArgument, "%q", bad)
		require.ErrorContains(t, err, "is not a time", "%q", bad)
	}
}
