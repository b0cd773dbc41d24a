package loch

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lochdata/loch/manifest"

	"github.com/lochdata/loch/schema"
)

// Row change kinds in RowChange.Change and Conflict.
const (
	ChangeAdded    = "added"
	ChangeDeleted  = "deleted"
	ChangeModified = "modified"
)

// DiffOptions selects the page of row changes that Diff returns.
type DiffOptions struct {
	// Start is the smallest row id listed in Diff.Rows (for paging, pass the
	// previous page's Diff.Next).
	Start uint64
	// Limit bounds len(Diff.Rows): 0 means 1000; a negative limit lists no
	// rows (counts only).
	Limit int
}

// ColumnChange is one schema difference between two versions.
type ColumnChange struct {
	Name   string         `json:"name"`
	Change string         `json:"change"` // "added", "removed" or "changed"
	From   *schema.Column `json:"from,omitempty"`
	To     *schema.Column `json:"to,omitempty"`
}

// RowChange is one row that differs between two versions, by stable row id.
type RowChange struct {
	ID      uint64   `json:"id"`
	Change  string   `json:"change"`            // ChangeAdded, ChangeDeleted or ChangeModified
	Columns []string `json:"columns,omitempty"` // modified columns
}

// Diff is the difference between two versions.
type Diff struct {
	From             string           `json:"from"`
	To               string           `json:"to"`
	Schema           []ColumnChange   `json:"schema"`
	Added            int64            `json:"added"`
	Deleted          int64            `json:"deleted"`
	Modified         int64            `json:"modified"`
	ModifiedByColumn map[string]int64 `json:"modified_by_column"`
	Rows             []RowChange      `json:"rows"`
	// Next is the Start of the next page, or nil when Rows ends the diff.
	Next *uint64 `json:"next,omitempty"`
}

// Diff compares the versions that references from and to name ("" for the
// handle's version): rows added, deleted and modified (per column; a column
// a version lacks reads as null) by stable row id, and schema changes. Counts
// cover the whole diff; Rows holds one page of the row changes in id order.
//
// Fragments that the two versions share with the same deletions are skipped
// without reading them, so the cost grows with the size of the change, not
// of the dataset; a row that moved (an update) is compared sample by sample.
func (d *Dataset) Diff(ctx context.Context, from, to string, opts DiffOptions) (*Diff, error) {
	a, err := d.snapshotOf(ctx, from)
	if err != nil {
		return nil, err
	}
	b, err := d.snapshotOf(ctx, to)
	if err != nil {
		return nil, err
	}
	limit := opts.Limit
	if limit == 0 {
		limit = 1000
	}
	out := &Diff{From: a.commitID, To: b.commitID, Schema: schemaChanges(a.man.Schema, b.man.Schema),
		ModifiedByColumn: map[string]int64{}, Rows: []RowChange{}}
	cols := unionColumns(a.man.Schema, b.man.Schema)
	rows, _, err := d.changedRows(ctx, a, b)
	if err != nil {
		return nil, err
	}
	ra, rb := rows[0], rows[1]
	record := func(rc RowChange) {
		if rc.ID < opts.Start || limit < 0 {
			return
		}
		if len(out.Rows) < limit {
			out.Rows = append(out.Rows, rc)
		} else if out.Next == nil {
			next := rc.ID
			out.Next = &next
		}
	}
	err = joinRows(ra, rb, func(id uint64, x, y *rowLoc) error {
		switch {
		case y == nil:
			out.Deleted++
			record(RowChange{ID: id, Change: ChangeDeleted})
		case x == nil:
			out.Added++
			record(RowChange{ID: id, Change: ChangeAdded})
		case a.frags[x.frag].ident() == b.frags[y.frag].ident() && x.off == y.off:
		default:
			changed, err := d.changedColumns(ctx, a, x, b, y, cols)
			if err != nil {
				return err
			}
			if len(changed) == 0 {
				return nil
			}
			out.Modified++
			for _, c := range changed {
				out.ModifiedByColumn[c]++
			}
			record(RowChange{ID: id, Change: ChangeModified, Columns: changed})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("diff %s..%s of %s: %w", a.commitID, b.commitID, d.url, err)
	}
	return out, nil
}

// snapshotOf loads the snapshot a reference names; "" is the handle's.
func (d *Dataset) snapshotOf(ctx context.Context, ref string) (*snapshot, error) {
	if ref == "" {
		return d.current(), nil
	}
	root, err := d.latestRoot(ctx)
	if err != nil {
		return nil, err
	}
	t, err := d.resolveIn(ctx, root, ref)
	if err != nil {
		return nil, err
	}
	if cur := d.current(); cur.commitID == t.commit {
		return cur, nil
	}
	return d.loadSnapshot(ctx, t.commit, t.seq)
}

// schemaChanges lists columns added, removed or redefined from a to b,
// matching columns by their uid.
func schemaChanges(a, b schema.Schema) []ColumnChange {
	out := []ColumnChange{}
	byUID := map[int]schema.Column{}
	for _, c := range a.Columns {
		byUID[c.UID] = c
	}
	seen := map[int]bool{}
	for _, c := range b.Columns {
		seen[c.UID] = true
		to := c.Definition()
		old, ok := byUID[c.UID]
		if !ok {
			out = append(out, ColumnChange{Name: c.Name, Change: "added", To: &to})
			continue
		}
		if !sameColumns([]schema.Column{old}, []schema.Column{c}) {
			from := old.Definition()
			out = append(out, ColumnChange{Name: c.Name, Change: "changed", From: &from, To: &to})
		}
	}
	for _, c := range a.Columns {
		if !seen[c.UID] {
			from := c.Definition()
			out = append(out, ColumnChange{Name: c.Name, Change: "removed", From: &from})
		}
	}
	return out
}

// column names a column of one of two versions by uid.
type column struct {
	uid  int
	name string
}

// unionColumns lists the columns of a and then those only b has, matched by
// uid. A row's sample in a column its version lacks is null: a row that
// gains a value in an added column is modified in that column.
func unionColumns(a, b schema.Schema) []column {
	in := map[int]bool{}
	var out []column
	for _, c := range a.Columns {
		in[c.UID] = true
		out = append(out, column{uid: c.UID, name: c.Name})
	}
	for _, c := range b.Columns {
		if !in[c.UID] {
			out = append(out, column{uid: c.UID, name: c.Name})
		}
	}
	return out
}

// rowLoc is where a live row of a snapshot is stored.
type rowLoc struct {
	id   uint64
	frag int   // index into the snapshot's frags
	off  int64 // offset in the fragment
}

// newFragState makes the state of a manifest's fragment, not yet loaded.
func newFragState(ref manifest.FragmentRef) *fragState {
	id := ref.Key
	if ref.IDStart != nil {
		id += "@" + strconv.FormatUint(*ref.IDStart, 10)
	}
	return &fragState{ref: ref, id: id}
}

// ident names a fragment's rows: its object and, for appended fragments,
// the first row id (two identical appends share an object but not ids).
func (f *fragState) ident() string { return f.id }

// rowsKey names a fragment's live rows with their data: its identity,
// extensions and deletions. Two references with one rowsKey hold the same
// live rows with the same samples.
func (f *fragState) rowsKey() string {
	return f.id + "|" + f.ref.Deletions + "|" + strings.Join(f.ref.Extensions, ",")
}

// changedRows lists, sorted by id, the live rows of each snapshot that are
// not in a fragment all the snapshots hold with the same rows. It also
// returns the rowsKeys of the fragments it skipped.
func (d *Dataset) changedRows(ctx context.Context, snaps ...*snapshot) ([][]rowLoc, map[string]bool, error) {
	count := map[string]int{}
	for _, s := range snaps {
		for _, f := range s.frags {
			count[f.rowsKey()]++
		}
	}
	same := map[string]bool{}
	for k, n := range count {
		if n >= len(snaps) {
			same[k] = true
		}
	}
	out := make([][]rowLoc, len(snaps))
	for i, s := range snaps {
		rows, err := d.liveRows(ctx, s, func(f *fragState) bool { return !same[f.rowsKey()] })
		if err != nil {
			return nil, nil, err
		}
		out[i] = rows
	}
	return out, same, nil
}

// liveRows lists the live rows of the fragments that include selects,
// sorted by row id.
func (d *Dataset) liveRows(ctx context.Context, s *snapshot, include func(*fragState) bool) ([]rowLoc, error) {
	n := int64(0)
	for _, f := range s.frags {
		if include(f) {
			n += f.ref.Live()
		}
	}
	out := make([]rowLoc, 0, n)
	for k, f := range s.frags {
		if !include(f) {
			continue
		}
		if err := f.load(ctx, d); err != nil {
			return nil, err
		}
		del := f.deleted
		emit := func(off int64, id uint64) {
			if len(del) > 0 && del[0] == off {
				del = del[1:]
				return
			}
			out = append(out, rowLoc{id: id, frag: k, off: off})
		}
		if f.ref.IDStart != nil {
			for off := int64(0); off < f.ref.Rows; off++ {
				emit(off, *f.ref.IDStart+uint64(off))
			}
			continue
		}
		var off int64
		for _, r := range f.ids {
			for j := uint64(0); j < r[1]; j++ {
				emit(off, r[0]+j)
				off++
			}
		}
	}
	byID := func(x, y rowLoc) int { return cmp.Compare(x.id, y.id) }
	if !slices.IsSortedFunc(out, byID) {
		slices.SortFunc(out, byID)
	}
	for i := 1; i < len(out); i++ {
		if out[i].id == out[i-1].id {
			return nil, fmt.Errorf("version %s holds row id %d twice: %w", s.commitID, out[i].id, ErrCorrupt)
		}
	}
	return out, nil
}

// joinRows calls fn for every row id in a or b (both sorted by id), in id
// order, with its location on each side (nil where absent).
func joinRows(a, b []rowLoc, fn func(id uint64, x, y *rowLoc) error) error {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var err error
		switch {
		case j == len(b) || i < len(a) && a[i].id < b[j].id:
			err = fn(a[i].id, &a[i], nil)
			i++
		case i == len(a) || b[j].id < a[i].id:
			err = fn(b[j].id, nil, &b[j])
			j++
		default:
			err = fn(a[i].id, &a[i], &b[j])
			i++
			j++
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// changedColumns lists the columns (of cols) whose samples differ between
// a row at x in snapshot a and at y in snapshot b.
func (d *Dataset) changedColumns(ctx context.Context, a *snapshot, x *rowLoc, b *snapshot, y *rowLoc, cols []column) ([]string, error) {
	var out []string
	for _, c := range cols {
		same, err := d.sameSample(ctx, a.frags[x.frag], x.off, b.frags[y.frag], y.off, c.uid)
		if err != nil {
			return nil, fmt.Errorf("row id %d: column %q: %w", x.id, c.name, err)
		}
		if !same {
			out = append(out, c.name)
		}
	}
	return out, nil
}

// sameSample compares the stored samples of a column at two locations.
func (d *Dataset) sameSample(ctx context.Context, fa *fragState, offA int64, fb *fragState, offB int64, uid int) (bool, error) {
	refsA, refsB := fa.cols[uid], fb.cols[uid]
	if len(refsA) > 0 && len(refsB) > 0 {
		ka, kb := searchRef(refsA, offA), searchRef(refsB, offB)
		if refsA[ka].Key == refsB[kb].Key && refsA[ka].Parts == 0 && offA-refsA[ka].First == offB-refsB[kb].First {
			return true, nil
		}
	}
	sa, err := d.sampleIn(ctx, refsA, offA)
	if err != nil {
		return false, err
	}
	sb, err := d.sampleIn(ctx, refsB, offB)
	if err != nil {
		return false, err
	}
	return sa.Null == sb.Null && equalShape(sa.Shape, sb.Shape) && bytes.Equal(sa.Data, sb.Data), nil
}

// sampleIn reads the stored (encoded) sample at a fragment offset from a
// column's chunk refs; no refs means null.
func (d *Dataset) sampleIn(ctx context.Context, refs []manifest.ChunkRef, off int64) (Sample, error) {
	if len(refs) == 0 {
		return Sample{Null: true}, nil
	}
	k := searchRef(refs, off)
	return d.readSample(ctx, refs, k, off-refs[k].First, true)
}
