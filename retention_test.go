package loch

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/keys"
)

// snapshotModel copies a model, as the rows of one version.
func snapshotModel(m *model) *model {
	return &model{ids: slices.Clone(m.ids), rows: slices.Clone(m.rows)}
}

// gcUpdate updates the value of the row at position pos to v and commits.
func gcUpdate(t *testing.T, d *Dataset, m *model, pos, v int) string {
	t.Helper()
	row := gcRows(v, 1)[0]
	require.NoError(t, d.Update(ctx, m.ids[pos], row))
	id, err := d.Commit(ctx, fmt.Sprintf("update %d", pos))
	require.NoError(t, err)
	// An updated row keeps its place (docs/format.md §2.5).
	m.rows[pos] = row
	return id
}

// TestGCRetention: keep-last with branches, a tag, a saved selection and a
// merge. What is kept reads whole, row for row, and verifies; the expired
// versions and the objects only they used are gone, with expiry markers
// that log, resolve, verify and a second gc understand.
func TestGCRetention(t *testing.T) {
	onLeaseBackends(t, func(t *testing.T, d *Dataset, url string) {
		c0 := d.Version()
		m := &model{}
		kept := map[string]*model{}
		c1 := gcAppend(t, d, m, gcRows(0, 8))
		kept[c1] = snapshotModel(m) // by the selection
		require.NoError(t, d.SaveSelection(ctx, "sel", &Selection{Version: c1, SQL: "SELECT * FROM ds LIMIT 2", RowIDs: []uint64{0, 1}}))
		c2 := gcAppend(t, d, m, gcRows(8, 8))
		_, err := d.CreateTag(ctx, "v1", "")
		require.NoError(t, err)
		kept[c2] = snapshotModel(m)
		c3 := gcAppend(t, d, m, gcRows(16, 8))
		_, err = d.CreateBranch(ctx, "dev", "")
		require.NoError(t, err)
		devModel := snapshotModel(m)
		c4 := gcUpdate(t, d, m, 0, 1000)
		c5 := gcUpdate(t, d, m, 0, 2000)

		dev := mustOpen(t, url, WithRef("dev"))
		d1 := gcAppend(t, dev, devModel, gcRows(500, 8))
		kept[d1] = snapshotModel(devModel)
		d2 := gcAppend(t, dev, devModel, gcRows(600, 8))
		kept[d2] = snapshotModel(devModel)

		res, err := d.Merge(ctx, "dev", MergeOptions{})
		require.NoError(t, err)
		mg := res.Commit
		// The merge appends dev's new rows after main's.
		m.ids = append(m.ids, devModel.ids[24:]...)
		m.rows = append(m.rows, devModel.rows[24:]...)
		checkModel(t, d, m)
		kept[mg] = snapshotModel(m)
		c7 := gcAppend(t, d, m, gcRows(700, 8))
		kept[c7] = snapshotModel(m)

		// What each expired version used that no kept version uses.
		// c0, c3 and c5 end kept history (a kept commit names them);
		// c4 lies behind c5.
		expired := []string{c0, c3, c5, c4}
		keptObjs := map[string]bool{}
		for id := range kept {
			for k := range objectsOf(t, d, id) {
				keptObjs[k] = true
			}
		}
		var gone []string
		for _, id := range expired[1:] {
			for k := range objectsOf(t, d, id) {
				if !keptObjs[k] {
					gone = append(gone, k)
				}
			}
		}
		require.NotEmpty(t, gone)

		dry := runGC(t, d, GCOptions{KeepLast: 2, DryRun: true})
		require.EqualValues(t, 3, dry.Expired)
		r := runGC(t, d, GCOptions{KeepLast: 2})
		require.Equal(t, dry.Deleted, r.Deleted)
		require.EqualValues(t, 3, r.Expired)
		require.EqualValues(t, 4, r.ByKind["commits"].Objects)
		for _, k := range gone {
			_, err := d.store.Stat(ctx, k)
			require.ErrorIs(t, err, ErrNotFound, "%s, used only by expired versions, survived", k)
		}
		for k := range keptObjs {
			_, err := d.store.Stat(ctx, k)
			require.NoError(t, err, "%s, used by a kept version, was deleted", k)
		}
		_, err = d.store.Stat(ctx, keys.MakeExpired(c4))
		require.ErrorIs(t, err, ErrNotFound, "c4 ends no kept history: no marker")
		_, err = Open(ctx, url, WithVersion(c4))
		require.ErrorIs(t, err, ErrNotFound)
		for _, id := range expired[:3] {
			obj, err := d.store.Get(ctx, keys.MakeExpired(id))
			require.NoError(t, err, "expiry marker of %s", id)
			var mk expiryMarker
			require.NoError(t, json.Unmarshal(obj, &mk))
			require.Equal(t, 2, mk.KeepLast)
			_, err = Open(ctx, url, WithVersion(id))
			require.ErrorIs(t, err, ErrNotFound)
			require.Contains(t, err.Error(), "collected by gc's version retention")
		}
		for id, km := range kept {
			v, err := Open(ctx, url, WithVersion(id))
			require.NoError(t, err)
			checkModel(t, v, km)
			require.NoError(t, v.Close())
		}
		checkModel(t, d, m)
		requireVerified(t, d)

		// The log ends where history was collected, and says so.
		log, err := d.Log(ctx)
		require.NoError(t, err)
		var ids, exp []string
		for _, c := range log {
			ids = append(ids, c.ID)
			exp = append(exp, c.Expired...)
		}
		require.ElementsMatch(t, []string{c7, mg, d2, d1}, ids)
		require.ElementsMatch(t, []string{c5, c3}, exp)

		// A second collection walks past the collected parents and
		// finds nothing more to delete.
		again := runGC(t, d, GCOptions{KeepLast: 2})
		require.Zero(t, again.Deleted.Objects)
		require.Zero(t, again.Expired)
		requireVerified(t, d)

		// Without retention, gc keeps what is left.
		plain := runGC(t, d, GCOptions{})
		require.Zero(t, plain.Deleted.Objects)
	})
}

// TestGCRetentionOlderThan: only versions older than --older-than expire;
// keep-last alone (any age) and older-than alone (the head) both apply.
func TestGCRetentionOlderThan(t *testing.T) {
	d, url := mustCreate(t, gcSchema)
	m := &model{}
	c1 := gcAppend(t, d, m, gcRows(0, 4))
	c2 := gcAppend(t, d, m, gcRows(4, 4))
	time.Sleep(1200 * time.Millisecond)
	c3 := gcAppend(t, d, m, gcRows(8, 4))
	old := snapshotModel(m)
	c4 := gcAppend(t, d, m, gcRows(12, 4))

	r := runGC(t, d, GCOptions{OlderThan: time.Second})
	require.EqualValues(t, 1, r.Expired)                   // c2, c3's parent; c1 and create lie behind it
	require.EqualValues(t, 3, r.ByKind["commits"].Objects) // create, c1, c2
	for _, id := range []string{c1, c2} {
		_, err := d.store.Stat(ctx, keys.Make(keys.Commit, id))
		require.ErrorIs(t, err, ErrNotFound)
	}
	v, err := Open(ctx, url, WithVersion(c3))
	require.NoError(t, err)
	checkModel(t, v, old)
	require.NoError(t, v.Close())

	r = runGC(t, d, GCOptions{KeepLast: 1})
	require.EqualValues(t, 1, r.Expired) // c3: any age
	_, err = Open(ctx, url, WithVersion(c3))
	require.ErrorIs(t, err, ErrNotFound)
	require.Equal(t, c4, d.Version())
	checkModel(t, d, m)
	requireVerified(t, d)
	log, err := d.Log(ctx)
	require.NoError(t, err)
	require.Len(t, log, 1)
	require.Equal(t, []string{c3}, log[0].Expired)

	_, err = d.GC(ctx, GCOptions{KeepLast: -1})
	require.ErrorIs(t, err, ErrInvalidArgument)
}

// TestGCRetentionMergeBase: two branches whose only common ancestors were
// collected cannot be merged; the error says why.
func TestGCRetentionMergeBase(t *testing.T) {
	d, url := mustCreate(t, gcSchema)
	gcAppend(t, d, nil, gcRows(0, 4))
	x := openNewBranch(t, d, url, "x")
	gcAppend(t, x, nil, gcRows(100, 4))
	gcAppend(t, d, nil, gcRows(4, 4))
	gcAppend(t, d, nil, gcRows(8, 4))

	runGC(t, d, GCOptions{KeepLast: 1})
	_, err := d.Merge(ctx, "x", MergeOptions{})
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.Contains(t, err.Error(), "no common ancestor left")
	require.Contains(t, err.Error(), "version retention collected")
	requireVerified(t, d)
}

// TestGCMissingParentWithoutMarker: a parent commit that is missing
// without an expiry marker is damage still, with retention on too.
func TestGCMissingParentWithoutMarker(t *testing.T) {
	d, _ := mustCreate(t, gcSchema)
	c1 := gcAppend(t, d, nil, gcRows(0, 4))
	gcAppend(t, d, nil, gcRows(4, 4))
	require.NoError(t, d.store.Delete(ctx, keys.Make(keys.Commit, c1)))
	_, err := d.GC(ctx, GCOptions{})
	require.ErrorIs(t, err, ErrNotFound)
	require.Contains(t, err.Error(), "nothing was deleted")
	_, problems, err := d.Verify(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, problems)
	_, err = d.Log(ctx)
	require.ErrorIs(t, err, ErrNotFound)
}
