package loch

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/storage"
)

// localAndS3 are the stores the tests of concurrent writers and leases
// run on: local disk and a real MinIO.
var localAndS3 = map[string]func(t *testing.T) string{
	"local": func(t *testing.T) string { return t.TempDir() + "/ds" },
	"s3":    func(t *testing.T) string { return testserver.MinIO(t).URL },
}

// withLease sets the ttl and renewal period of a handle's lease: a short
// ttl and a long period make a writer whose lease lapses, as a suspended
// process's does.
func withLease(ttl, every time.Duration) Option {
	return func(o *options) { o.leaseTTL, o.leaseRenew = ttl, every }
}

// stagedChunks returns the keys of the chunks a handle's stage uploaded.
func stagedChunks(t *testing.T, d *Dataset) []string {
	t.Helper()
	d.wmu.Lock()
	defer d.wmu.Unlock()
	require.NotNil(t, d.stage)
	require.NoError(t, d.stage.finish(ctx))
	var out []string
	for _, fw := range d.stage.writers() {
		for _, cw := range fw.cols {
			for _, r := range cw.refs {
				out = append(out, r.Key)
			}
		}
	}
	return out
}

// TestGCDuringStagedWritesLeaseHeld is issue 34's reproduction: rows staged
// (their chunks uploaded as they are staged), a gc whose grace period they
// outlived (here none at all), then the commit. The writer's lease keeps
// every staged chunk: the commit is intact, every row reads back and the
// dataset verifies. Before leases, gc deleted the chunks and the commit
// published a version whose reads failed.
func TestGCDuringStagedWritesLeaseHeld(t *testing.T) {
	onLeaseBackends(t, func(t *testing.T, d *Dataset, url string) {
		m := &model{}
		gcAppend(t, d, m, gcRows(0, 8))
		rows := gcRows(100, 200)
		next := d.nextRowID(t)
		require.NoError(t, d.Extend(ctx, rows))
		chunks := stagedChunks(t, d)
		require.Greater(t, len(chunks), 40)

		r := runGC(t, d, GCOptions{Grace: 0})
		require.GreaterOrEqual(t, r.Leased.Objects, int64(len(chunks)))
		for _, k := range chunks {
			_, err := d.store.Stat(ctx, k)
			require.NoError(t, err, "staged chunk %s deleted by gc", k)
		}
		_, err := d.Commit(ctx, "after gc")
		require.NoError(t, err)
		m.add(next, rows)
		checkModel(t, d, m)
		requireVerified(t, d)

		// The commit deleted the stage's lease: it keeps nothing more,
		// and what is reachable stays.
		leases := 0
		require.NoError(t, d.store.List(ctx, keys.LeasePrefix, func(storage.Attrs) error { leases++; return nil }))
		require.Zero(t, leases)
		r = runGC(t, d, GCOptions{Grace: 0})
		require.Zero(t, r.Leased.Objects)
		checkModel(t, d, m)
		requireVerified(t, d)
	})
}

// TestGCDuringStagedWritesLeaseLapsed: a writer whose lease lapsed (it
// stopped renewing it, as a suspended process does) loses its staged
// chunks to gc; its commit then checks them and is refused with an error
// naming them and gc, nothing is published, the dataset verifies, and the
// handle writes again.
func TestGCDuringStagedWritesLeaseLapsed(t *testing.T) {
	onLeaseBackends(t, func(t *testing.T, d *Dataset, url string) {
		m := &model{}
		head := gcAppend(t, d, m, gcRows(0, 8))
		require.NoError(t, d.Extend(ctx, gcRows(100, 200)))
		chunks := stagedChunks(t, d)
		// MinIO's stored times have a resolution of a second: wait
		// until the lease is older than its ttl there too.
		time.Sleep(1500 * time.Millisecond)

		r := runGC(t, d, GCOptions{Grace: 0})
		require.Zero(t, r.Leased.Objects)
		require.EqualValues(t, 1, r.DeadLeases)
		require.GreaterOrEqual(t, r.ByKind["chunks"].Objects, int64(len(chunks)))

		_, err := d.Commit(ctx, "after gc")
		require.ErrorIs(t, err, ErrNotFound)
		require.Contains(t, err.Error(), "garbage collection deleted them")
		require.Contains(t, err.Error(), "lease had lapsed")
		require.Contains(t, err.Error(), "write them again")
		require.Contains(t, err.Error(), "chunks/")
		require.Equal(t, head, d.Version())
		latest, err := Open(ctx, url)
		require.NoError(t, err)
		require.Equal(t, head, latest.Version())
		require.NoError(t, latest.Close())
		checkModel(t, d, m)
		requireVerified(t, d)

		// The stage was discarded; the handle writes again.
		next := d.nextRowID(t)
		rows := gcRows(300, 20)
		require.NoError(t, d.Extend(ctx, rows))
		_, err = d.Commit(ctx, "again")
		require.NoError(t, err)
		m.add(next, rows)
		checkModel(t, d, m)
		requireVerified(t, d)
	}, withLease(50*time.Millisecond, time.Hour))
}

// TestStagedCommitChecksChunks: the committer of staged writes checks the
// chunks its descriptions' fragments name, not only the fragments; a
// missing one refuses the commit naming it. With the writer's lease live,
// gc keeps the staged objects and the commit lands.
func TestStagedCommitChecksChunks(t *testing.T) {
	onLeaseBackends(t, func(t *testing.T, d *Dataset, url string) {
		w := mustOpen(t, url)

		require.NoError(t, w.Extend(ctx, gcRows(0, 40)))
		s1, err := w.Stage(ctx)
		require.NoError(t, err)
		// Stage leaves its lease: gc keeps the description's objects.
		r := runGC(t, d, GCOptions{Grace: 0})
		require.Positive(t, r.Leased.Objects)
		require.Zero(t, r.Deleted.Objects)
		res, err := d.CommitStaged(ctx, "staged", s1)
		require.NoError(t, err)
		require.EqualValues(t, 40, res.Rows)
		requireVerified(t, d)

		require.NoError(t, w.Extend(ctx, gcRows(100, 40)))
		chunks := stagedChunks(t, w)
		s2, err := w.Stage(ctx)
		require.NoError(t, err)
		require.NoError(t, d.store.Delete(ctx, chunks[3]))
		_, err = d.CommitStaged(ctx, "staged", s2)
		require.ErrorIs(t, err, ErrNotFound)
		require.Contains(t, err.Error(), chunks[3])
		require.Contains(t, err.Error(), "garbage collection")
		require.EqualValues(t, 40, d.Len())
		requireVerified(t, d)
	})
}

// TestLeaseObject: a handle's first stage puts its lease before its
// chunks, with the format's fields; renewals carry since; the lease knows
// when it lapsed; the end of a stage leaves the object to expire, and
// Close deletes it, unless the last stage was handed to a committer.
func TestLeaseObject(t *testing.T) {
	d, url := mustCreate(t, gcSchema)
	require.NoError(t, d.Append(ctx, gcRows(0, 1)[0]))
	key := d.lease.key
	obj, err := d.store.Get(ctx, key)
	require.NoError(t, err)
	var b leaseBody
	require.NoError(t, json.Unmarshal(obj, &b))
	require.Nil(t, b.Since)
	require.Equal(t, defaultLeaseTTL.Seconds(), b.TTLSeconds)
	require.True(t, strings.Contains(b.Writer, ":"))
	a, err := d.store.Stat(ctx, key)
	require.NoError(t, err)
	require.True(t, d.stage.lease.held(ctx))
	require.NoError(t, d.stage.lease.renew(ctx))
	obj, err = d.store.Get(ctx, key)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(obj, &b))
	require.NotNil(t, b.Since)
	require.True(t, b.Since.Equal(a.ModTime), "since is the stored time of the stage's first put")

	d.Discard()
	_, err = d.store.Stat(ctx, key)
	require.ErrorIs(t, err, storage.ErrNotFound, "the end of a stage deletes its lease")

	w, err := Open(ctx, url)
	require.NoError(t, err)
	require.NoError(t, w.Append(ctx, gcRows(0, 1)[0]))
	key = w.lease.key
	_, err = w.Stage(ctx)
	require.NoError(t, err)
	require.NotEqual(t, key, w.lease.key, "the next stage has a lease of its own")
	require.NoError(t, w.Append(ctx, gcRows(1, 1)[0]))
	_, err = w.Commit(ctx, "more")
	require.NoError(t, err)
	require.NoError(t, w.Close())
	_, err = d.store.Stat(ctx, key)
	require.NoError(t, err, "a lease whose stage was handed off stays, to expire")

	l := newLease(d.store, 400*time.Millisecond, time.Hour)
	require.NoError(t, l.begin(ctx))
	require.True(t, l.live())
	time.Sleep(300 * time.Millisecond)
	require.False(t, l.live(), "a lease unrenewed for longer than ttl/2 is not live")
	require.False(t, l.held(ctx), "a lease unrenewed for longer than ttl/2 lapsed")
	require.False(t, l.held(ctx), "a lapse is remembered")
	l.end(false)
	require.NoError(t, l.begin(ctx))
	require.True(t, l.held(ctx), "a new stage begins afresh")
	l.end(false)
}

// onLeaseBackends runs fn as a subtest on each of localAndS3 with a new
// dataset of gcSchema created there with opts, closed when fn returns.
func onLeaseBackends(t *testing.T, fn func(t *testing.T, d *Dataset, url string), opts ...Option) {
	for _, name := range sortedKeys(localAndS3) {
		t.Run(name, func(t *testing.T) {
			url := localAndS3[name](t)
			d, err := Create(ctx, url, gcSchema, opts...)
			require.NoError(t, err)
			defer d.Close()
			fn(t, d, url)
		})
	}
}
