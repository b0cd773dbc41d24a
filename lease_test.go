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

// leaseBackends are the stores the writer-lease tests run on: local disk
// and a real MinIO.
var leaseBackends = map[string]func(t *testing.T) string{
	"local": func(t *testing.T) string { return t.TempDir() + "/ds" },
	"s3":    func(t *testing.T) string { return testserver.MinIO(t).URL },
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
	for _, name := range sortedKeys(leaseBackends) {
		t.Run(name, func(t *testing.T) {
			url := leaseBackends[name](t)
			d, err := Create(ctx, url, gcSchema)
			require.NoError(t, err)
			defer d.Close()
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
			_, err = d.Commit(ctx, "after gc")
			require.NoError(t, err)
			for i := range rows {
				m.ids = append(m.ids, next+uint64(i))
			}
			m.rows = append(m.rows, rows...)
			checkModel(t, d, m)
			requireVerified(t, d)

			// The commit released its lease: the next gc finds none, and
			// what is reachable stays.
			leases := 0
			require.NoError(t, d.store.List(ctx, keys.LeasePrefix, func(storage.Attrs) error { leases++; return nil }))
			require.Zero(t, leases)
			r = runGC(t, d, GCOptions{Grace: 0})
			require.Zero(t, r.Leased.Objects)
			checkModel(t, d, m)
			requireVerified(t, d)
		})
	}
}

// TestGCDuringStagedWritesLeaseLapsed: a writer whose lease lapsed (it
// stopped renewing it, as a suspended process does) loses its staged
// chunks to gc; its commit then checks them and is refused with an error
// naming them and gc, nothing is published, the dataset verifies, and the
// handle writes again.
func TestGCDuringStagedWritesLeaseLapsed(t *testing.T) {
	for _, name := range sortedKeys(leaseBackends) {
		t.Run(name, func(t *testing.T) {
			url := leaseBackends[name](t)
			d, err := Create(ctx, url, gcSchema)
			require.NoError(t, err)
			defer d.Close()
			m := &model{}
			head := gcAppend(t, d, m, gcRows(0, 8))
			d.opts.leaseTTL, d.opts.leaseRenew = 50*time.Millisecond, time.Hour
			require.NoError(t, d.Extend(ctx, gcRows(100, 200)))
			chunks := stagedChunks(t, d)
			// MinIO's stored times have a resolution of a second: wait
			// until the lease is older than its ttl there too.
			time.Sleep(1500 * time.Millisecond)

			r := runGC(t, d, GCOptions{Grace: 0})
			require.Zero(t, r.Leased.Objects)
			require.EqualValues(t, 1, r.DeadLeases)
			require.GreaterOrEqual(t, r.ByKind["chunks"].Objects, int64(len(chunks)))

			_, err = d.Commit(ctx, "after gc")
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
			d.opts.leaseTTL, d.opts.leaseRenew = 0, 0
			next := d.nextRowID(t)
			rows := gcRows(300, 20)
			require.NoError(t, d.Extend(ctx, rows))
			_, err = d.Commit(ctx, "again")
			require.NoError(t, err)
			for i := range rows {
				m.ids = append(m.ids, next+uint64(i))
			}
			m.rows = append(m.rows, rows...)
			checkModel(t, d, m)
			requireVerified(t, d)
		})
	}
}

// TestStagedCommitChecksChunks: the committer of staged writes checks the
// chunks its descriptions' fragments name, not only the fragments; a
// missing one refuses the commit naming it. With the writer's lease live,
// gc keeps the staged objects and the commit lands.
func TestStagedCommitChecksChunks(t *testing.T) {
	for _, name := range sortedKeys(leaseBackends) {
		t.Run(name, func(t *testing.T) {
			url := leaseBackends[name](t)
			d, err := Create(ctx, url, gcSchema)
			require.NoError(t, err)
			defer d.Close()
			w, err := Open(ctx, url)
			require.NoError(t, err)
			defer w.Close()

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
}

// TestLeaseObject: a stage puts its lease before its chunks, with the
// format's fields; renewals keep since; the lease knows when it lapsed.
func TestLeaseObject(t *testing.T) {
	d, _ := mustCreate(t, gcSchema)
	require.NoError(t, d.Append(ctx, gcRows(0, 1)[0]))
	st := d.stage
	key := keys.MakeLease(st.nonce)
	obj, err := d.store.Get(ctx, key)
	require.NoError(t, err)
	var b leaseBody
	require.NoError(t, json.Unmarshal(obj, &b))
	require.Nil(t, b.Since)
	require.Equal(t, defaultLeaseTTL.Seconds(), b.TTLSeconds)
	require.True(t, strings.Contains(b.Writer, ":"))
	require.True(t, st.lease.held(ctx))
	obj, err = d.store.Get(ctx, key)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(obj, &b))
	require.NotNil(t, b.Since)
	require.True(t, b.Since.Equal(st.lease.since))

	l, err := startLease(ctx, d.store, randomID(), 400*time.Millisecond, time.Hour)
	require.NoError(t, err)
	defer l.release()
	require.True(t, l.live())
	time.Sleep(300 * time.Millisecond)
	require.False(t, l.live(), "a lease unrenewed for longer than ttl/2 is not live")
	require.False(t, l.held(ctx), "a lease unrenewed for longer than ttl/2 lapsed")
	require.False(t, l.held(ctx), "a lapse is remembered")

	d.Discard()
	_, err = d.store.Stat(ctx, key)
	require.ErrorIs(t, err, storage.ErrNotFound, "Discard releases the lease")
}
