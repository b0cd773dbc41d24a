package loch

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/keys"
)

// TestSelections saves, lists, reads and deletes a selection, and refuses
// bad names, a duplicate name, an unknown version and a repeated row id.
func TestSelections(t *testing.T) {
	d, _ := mustCreate(t, gcSchema)
	m := &model{}
	v := gcAppend(t, d, m, gcRows(0, 10))
	seed := uint64(7)
	s := &Selection{Version: v, SQL: "SELECT v FROM ds ORDER BY random()", Seed: &seed, Columns: []string{"v"},
		RowIDs: []uint64{m.ids[9], m.ids[2], m.ids[5]}}
	require.NoError(t, d.SaveSelection(ctx, "pick", s))
	require.Equal(t, "pick", s.Name)

	got, err := d.Selection(ctx, "pick")
	require.NoError(t, err)
	require.Equal(t, s, got)

	list, err := d.Selections(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, SelectionInfo{Name: "pick", Key: list[0].Key, Version: v, SQL: s.SQL, Seed: &seed, Rows: 3}, list[0])
	require.Regexp(t, `^selections/[0-9a-f]{32}$`, list[0].Key)

	err = d.SaveSelection(ctx, "pick", s)
	require.ErrorIs(t, err, ErrExists)
	require.ErrorContains(t, err, `selection "pick"`)
	require.ErrorIs(t, d.SaveSelection(ctx, "bad name", s), ErrInvalidArgument)
	require.ErrorIs(t, d.SaveSelection(ctx, "twice", &Selection{Version: v, RowIDs: []uint64{1, 1}}), ErrInvalidArgument)
	err = d.SaveSelection(ctx, "gone", &Selection{Version: "0123456789abcdef0123456789abcdef"})
	require.ErrorIs(t, err, ErrNotFound)

	_, err = d.Selection(ctx, "nope")
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorContains(t, err, `no saved selection "nope" (have [pick])`)

	// Branches and tags do not see selections, nor selections them.
	refs, err := d.Refs(ctx)
	require.NoError(t, err)
	require.Len(t, refs, 1)

	require.NoError(t, d.DeleteSelection(ctx, "pick"))
	_, err = d.Selection(ctx, "pick")
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, d.DeleteSelection(ctx, "pick"), ErrNotFound)
	requireVerified(t, d)
}

// TestGCSelectionKeepsVersion: a saved selection keeps the version it ran
// on after the branch that made it is deleted, like a tag; deleting the
// selection frees the version and the selection object.
func TestGCSelectionKeepsVersion(t *testing.T) {
	d, url := mustCreate(t, gcSchema)
	gcAppend(t, d, nil, gcRows(0, 10))
	dev := openNewBranch(t, d, url, "dev")
	m := &model{}
	devID := gcAppend(t, dev, m, gcRows(100, 10))
	require.NoError(t, d.SaveSelection(ctx, "dev-pick", &Selection{Version: devID, SQL: "SELECT *", RowIDs: m.ids[:4]}))
	require.NoError(t, d.DeleteBranch(ctx, "dev"))

	r := runGC(t, d, GCOptions{})
	require.Equal(t, GCKind{}, r.Deleted, "the selection keeps dev's version")
	sel, err := d.Selection(ctx, "dev-pick")
	require.NoError(t, err)
	at := mustOpen(t, url, WithVersion(sel.Version))
	sc := loadedScan(t, at, 4)
	_, err = sc.Positions(sel.RowIDs)
	require.NoError(t, err)
	requireVerified(t, d)

	require.NoError(t, d.DeleteSelection(ctx, "dev-pick"))
	r = runGC(t, d, GCOptions{})
	require.Equal(t, int64(1), r.ByKind["selections"].Objects)
	require.Greater(t, r.ByKind["commits"].Objects, int64(0))
	_, err = Open(ctx, url, WithVersion(devID))
	require.ErrorIs(t, err, ErrNotFound)
	requireVerified(t, d)
}

// TestSelectionOfCollectedVersion: a saved selection whose version is
// gone (its commit deleted behind loch's back: gc never does it) is a
// clear ErrNotFound naming the selection and the version.
func TestSelectionOfCollectedVersion(t *testing.T) {
	d, _ := mustCreate(t, gcSchema)
	m := &model{}
	v := gcAppend(t, d, m, gcRows(0, 4))
	require.NoError(t, d.SaveSelection(ctx, "s", &Selection{Version: v, SQL: "SELECT *", RowIDs: m.ids}))
	require.NoError(t, d.store.Delete(ctx, keys.Make(keys.Commit, v)))
	_, err := d.Selection(ctx, "s")
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorContains(t, err, `selection "s" ran on version `+v+`, which is gone`)
}
