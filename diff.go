package loch

import (
	"context"
	"fmt"

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
	err = joinRows([][]rowLoc{ra, rb}, func(id uint64, at []*rowLoc) error {
		x, y := at[0], at[1]
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
		to := c
		old, ok := byUID[c.UID]
		if !ok {
			out = append(out, ColumnChange{Name: c.Name, Change: "added", To: &to})
			continue
		}
		if !sameColumns([]schema.Column{old}, []schema.Column{c}) {
			from := old
			out = append(out, ColumnChange{Name: c.Name, Change: "changed", From: &from, To: &to})
		}
	}
	for _, c := range a.Columns {
		if !seen[c.UID] {
			from := c
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
