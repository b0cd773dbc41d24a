package loch

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/schema"
)

// Commit makes the staged writes visible as a new snapshot on the handle's
// branch and returns its version id. With nothing staged it returns the
// current version. If other writers committed to the branch since the
// staged changes' snapshot, the changes are rebased onto their commits by
// row id (docs/format.md §2.3) and the commit retried, a bounded number of
// times: appends always; deletions and updates of rows that those commits
// left alone. When they deleted or changed one of those rows, Commit fails
// with a *RowConflictError (ErrConflict) naming the rows, commits nothing,
// and the changes stay staged (see Refresh, DiscardConflicts and Discard).
// Nothing is visible to readers until the commit's log entry is written,
// atomically.
func (d *Dataset) Commit(ctx context.Context, message string) (string, error) {
	return d.commit(ctx, message, false)
}

// CommitUnmoved is Commit without the rebase: when another writer
// committed to the branch since the staged changes' snapshot (the version
// the handle had when the first change was staged), it commits nothing,
// keeps the changes staged and fails with a *HeadMovedError
// (ErrConflict). A writer that checked the rows it read against that
// version (a SQL statement enforcing a table's keys, package sqlcat) uses
// it, so that its check still holds for the version it commits onto.
func (d *Dataset) CommitUnmoved(ctx context.Context, message string) (string, error) {
	return d.commit(ctx, message, true)
}

// commit is Commit; unmoved refuses to rebase (CommitUnmoved).
func (d *Dataset) commit(ctx context.Context, message string, unmoved bool) (string, error) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if d.ReadOnly() {
		return "", d.readOnlyErr("commit")
	}
	st := d.stage
	if st == nil || st.empty() {
		return d.Version(), nil
	}
	if err := st.finish(ctx); err != nil {
		return "", err
	}
	// A lease that stayed live kept every staged chunk from garbage
	// collection; one that may have lapsed, before the commit or during
	// its attempts, makes the commit check them (docs/format.md §5.1).
	// Chunks that are gone cannot be put again (the handle no longer holds
	// their bytes): the stage is discarded.
	checked, gone := false, false
	check := func() error {
		if checked {
			return nil
		}
		checked = true
		var err error
		gone, err = st.checkChunks(ctx)
		return err
	}
	if !st.lease.held(ctx) {
		if err := check(); err != nil {
			return "", d.lostStage(st, gone, err)
		}
	}
	branch := d.Branch()
	var id string
	next, err := d.updateRoot(ctx, "commit "+branch, func(root, next *manifest.Root) error {
		if !st.lease.live() {
			if err := check(); err != nil {
				return err
			}
		}
		if head := root.Refs[headsPrefix+branch]; unmoved && head != st.base.commitID {
			return &HeadMovedError{URL: d.url, Branch: branch, Base: st.base.commitID, Head: head}
		}
		var err error
		id, err = d.commitOnto(ctx, st, branch, message, root, next)
		return err
	})
	if err != nil {
		return "", d.lostStage(st, gone, err)
	}
	if err := d.moveToCommit(ctx, id, next.Seq); err != nil {
		return "", err
	}
	st.cancel(nil)
	st.lease.end(false)
	d.stage = nil
	d.autoCompact(ctx)
	return id, nil
}

// lostStage discards the stage when its chunks are gone, and returns err.
func (d *Dataset) lostStage(st *staging, gone bool, err error) error {
	if gone {
		st.abort()
		d.stage = nil
	}
	return err
}

// moveToCommit points the handle at the commit id, written in root entry
// seq (after this handle committed it, or on a refresh).
func (d *Dataset) moveToCommit(ctx context.Context, id string, seq uint64) error {
	snap, err := d.loadSnapshot(ctx, id, seq)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.snap = snap
	d.mu.Unlock()
	return nil
}

// finish seals every fragment and waits for the uploads of their chunks.
func (st *staging) finish(ctx context.Context) error {
	if err := st.firstErr(); err != nil {
		return err
	}
	for _, fw := range st.writers() {
		st.seal(ctx, fw)
	}
	// Interrupting the wait (Ctrl-C) returns at once: the uploads go on in
	// the background, under the stage's own context, and the next commit
	// of these staged writes waits for them again.
	done := make(chan struct{})
	go func() {
		_ = st.uploads.Wait() // its error is firstErr's
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := st.firstErr(); err != nil {
		return err
	}
	return ctx.Err()
}

// commitOnto writes the staged changes as a commit on branch as root has it
// (rebasing them onto a head that moved since the stage's base, see
// rebase), points next's reference of the branch at it and returns its id.
// It runs once per attempt of updateRoot: what it writes before a lost race
// is content-addressed and written again, or left to gc.
func (d *Dataset) commitOnto(ctx context.Context, st *staging, branch, message string, root, next *manifest.Root) (string, error) {
	ref := headsPrefix + branch
	head, ok := root.Refs[ref]
	if !ok {
		return "", fmt.Errorf("commit %s: branch %q does not exist (branches: %v): %w", d.url, branch, refNames(root, headsPrefix), ErrNotFound)
	}
	if len(st.conflicts) > 0 {
		return "", &RowConflictError{URL: d.url, Branch: branch, Head: st.base.commitID, IDs: sortedIDs(st.conflicts)}
	}
	base, rows, err := d.rebase(ctx, st, branch, head, root.Seq)
	if err != nil {
		return "", err
	}
	// Added columns take their final uids from the dataset-wide counter
	// of this root entry, so that no other branch has them.
	uids := map[int]int{}
	nextUID := max(root.NextColumnUID, base.man.NextColumnUID)
	for _, c := range st.addedColumns() {
		uids[c.UID] = nextUID
		nextUID++
	}
	// The fragment objects, deletion vectors, extensions, the manifest and
	// the commit name one another by content hash, known before they are
	// stored: they are put at once, before the commit point.
	batch := &objectBatch{}
	frags, err := st.encodeFragments(uids, false, batch)
	if err != nil {
		return "", err
	}
	man, err := st.buildManifest(ctx, base, rows, uids, batch)
	if err != nil {
		return "", err
	}
	man.NextColumnUID = max(man.NextColumnUID, nextUID)
	if err := st.applyPatches(ctx, base, &man, uids, batch); err != nil {
		return "", err
	}
	var appended uint64
	for _, f := range frags {
		id := root.NextRowID + appended
		man.Fragments = append(man.Fragments, manifest.FragmentRef{Key: f.key, Rows: f.rows, IDStart: &id})
		appended += uint64(f.rows)
		man.Rows += f.rows
	}
	c := manifest.Commit{Parents: []string{head}, Message: message, Author: d.opts.author, Time: next.Time, Rows: man.Rows, Branch: branch}
	id, err := d.writeCommitWith(ctx, man, c, batch)
	if err != nil {
		return "", err
	}
	next.Refs[ref] = id
	next.NextRowID = root.NextRowID + appended
	next.NextColumnUID = max(root.NextColumnUID, man.NextColumnUID)
	return id, nil
}

// pendingFragment is a fragment object written by a commit.
type pendingFragment struct {
	key  string
	rows int64
}

// putFragmentsNonce writes the fragment objects of the staged rows:
// content-addressed, invisible until a manifest names them. With all,
// every fragment carries the stage's nonce, as staged writes' and
// compactions' do.
func (st *staging) putFragmentsNonce(ctx context.Context, uids map[int]int, all bool) ([]pendingFragment, error) {
	batch := &objectBatch{}
	frags, err := st.encodeFragments(uids, all, batch)
	if err != nil {
		return nil, err
	}
	return frags, batch.put(ctx, st.d)
}

// encodeFragments adds the fragment objects of the staged rows, with
// column uids renamed by uids, to batch (see putFragmentsNonce for all).
func (st *staging) encodeFragments(uids map[int]int, all bool, batch *objectBatch) ([]pendingFragment, error) {
	var frags []pendingFragment
	for _, fw := range st.writers() {
		if fw.rows == 0 {
			continue
		}
		fr := manifest.Fragment{Rows: fw.rows, IDs: fw.ids, Columns: map[string][]manifest.ChunkRef{}}
		if all {
			fr.Nonce = st.nonce
		}
		for uid, cw := range fw.cols {
			refs := make([]manifest.ChunkRef, len(cw.refs))
			for i, r := range cw.refs {
				refs[i] = *r
			}
			if u, ok := uids[uid]; ok {
				uid = u
			}
			fr.Columns[strconv.Itoa(uid)] = refs
		}
		key, err := batch.add(keys.Fragment, manifest.KindFragment, fr)
		if err != nil {
			return nil, err
		}
		frags = append(frags, pendingFragment{key: key, rows: fw.rows})
	}
	return frags, nil
}

// sameColumns reports whether two schemas define the same columns.
func sameColumns(a, b []schema.Column) bool {
	return slices.EqualFunc(a, b, schema.Column.Equal)
}

// buildManifest applies the staged schema changes, statistics and deletions
// to base's manifest, the deleted and updated rows being at rows in base;
// added columns take their uids from uids. Appended fragments are added by
// the caller; the deletion vectors go into batch, which the caller puts.
func (st *staging) buildManifest(ctx context.Context, base *snapshot, rows map[uint64]rowLoc, uids map[int]int, batch *objectBatch) (manifest.Manifest, error) {
	man := manifest.Manifest{Rows: base.man.Rows, NextColumnUID: max(base.man.NextColumnUID, st.nextUID)}
	man.Schema, man.Stats = base.man.Schema.Clone(), base.man.CloneStats()
	// The stage's statistics go to the columns it wrote: base's that it
	// knows (a head it was rebased onto may have more) and its own.
	added := st.addedColumns()
	for i := range man.Schema.Columns {
		c := &man.Schema.Columns[i]
		if _, ok := (&schema.Schema{Columns: st.cols[:len(st.cols)-len(added)]}).ByUID(c.UID); ok {
			st.mergeDelta(&man, c.UID, c.UID)
		}
	}
	for _, c := range added {
		uid := c.UID
		if u, ok := uids[uid]; ok {
			c.UID = u
		}
		man.Schema.Columns = append(man.Schema.Columns, c)
		st.mergeDelta(&man, c.UID, uid)
	}
	man.Fragments = append([]manifest.FragmentRef(nil), base.man.Fragments...)
	if len(rows) == 0 {
		return man, nil
	}
	byFrag := map[int][]int64{}
	for _, l := range rows {
		byFrag[l.frag] = append(byFrag[l.frag], l.off)
	}
	for k, offs := range byFrag {
		f := base.frags[k]
		if err := st.d.dropStats(ctx, f, offs, &man); err != nil {
			return manifest.Manifest{}, err
		}
		all := append(append([]int64(nil), f.deleted...), offs...)
		slices.Sort(all)
		key, err := batch.add(keys.Deletion, manifest.KindDeletion, manifest.Deletion{Offsets: all})
		if err != nil {
			return manifest.Manifest{}, err
		}
		ref := man.Fragments[k]
		ref.Deletions, ref.Deleted = key, int64(len(all))
		man.Fragments[k] = ref
		man.Rows -= int64(len(offs))
	}
	return man, nil
}

// mergeDelta merges the statistics the stage gathered for its column of
// uid into those of man's column of uid to (the stage's uid of an added
// column may be renamed).
func (st *staging) mergeDelta(man *manifest.Manifest, to, uid int) {
	dl := st.deltas[uid]
	if dl == nil {
		return
	}
	delta := dl.Stats
	delta.StoredBytes = dl.stored.Load()
	man.StatsOf(to).Merge(delta)
}

// addedColumns returns the columns the stage adds (a copy).
func (st *staging) addedColumns() []schema.Column {
	return slices.Clone(st.cols[len(st.cols)-st.added:])
}
