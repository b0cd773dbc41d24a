package loch

// Rebase: moving a handle's staged changes onto a branch head that other
// writers moved since the stage began, by stable row id. Commit rebases on
// every attempt of its loop; Refresh rebases the stage for good.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lochdata/loch/schema"
)

// RowConflictError is returned (wrapping ErrConflict) by Commit when rows
// that the staged changes delete or update were deleted or changed on the
// branch since the stage's base. Nothing was committed and the changes stay
// staged: Refresh moves those that do not conflict onto the branch head,
// then DiscardConflicts drops the conflicting ones (or Discard everything).
type RowConflictError struct {
	URL    string
	Branch string
	Head   string   // the branch head the rows conflict with
	IDs    []uint64 // the conflicting row ids, ascending
}

// conflictIDsShown bounds the row ids a RowConflictError's message lists.
const conflictIDsShown = 10

func (e *RowConflictError) Error() string {
	return fmt.Sprintf("commit %s: %d staged row(s) this commit deletes or updates were deleted or changed on branch %s by another commit (head %s): %s; nothing was committed: refresh to rebase the other staged changes, then discard the conflicting ones or all of them",
		e.URL, len(e.IDs), e.Branch, e.Head, e.Rows())
}

// Rows names the conflicting rows for a message: "row ids 3, 7" (the first
// ten, then "and N more").
func (e *RowConflictError) Rows() string {
	var b strings.Builder
	b.WriteString("row ids ")
	for i, id := range e.IDs[:min(len(e.IDs), conflictIDsShown)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, id)
	}
	if n := len(e.IDs) - conflictIDsShown; n > 0 {
		fmt.Fprintf(&b, " and %d more", n)
	}
	return b.String()
}

func (e *RowConflictError) Unwrap() error { return ErrConflict }

// HeadMovedError is the error of CommitUnmoved when another commit moved
// the branch since the staged changes' snapshot: nothing was committed.
type HeadMovedError struct {
	URL    string
	Branch string
	Base   string // the version the changes were staged on
	Head   string // the branch's head now
}

func (e *HeadMovedError) Error() string {
	return fmt.Sprintf("commit %s: branch %s moved from %s to %s since these changes were staged, and this commit does not rebase; nothing was committed",
		e.URL, e.Branch, e.Base, e.Head)
}

func (e *HeadMovedError) Unwrap() error { return ErrConflict }

// rebase returns the snapshot the stage's changes apply to, with the
// location there of each row they delete or update: the stage's base, or,
// when the branch moved to head since, head's, if the stage's changes can
// move onto it (rebaseSchema, rebaseRows); else ErrConflict (a
// *RowConflictError for rows).
func (d *Dataset) rebase(ctx context.Context, st *staging, branch, head string, seq uint64) (*snapshot, map[uint64]rowLoc, error) {
	if head == st.base.commitID {
		return st.base, st.deletes, nil
	}
	hs, err := d.loadSnapshot(ctx, head, seq)
	if err != nil {
		return nil, nil, err
	}
	if err := rebaseSchema(st.base.man.Schema, hs.man.Schema, st.addedColumns()); err != nil {
		return nil, nil, fmt.Errorf("commit %s: branch %s moved from %s to %s since this handle's snapshot, and %w; nothing was committed: discard the staged changes: %w",
			d.url, branch, st.base.commitID, head, err, ErrConflict)
	}
	staged, err := st.changedRows(ctx)
	if err != nil {
		return nil, nil, err
	}
	rows, conflicts, err := d.rebaseRows(ctx, st.base, hs, staged)
	if err != nil {
		return nil, nil, fmt.Errorf("commit %s: rebase onto %s: %w", d.url, head, err)
	}
	if len(conflicts) > 0 {
		return nil, nil, &RowConflictError{URL: d.url, Branch: branch, Head: head, IDs: conflicts}
	}
	return hs, st.deleted(rows), nil
}

// changedRows returns the rows the stage deletes or updates, with their
// locations in its base.
func (st *staging) changedRows(ctx context.Context) (map[uint64]rowLoc, error) {
	if len(st.patches) == 0 {
		return st.deletes, nil
	}
	out := maps.Clone(st.deletes)
	for id := range st.patches {
		if st.conflicts[id] {
			continue
		}
		k, off, err := st.d.findRow(ctx, st.base, id)
		if err != nil {
			return nil, fmt.Errorf("update row id %d: %w", id, err)
		}
		out[id] = rowLoc{id: id, frag: k, off: off}
	}
	return out, nil
}

// deleted keeps, of rows, those the stage deletes (updates are applied
// where they are, by applyPatches).
func (st *staging) deleted(rows map[uint64]rowLoc) map[uint64]rowLoc {
	out := make(map[uint64]rowLoc, len(st.deletes))
	for id := range st.deletes {
		if l, ok := rows[id]; ok {
			out[id] = l
		}
	}
	return out
}

// rebaseSchema checks that changes staged against a version of schema base
// can apply to one of schema head: head has each of base's columns (by uid)
// with the same definition, and the columns only head has (added there
// since) share no name with a column the stage adds.
func rebaseSchema(base, head schema.Schema, added []schema.Column) error {
	for _, c := range base.Columns {
		h, ok := head.ByUID(c.UID)
		if !ok {
			return fmt.Errorf("column %q was removed there", c.Name)
		}
		if !sameColumns([]schema.Column{c}, []schema.Column{*h}) {
			return fmt.Errorf("column %q was redefined there", c.Name)
		}
	}
	for _, h := range head.Columns {
		if _, ok := base.ByUID(h.UID); ok {
			continue
		}
		if slices.ContainsFunc(added, func(a schema.Column) bool { return a.Name == h.Name }) {
			return fmt.Errorf("column %q was added both there and in this commit", h.Name)
		}
	}
	return nil
}

// rebaseRows locates in head the rows (by id, located in base) that staged
// changes delete or update. A row is rebased when it is live in head and
// unchanged since base: at the same location (fragment identity, offset
// and extensions), or, moved (a rewrite that kept its id), with the same
// sample in every column. The others, deleted or changed in head, are
// returned as conflicts, ascending.
func (d *Dataset) rebaseRows(ctx context.Context, base, head *snapshot, rows map[uint64]rowLoc) (map[uint64]rowLoc, []uint64, error) {
	byIdent := make(map[string]int, len(head.frags))
	for k, f := range head.frags {
		byIdent[f.ident()] = k
	}
	cols := unionColumns(base.man.Schema, head.man.Schema)
	out := make(map[uint64]rowLoc, len(rows))
	var conflicts []uint64
	for _, id := range slices.Sorted(maps.Keys(rows)) {
		x := rows[id]
		fb := base.frags[x.frag]
		if k, ok := byIdent[fb.ident()]; ok && slices.Equal(head.frags[k].ref.Extensions, fb.ref.Extensions) {
			fh := head.frags[k]
			if err := fh.load(ctx, d); err != nil {
				return nil, nil, err
			}
			if !fh.isDeleted(x.off) {
				out[id] = rowLoc{id: id, frag: k, off: x.off}
				continue
			}
		}
		k, off, err := d.findRow(ctx, head, id)
		if errors.Is(err, ErrNotFound) {
			conflicts = append(conflicts, id) // deleted there
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		y := rowLoc{id: id, frag: k, off: off}
		changed, err := d.changedColumns(ctx, base, &x, head, &y, cols)
		if err != nil {
			return nil, nil, err
		}
		if len(changed) > 0 {
			conflicts = append(conflicts, id)
			continue
		}
		out[id] = y
	}
	return out, conflicts, nil
}

// rebaseStage moves the stage onto head for good (Refresh): the rows it
// deletes or updates that rebaseRows rebases are located in head, the
// others become the stage's conflicts (Commit refuses them until
// DiscardConflicts or Discard), and the stage's schema becomes head's with
// the stage's added columns (given fresh provisional uids past head's). A
// stage whose schema cannot move onto head's (rebaseSchema) stays on its
// base, and its Commit reports why.
func (d *Dataset) rebaseStage(ctx context.Context, st *staging, head *snapshot) error {
	if st.base.commitID == head.commitID {
		return nil
	}
	added := st.addedColumns()
	if rebaseSchema(st.base.man.Schema, head.man.Schema, added) != nil {
		return nil
	}
	staged, err := st.changedRows(ctx)
	if err != nil {
		return err
	}
	rows, conflicts, err := d.rebaseRows(ctx, st.base, head, staged)
	if err != nil {
		return fmt.Errorf("refresh %s: rebase the staged changes onto %s: %w", d.url, head.commitID, err)
	}
	for _, id := range conflicts {
		st.conflicts[id] = true
		delete(rows, id)
	}
	st.deletes = st.deleted(rows)
	// Renumber the added columns past head's uids, in the writers and
	// statistics that name them, then re-point the writers' columns into
	// the new column list.
	next := max(st.nextUID, head.man.NextColumnUID)
	renum := map[int]int{}
	cols := make([]schema.Column, 0, len(head.man.Schema.Columns)+len(added))
	for _, c := range head.man.Schema.Columns {
		cols = append(cols, c)
	}
	for _, c := range added {
		renum[c.UID] = next
		c.UID = next
		next++
		cols = append(cols, c)
	}
	deltas := map[int]*colDelta{}
	for uid, dl := range st.deltas {
		if u, ok := renum[uid]; ok {
			uid = u
		}
		deltas[uid] = dl
	}
	for id, vals := range st.patches {
		st.patches[id] = renamed(vals, renum)
	}
	sch := &schema.Schema{Columns: cols}
	for _, fw := range st.writers() {
		m := make(map[int]*colWriter, len(fw.cols))
		for uid, cw := range fw.cols {
			if u, ok := renum[uid]; ok {
				uid = u
			}
			cw.col, _ = sch.ByUID(uid)
			m[uid] = cw
		}
		fw.cols = m
	}
	st.cols, st.deltas, st.nextUID, st.base = cols, deltas, next, head
	return nil
}

// DiscardConflicts drops the staged deletions and updates of the rows that
// the last Refresh found deleted or changed on the branch since they were
// staged, and returns their ids, ascending. The handle's other staged
// changes stay staged; its next Commit publishes them.
func (d *Dataset) DiscardConflicts() []uint64 {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	st := d.stage
	if st == nil || len(st.conflicts) == 0 {
		return nil
	}
	ids := sortedIDs(st.conflicts)
	for _, id := range ids {
		delete(st.patches, id)
	}
	st.conflicts = map[uint64]bool{}
	return ids
}

func sortedIDs(m map[uint64]bool) []uint64 { return slices.Sorted(maps.Keys(m)) }
