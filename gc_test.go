package loch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// gcSchema has small chunks (4 rows each), so that a few rows make several
// chunks and staged rows are uploaded before Commit.
var gcSchema = schema.Schema{Columns: []schema.Column{
	{Name: "v", DType: schema.Float32, Shape: schema.Shape{64}, ChunkBytes: 1024},
}}

// gcRows returns n rows whose values start at base.
func gcRows(base, n int) []Row {
	rows := make([]Row, n)
	for i := range rows {
		v := make([]float32, 64)
		for k := range v {
			v[k] = float32(base + i)
		}
		rows[i] = Row{"v": Tensor([]int{64}, v)}
	}
	return rows
}

// gcAppend commits rows to the handle's branch and adds them to m.
func gcAppend(t *testing.T, d *Dataset, m *model, rows []Row) string {
	t.Helper()
	next := d.nextRowID(t)
	require.NoError(t, d.Extend(ctx, rows))
	id, err := d.Commit(ctx, fmt.Sprintf("append %d", len(rows)))
	require.NoError(t, err)
	if m != nil {
		m.add(next, rows)
	}
	return id
}

// listAll returns every key of the store with its size.
func listAll(t *testing.T, s storage.Store) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	require.NoError(t, s.List(ctx, "", func(a storage.Attrs) error {
		out[a.Key] = a.Size
		return nil
	}))
	return out
}

// minus returns the keys of a that b lacks.
func minus(a, b map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range a {
		if _, ok := b[k]; !ok {
			out[k] = v
		}
	}
	return out
}

// kindCounts counts keys by their first segment, as GCReport.ByKind does.
func kindCounts(keys map[string]int64) map[string]GCKind {
	out := map[string]GCKind{}
	for _, k := range gcKinds {
		out[k.Dir()] = GCKind{}
	}
	for key, size := range keys {
		kind, _, _ := strings.Cut(key, "/")
		k := out[kind]
		k.add(size)
		out[kind] = k
	}
	return out
}

func total(keys map[string]int64) GCKind {
	var k GCKind
	for _, size := range keys {
		k.add(size)
	}
	return k
}

// objectsOf returns the keys of a commit and of the manifest, fragments and
// chunks it names (not its parents).
func objectsOf(t *testing.T, d *Dataset, id string) map[string]bool {
	t.Helper()
	out := map[string]bool{keys.Make(keys.Commit, id): true}
	var c manifest.Commit
	require.NoError(t, d.getObject(ctx, keys.Make(keys.Commit, id), manifest.KindCommit, &c))
	out[c.Manifest] = true
	var m manifest.Manifest
	require.NoError(t, d.getObject(ctx, c.Manifest, manifest.KindManifest, &m))
	for _, f := range m.Fragments {
		out[f.Key] = true
		if f.Deletions != "" {
			out[f.Deletions] = true
		}
		var fr manifest.Fragment
		require.NoError(t, d.getObject(ctx, f.Key, manifest.KindFragment, &fr))
		for _, refs := range fr.Columns {
			for _, r := range refs {
				out[r.Key] = true
			}
		}
	}
	return out
}

func requireVerified(t *testing.T, d *Dataset) {
	t.Helper()
	_, problems, err := d.Verify(ctx)
	require.NoError(t, err)
	require.Empty(t, problems)
}

func runGC(t *testing.T, d *Dataset, opts GCOptions) *GCReport {
	t.Helper()
	r, err := d.GC(ctx, opts)
	require.NoError(t, err)
	require.Equal(t, opts.DryRun, r.DryRun)
	return r
}

// waitForChunks waits until the store holds more than n chunks (staged rows
// are uploaded in the background) and returns how many it holds.
func waitForChunks(t *testing.T, s storage.Store, n int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := 0
		require.NoError(t, s.List(ctx, "chunks/", func(storage.Attrs) error { got++; return nil }))
		if got > n {
			return got
		}
		require.True(t, time.Now().Before(deadline), "staged chunks not uploaded within 10s")
		time.Sleep(5 * time.Millisecond)
	}
}

func countKeys(keys map[string]int64, prefix string) int {
	n := 0
	for k := range keys {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}

// TestGCDeletedBranch: the objects only a deleted branch reached are
// deleted, exactly those; main reads as before and verifies; the branch's
// version is gone.
func TestGCDeletedBranch(t *testing.T) {
	d, url := mustCreate(t, gcSchema)
	m := &model{}
	gcAppend(t, d, m, gcRows(0, 10))
	require.NoError(t, d.Delete(ctx, m.ids[3])) // a deletion vector both branches hold
	_, err := d.Commit(ctx, "delete one")
	require.NoError(t, err)
	m.ids, m.rows = slices.Delete(m.ids, 3, 4), slices.Delete(m.rows, 3, 4)
	dev := openNewBranch(t, d, url, "dev")
	require.NoError(t, dev.Delete(ctx, m.ids[0])) // and one only dev holds
	devID := gcAppend(t, dev, nil, gcRows(100, 10))
	devOnly := objectsOf(t, d, devID)
	for k := range objectsOf(t, d, d.Version()) {
		delete(devOnly, k)
	}
	require.Greater(t, len(devOnly), 5, "commit, manifest, fragment, deletion vector and chunks")
	require.NoError(t, d.DeleteBranch(ctx, "dev"))

	before := listAll(t, d.store)
	r := runGC(t, d, GCOptions{})
	gone := minus(before, listAll(t, d.store))
	require.ElementsMatch(t, sortedKeys(devOnly), sortedKeys(gone))
	require.Equal(t, total(gone), r.Deleted)
	require.Equal(t, kindCounts(gone), r.ByKind)
	require.Equal(t, GCKind{}, r.Young)
	require.Empty(t, r.Missing)
	kept := listAll(t, d.store)
	require.EqualValues(t, len(kept)-countKeys(kept, "log/")-countKeys(kept, "_loch/"), r.Reachable.Objects)

	checkModel(t, d, m)
	requireVerified(t, d)
	_, err = Open(ctx, url, WithVersion(devID))
	require.ErrorIs(t, err, ErrNotFound)
	_, err = d.Resolve(ctx, devID)
	require.ErrorIs(t, err, ErrNotFound)

	again := runGC(t, d, GCOptions{})
	require.Equal(t, GCKind{}, again.Deleted, "a second collection finds nothing")
	require.Equal(t, r.Reachable, again.Reachable)
}

// TestGCTagKeepsData: a tag keeps what it names after its branch is gone
// and after main is reverted past it; deleting the tag frees it. A
// read-only handle may collect and stays where it is.
func TestGCTagKeepsData(t *testing.T) {
	d, url := mustCreate(t, gcSchema)
	m := &model{}
	first := gcAppend(t, d, m, gcRows(0, 6))
	v2 := gcAppend(t, d, nil, gcRows(6, 6))
	_, err := d.CreateTag(ctx, "v2", "")
	require.NoError(t, err)
	_, err = d.Revert(ctx, first, "")
	require.NoError(t, err)

	_, err = d.CreateBranch(ctx, "dev", "")
	require.NoError(t, err)
	require.NoError(t, d.Checkout(ctx, "dev"))
	devID := gcAppend(t, d, nil, gcRows(50, 6))
	_, err = d.CreateTag(ctx, "exp", "")
	require.NoError(t, err)
	require.NoError(t, d.Checkout(ctx, "main"))
	require.NoError(t, d.DeleteBranch(ctx, "dev"))

	tagged := mustOpen(t, url, WithRef("exp"))
	require.True(t, tagged.ReadOnly())
	r := runGC(t, tagged, GCOptions{})
	require.Equal(t, GCKind{}, r.Deleted)
	require.Equal(t, devID, tagged.Version())
	requireVerified(t, tagged)
	require.EqualValues(t, 12, tagged.Len())

	old := mustOpen(t, url, WithRef("v2"))
	require.Equal(t, v2, old.Version())
	requireVerified(t, old)
	checkModel(t, d, m)
	requireVerified(t, d)

	require.NoError(t, d.DeleteTag(ctx, "exp"))
	r = runGC(t, d, GCOptions{})
	require.EqualValues(t, 1, r.ByKind["commits"].Objects, "the tagged commit")
	_, err = d.Resolve(ctx, devID)
	require.ErrorIs(t, err, ErrNotFound)
	checkModel(t, d, m)
	requireVerified(t, d)
}

// TestGCFollowsAllParents: a merge commit keeps both sides.
func TestGCFollowsAllParents(t *testing.T) {
	d, url := mustCreate(t, gcSchema)
	gcAppend(t, d, nil, gcRows(0, 5))
	dev := openNewBranch(t, d, url, "dev")
	devID := gcAppend(t, dev, nil, gcRows(100, 5))
	// A merge of dev into main that keeps main's contents, written by hand
	// so that this test does not depend on merge.go.
	head := d.current()
	merge, err := d.putObject(ctx, keys.Commit, manifest.KindCommit, manifest.Commit{
		Parents: []string{head.commitID, devID}, Manifest: head.commit.Manifest,
		Message: "merge dev", Time: time.Now().UTC(), Rows: head.man.Rows, Branch: "main"})
	require.NoError(t, err)
	_, err = d.updateRoot(ctx, "merge", func(_, next *manifest.Root) error {
		next.Refs["heads/main"] = strings.TrimPrefix(merge, keys.Commit.Prefix())
		delete(next.Refs, "heads/dev")
		return nil
	})
	require.NoError(t, err)

	r := runGC(t, d, GCOptions{})
	require.Equal(t, GCKind{}, r.Deleted)
	old := mustOpen(t, url, WithVersion(devID))
	require.EqualValues(t, 10, old.Len())
	requireVerified(t, old)
}

// TestGCFollowsExtensions: the extensions a manifest names, and their
// chunks, are reachable. No writer makes extensions yet, so the commit is
// written by hand.
func TestGCFollowsExtensions(t *testing.T) {
	d, _ := mustCreate(t, gcSchema)
	gcAppend(t, d, nil, gcRows(0, 5))
	head := d.current()
	chunkKey := "chunks/ef/ef" + strings.Repeat("2", 30)
	require.NoError(t, d.store.Put(ctx, chunkKey, []byte("a chunk only the extension names")))
	ext, err := d.putObject(ctx, keys.Extension, manifest.KindExtension, manifest.Fragment{
		Columns: map[string][]manifest.ChunkRef{"2": {{Key: chunkKey, Rows: 5, Header: 40, Size: 100}}}})
	require.NoError(t, err)
	man := head.man
	man.Fragments = slices.Clone(man.Fragments)
	man.Fragments[0].Extensions = []string{ext}
	manKey, err := d.putObject(ctx, keys.Manifest, manifest.KindManifest, man)
	require.NoError(t, err)
	c, err := d.putObject(ctx, keys.Commit, manifest.KindCommit, manifest.Commit{
		Parents: []string{head.commitID}, Manifest: manKey, Message: "extend", Time: time.Now().UTC(), Rows: man.Rows, Branch: "main"})
	require.NoError(t, err)
	setMain := func(id string) {
		_, err := d.updateRoot(ctx, "set main", func(_, next *manifest.Root) error {
			next.Refs["heads/main"] = id
			return nil
		})
		require.NoError(t, err)
	}
	setMain(strings.TrimPrefix(c, keys.Commit.Prefix()))
	require.Equal(t, GCKind{}, runGC(t, d, GCOptions{}).Deleted)

	setMain(head.commitID)
	r := runGC(t, d, GCOptions{})
	require.EqualValues(t, 4, r.Deleted.Objects, "commit, manifest, extension, chunk")
	for _, k := range []string{"commits", "manifests", "extensions", "chunks"} {
		require.EqualValues(t, 1, r.ByKind[k].Objects, k)
	}
}

// TestGCGraceKeepsStagedWrites: the chunks a writer has uploaded but not
// committed survive a collection with a grace period, and its commit
// then reads back.
func TestGCGraceKeepsStagedWrites(t *testing.T) {
	d, url := mustCreate(t, gcSchema)
	m := &model{}
	gcAppend(t, d, m, gcRows(0, 8))
	w := mustOpen(t, url)
	next := w.nextRowID(t)
	rows := gcRows(1000, 40)
	chunks := countKeys(listAll(t, d.store), "chunks/")
	require.NoError(t, w.Extend(ctx, rows))
	waitForChunks(t, d.store, chunks)

	r := runGC(t, d, GCOptions{Grace: time.Hour})
	require.Equal(t, GCKind{}, r.Deleted)
	require.Positive(t, r.Young.Objects, "the staged chunks")

	_, err := w.Commit(ctx, "after gc")
	require.NoError(t, err)
	m.add(next, rows)
	require.NoError(t, d.Refresh(ctx))
	checkModel(t, d, m)
	requireVerified(t, d)
	require.Equal(t, GCKind{}, runGC(t, d, GCOptions{}).Deleted, "everything is reachable now")
}

// TestGCOrphans: what a writer that died before committing left (staged
// chunks, and a fragment, manifest, commit, extension and deletion vector
// nothing names) is deleted once older than the grace period; a dry run
// counts the same and deletes nothing; other keys are never touched.
func TestGCOrphans(t *testing.T) {
	d, dir := mustCreate(t, gcSchema)
	m := &model{}
	gcAppend(t, d, m, gcRows(0, 8))
	base := listAll(t, d.store)

	w, err := Open(ctx, dir)
	require.NoError(t, err)
	require.NoError(t, w.Extend(ctx, gcRows(500, 40)))
	waitForChunks(t, d.store, countKeys(base, "chunks/"))
	require.NoError(t, w.Close()) // the writer dies: staged writes are dropped

	orphanChunk := "chunks/ab/ab" + strings.Repeat("0", 30)
	require.NoError(t, d.store.Put(ctx, orphanChunk, []byte("not read by gc")))
	frag, err := d.putObject(ctx, keys.Fragment, manifest.KindFragment, manifest.Fragment{Rows: 1,
		Columns: map[string][]manifest.ChunkRef{"1": {{Key: orphanChunk, Rows: 1, Header: 40, Size: 100}}}})
	require.NoError(t, err)
	_, err = d.putObject(ctx, keys.Extension, manifest.KindExtension, manifest.Fragment{Columns: map[string][]manifest.ChunkRef{}})
	require.NoError(t, err)
	_, err = d.putObject(ctx, keys.Deletion, manifest.KindDeletion, manifest.Deletion{Offsets: []int64{0}})
	require.NoError(t, err)
	id := uint64(1 << 40)
	man, err := d.putObject(ctx, keys.Manifest, manifest.KindManifest, manifest.Manifest{Schema: d.Schema(), Rows: 1,
		Fragments: []manifest.FragmentRef{{Key: frag, Rows: 1, IDStart: &id}}})
	require.NoError(t, err)
	_, err = d.putObject(ctx, keys.Commit, manifest.KindCommit, manifest.Commit{Parents: []string{d.Version()}, Manifest: man, Message: "never committed"})
	require.NoError(t, err)
	// Keys of no loch form are not gc's to delete.
	for _, k := range []string{"chunks/README", "chunks/zz/not-a-chunk", "fragments/x", "other/thing"} {
		require.NoError(t, d.store.Put(ctx, k, []byte("foreign")))
	}
	foreign := 4

	all := listAll(t, d.store)
	orphans := minus(all, base)
	for _, k := range []string{"chunks/README", "chunks/zz/not-a-chunk", "fragments/x", "other/thing"} {
		delete(orphans, k)
	}
	require.Len(t, orphans, countKeys(orphans, "chunks/")+5, "chunks, fragment, extension, deletion, manifest, commit")
	require.Greater(t, countKeys(orphans, "chunks/"), 1, "staged chunks and the orphan one")

	dry := runGC(t, d, GCOptions{DryRun: true})
	require.Equal(t, total(orphans), dry.Deleted)
	require.Equal(t, kindCounts(orphans), dry.ByKind)
	require.Equal(t, all, listAll(t, d.store), "a dry run deletes nothing")

	dry = runGC(t, d, GCOptions{DryRun: true, Grace: time.Hour})
	require.Equal(t, GCKind{}, dry.Deleted)
	require.Equal(t, total(orphans), dry.Young)

	young := runGC(t, d, GCOptions{Grace: time.Hour})
	require.Equal(t, GCKind{}, young.Deleted)
	require.Equal(t, total(orphans), young.Young)
	require.Equal(t, dry.Reachable, young.Reachable)
	require.Equal(t, all, listAll(t, d.store))

	// One orphan from two hours ago is past the grace period.
	old := time.Now().Add(-2 * time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(dir, frag), old, old))
	r := runGC(t, d, GCOptions{Grace: time.Hour})
	require.Equal(t, GCKind{Objects: 1, Bytes: orphans[frag]}, r.Deleted)
	require.EqualValues(t, 1, r.ByKind["fragments"].Objects)
	require.Equal(t, len(orphans)-1, int(r.Young.Objects))
	delete(orphans, frag)

	r = runGC(t, d, GCOptions{})
	require.Equal(t, total(orphans), r.Deleted)
	require.Equal(t, GCKind{}, r.Young)
	after := listAll(t, d.store)
	require.Equal(t, len(base)+foreign, len(after))
	for k := range base {
		require.Contains(t, after, k)
	}
	checkModel(t, d, m)
	requireVerified(t, d)
}

// TestGCAbortsOnDamage: when a reachable object cannot be read, gc fails
// naming it and deletes nothing.
func TestGCAbortsOnDamage(t *testing.T) {
	type fixture struct {
		d       *Dataset
		commits []string // oldest first, on main
	}
	cases := []struct {
		name   string
		damage func(t *testing.T, f fixture) string // returns the damaged key
		want   error
	}{
		{"missing manifest", func(t *testing.T, f fixture) string {
			var c manifest.Commit
			require.NoError(t, f.d.getObject(ctx, keys.Make(keys.Commit, f.commits[1]), manifest.KindCommit, &c))
			require.NoError(t, f.d.store.Delete(ctx, c.Manifest))
			return c.Manifest
		}, ErrNotFound},
		{"missing fragment", func(t *testing.T, f fixture) string {
			key := f.d.current().man.Fragments[0].Key
			require.NoError(t, f.d.store.Delete(ctx, key))
			return key
		}, ErrNotFound},
		{"missing parent commit", func(t *testing.T, f fixture) string {
			key := keys.Make(keys.Commit, f.commits[0])
			require.NoError(t, f.d.store.Delete(ctx, key))
			return key
		}, ErrNotFound},
		{"corrupt manifest", func(t *testing.T, f fixture) string {
			key := f.d.current().commit.Manifest
			require.NoError(t, f.d.store.Put(ctx, key, []byte("LOCH garbage")))
			return key
		}, ErrCorrupt},
		{"fragment key names a commit", func(t *testing.T, f fixture) string {
			// The newest manifest names, as its fragment, an object of
			// another kind.
			man := f.d.current().man
			key := man.Fragments[0].Key
			obj, err := f.d.store.Get(ctx, keys.Make(keys.Commit, f.commits[0]))
			require.NoError(t, err)
			require.NoError(t, f.d.store.Put(ctx, key, obj))
			return key
		}, ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := mustCreate(t, gcSchema)
			f := fixture{d: d}
			f.commits = append(f.commits, gcAppend(t, d, nil, gcRows(0, 6)))
			f.commits = append(f.commits, gcAppend(t, d, nil, gcRows(6, 6)))
			orphan := "chunks/cd/cd" + strings.Repeat("1", 30)
			require.NoError(t, d.store.Put(ctx, orphan, []byte("orphan")))
			key := tc.damage(t, f)
			before := listAll(t, d.store)
			for _, opts := range []GCOptions{{}, {DryRun: true}} {
				r, err := d.GC(ctx, opts)
				require.ErrorIs(t, err, tc.want)
				require.Nil(t, r)
				require.Contains(t, err.Error(), key)
				require.Contains(t, err.Error(), "nothing was deleted")
				if tc.want == ErrNotFound {
					require.Contains(t, err.Error(), "loch verify")
				}
				require.Equal(t, before, listAll(t, d.store))
			}
		})
	}
}

// TestGCReportsMissingChunks: gc does not read chunks; a reachable chunk
// that is gone is reported, and the collection goes on.
func TestGCReportsMissingChunks(t *testing.T) {
	d, _ := mustCreate(t, gcSchema)
	gcAppend(t, d, nil, gcRows(0, 6))
	var lost string
	for k := range objectsOf(t, d, d.Version()) {
		if strings.HasPrefix(k, "chunks/") {
			lost = k
			break
		}
	}
	require.NoError(t, d.store.Delete(ctx, lost))
	orphan := "chunks/cd/cd" + strings.Repeat("1", 30)
	require.NoError(t, d.store.Put(ctx, orphan, []byte("orphan")))
	r := runGC(t, d, GCOptions{})
	require.Equal(t, []string{lost}, r.Missing)
	require.EqualValues(t, 1, r.Deleted.Objects)
	_, err := d.store.Stat(ctx, orphan)
	require.ErrorIs(t, err, storage.ErrNotFound)
}

// TestGCTransientFaults: with a store that fails reads at random, gc either
// completes or fails having deleted nothing; it never deletes a reachable
// object.
func TestGCTransientFaults(t *testing.T) {
	d, url := mustCreate(t, gcSchema)
	m := &model{}
	gcAppend(t, d, m, gcRows(0, 20))
	gcAppend(t, d, m, gcRows(20, 20))
	_, err := d.CreateBranch(ctx, "dev", "")
	require.NoError(t, err)
	dev, err := Open(ctx, url, WithRef("dev"))
	require.NoError(t, err)
	gcAppend(t, dev, nil, gcRows(100, 20))
	require.NoError(t, dev.Close())
	require.NoError(t, d.DeleteBranch(ctx, "dev"))

	failures, partial := 0, 0
	for seed := int64(1); seed <= 20; seed++ {
		for i := 0; i < 40; i++ { // something to delete in every round
			h := fmt.Sprintf("%02x%030d", i, seed)
			require.NoError(t, d.store.Put(ctx, "chunks/"+h[:2]+"/"+h, []byte("orphan")))
		}
		before := listAll(t, d.store)
		f := storage.NewFaulty(d.store, storage.FaultConfig{ReadErrorRate: 0.005, Seed: seed})
		h, err := Open(ctx, url, WithStore(f))
		if err != nil {
			require.ErrorIs(t, err, storage.ErrTransient)
			continue
		}
		r, err := h.GC(ctx, GCOptions{})
		require.NoError(t, h.Close())
		after := listAll(t, d.store)
		switch {
		case err == nil:
			require.Equal(t, total(minus(before, after)), r.Deleted)
		case r == nil: // failed before deleting
			failures++
			require.ErrorIs(t, err, storage.ErrTransient)
			require.Contains(t, err.Error(), "nothing was deleted")
			require.Equal(t, before, after)
		default: // failed while deleting: the report counts what went
			failures++
			partial++
			require.ErrorIs(t, err, storage.ErrTransient)
			require.Equal(t, total(minus(before, after)), r.Deleted)
		}
		checkModel(t, d, m)
		requireVerified(t, d)
	}
	t.Logf("%d of 20 collections failed on an injected fault, %d of them while deleting", failures, partial)
	require.Positive(t, failures)
	runGC(t, d, GCOptions{})
	require.Equal(t, GCKind{}, runGC(t, d, GCOptions{}).Deleted, "a collection finishes the job")
	checkModel(t, d, m)
	requireVerified(t, d)
}

// TestGCGraceKeepsRecentRefs: references named by log entries within the
// grace period, and by the entry current when it began, are roots. Log
// entry times are rewritten by hand to place them in the past.
func TestGCGraceKeepsRecentRefs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		deletedAt time.Duration // before now
		reachable bool
	}{
		{"deleted within the grace period", 30 * time.Minute, true},
		{"deleted before the grace period", 2 * time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, url := mustCreate(t, gcSchema)
			_, err := d.CreateBranch(ctx, "dev", "") // log/2
			require.NoError(t, err)
			dev := mustOpen(t, url, WithRef("dev"))
			devID := gcAppend(t, dev, nil, gcRows(0, 8))   // log/3
			require.NoError(t, d.DeleteBranch(ctx, "dev")) // log/4
			now := time.Now().UTC()
			times := []time.Time{now.Add(-4 * time.Hour), now.Add(-3 * time.Hour), now.Add(-3 * time.Hour), now.Add(-tc.deletedAt)}
			for i, at := range times {
				r, err := d.readRoot(ctx, uint64(i+1))
				require.NoError(t, err)
				r.Time = at
				obj, err := manifest.Encode(manifest.KindRoot, r)
				require.NoError(t, err)
				require.NoError(t, d.store.Put(ctx, keys.MakeLog(r.Seq), obj))
			}
			devObjects := objectsOf(t, d, devID)
			for k := range objectsOf(t, d, d.Version()) {
				delete(devObjects, k)
			}

			r := runGC(t, d, GCOptions{Grace: time.Hour})
			require.Equal(t, GCKind{}, r.Deleted, "dev's objects are young anyway")
			if tc.reachable {
				require.Equal(t, GCKind{}, r.Young)
				_, err := d.CreateBranch(ctx, "dev", devID)
				require.NoError(t, err, "the deleted branch can be recreated")
				require.NoError(t, d.DeleteBranch(ctx, "dev"))
			} else {
				require.EqualValues(t, len(devObjects), r.Young.Objects)
			}
		})
	}
}

// hookStore runs hook once, on the first List of prefix or, with prefix
// "", on the first Stat; concurrent callers wait for it.
type hookStore struct {
	storage.Store
	prefix string
	once   sync.Once
	hook   func()
}

func (h *hookStore) List(c context.Context, prefix string, fn func(storage.Attrs) error) error {
	if h.prefix != "" && prefix == h.prefix {
		h.once.Do(h.hook)
	}
	return h.Store.List(c, prefix, fn)
}

func (h *hookStore) Stat(c context.Context, key string) (storage.Attrs, error) {
	if h.prefix == "" {
		h.once.Do(h.hook)
	}
	return h.Store.Stat(c, key)
}

// TestGCMarksRefsWrittenDuringGC: a branch created, while gc lists, at a
// version nothing else reaches keeps that version.
func TestGCMarksRefsWrittenDuringGC(t *testing.T) {
	d, url := mustCreate(t, gcSchema)
	dev := openNewBranch(t, d, url, "dev")
	devID := gcAppend(t, dev, nil, gcRows(0, 8))
	require.NoError(t, d.DeleteBranch(ctx, "dev"))

	hooked, hookErr := false, error(nil)
	hs := &hookStore{Store: d.store, prefix: "manifests/", hook: func() {
		_, hookErr = d.CreateBranch(ctx, "late", devID)
		hooked = true
	}}
	h := mustOpen(t, url, WithStore(hs))
	r := runGC(t, h, GCOptions{})
	require.True(t, hooked)
	require.NoError(t, hookErr)
	require.Equal(t, GCKind{}, r.Deleted)
	late := mustOpen(t, url, WithRef("late"))
	require.EqualValues(t, 8, late.Len())
	requireVerified(t, late)
}

// TestGCKeepsObjectsRewrittenDuringGC: an unreachable object that a writer
// puts again after the listing (a new snapshot holds the same content) is
// kept, even with no grace period.
func TestGCKeepsObjectsRewrittenDuringGC(t *testing.T) {
	url := "mem://gc-rewrite-" + randomID() // memory objects have fine-grained times
	d, err := Create(ctx, url, gcSchema)
	require.NoError(t, err)
	defer d.Close()
	frag := manifest.Fragment{Rows: 0, Columns: map[string][]manifest.ChunkRef{}}
	fragKey, err := d.putObject(ctx, keys.Fragment, manifest.KindFragment, frag)
	require.NoError(t, err)
	commitKey, err := d.putObject(ctx, keys.Commit, manifest.KindCommit, manifest.Commit{Parents: []string{d.Version()}, Message: "orphan"})
	require.NoError(t, err)

	var hookErr error
	hs := &hookStore{Store: d.store, hook: func() { // on the first Stat, before any deletion
		_, hookErr = d.putObject(ctx, keys.Fragment, manifest.KindFragment, frag)
	}}
	h := mustOpen(t, url, WithStore(hs))
	r := runGC(t, h, GCOptions{})
	require.NoError(t, hookErr)
	require.EqualValues(t, 1, r.Deleted.Objects)
	require.EqualValues(t, 1, r.ByKind["commits"].Objects)
	require.EqualValues(t, 1, r.Young.Objects)
	_, err = d.store.Stat(ctx, fragKey)
	require.NoError(t, err)
	_, err = d.store.Stat(ctx, commitKey)
	require.ErrorIs(t, err, storage.ErrNotFound)
}

func TestGCNegativeGrace(t *testing.T) {
	d, _ := mustCreate(t, gcSchema)
	_, err := d.GC(ctx, GCOptions{Grace: -time.Second})
	require.ErrorIs(t, err, ErrInvalidArgument)
}

// TestGCOnS3 collects a deleted branch on a real S3 server (MinIO).
func TestGCOnS3(t *testing.T) {
	url := testserver.MinIO(t).URL
	d, err := Create(ctx, url, gcSchema)
	require.NoError(t, err)
	defer d.Close()
	m := &model{}
	gcAppend(t, d, m, gcRows(0, 12))
	_, err = d.CreateBranch(ctx, "dev", "")
	require.NoError(t, err)
	require.NoError(t, d.Checkout(ctx, "dev"))
	devID := gcAppend(t, d, nil, gcRows(100, 12))
	require.NoError(t, d.Checkout(ctx, "main"))
	require.NoError(t, d.DeleteBranch(ctx, "dev"))

	dry := runGC(t, d, GCOptions{DryRun: true})
	require.Positive(t, dry.Deleted.Objects)
	before := listAll(t, d.store)
	r := runGC(t, d, GCOptions{})
	require.Equal(t, dry.Deleted, r.Deleted)
	require.Equal(t, total(minus(before, listAll(t, d.store))), r.Deleted)
	require.EqualValues(t, 1, r.ByKind["commits"].Objects)
	checkModel(t, d, m)
	requireVerified(t, d)
	_, err = Open(ctx, url, WithVersion(devID))
	require.ErrorIs(t, err, ErrNotFound)
}

// TestRefAtCollectedVersion: a handle whose version gc removed cannot name
// it in a new tag or branch.
func TestRefAtCollectedVersion(t *testing.T) {
	d, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "n", DType: schema.Int64}}})
	dev := openNewBranch(t, d, dir, "dev")
	require.NoError(t, dev.Append(ctx, Row{"n": Scalar(int64(1))}))
	devID, err := dev.Commit(ctx, "on dev")
	require.NoError(t, err)
	old := mustOpen(t, dir, WithVersion(devID))
	require.NoError(t, d.DeleteBranch(ctx, "dev"))
	_, err = d.GC(ctx, GCOptions{})
	require.NoError(t, err)
	_, err = old.CreateTag(ctx, "dangling", "")
	require.ErrorIs(t, err, ErrNotFound)
	_, problems, err := d.Verify(ctx)
	require.NoError(t, err)
	require.Empty(t, problems)
}
