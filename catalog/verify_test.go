package catalog

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/storage"
)

func problemKeys(problems []loch.Problem) []string {
	out := []string{}
	for _, p := range problems {
		out = append(out, p.Key)
	}
	return out
}

func verifyCatalog(t *testing.T, root string) []loch.Problem {
	t.Helper()
	checked, problems, err := Verify(ctx, root)
	require.NoError(t, err)
	require.Positive(t, checked)
	return problems
}

// TestVerify checks a catalog whose log collection deleted its oldest
// entries (no problem), then damages it: each entry of the catalog log
// flipped, one in the middle deleted, an object of a table deleted. Verify
// names each by its key, a table's under tables/<dir>/.
func TestVerify(t *testing.T) {
	onBackends(t, sortedKeys(backends), func(t *testing.T, root string) {
		c := mustCreate(t, root)
		for _, n := range []string{"gone", "u", "t"} {
			d, err := c.CreateTable(ctx, n, rowsSchema)
			require.NoError(t, err)
			appendRows(t, d, 1, 2, 3)
			require.NoError(t, d.Close())
		}
		require.NoError(t, c.DropTable(ctx, "gone"))
		require.Empty(t, verifyCatalog(t, root), "a dropped table's directory is named by its older entries")
		c.now = func() time.Time { return time.Now().Add(time.Hour) }
		rep, err := c.GC(ctx, loch.GCOptions{Grace: time.Minute})
		require.NoError(t, err)
		require.Len(t, rep.Deleted, 1)
		require.Equal(t, 4, rep.LogEntries)
		require.Empty(t, verifyCatalog(t, root), "entries that gc deleted are not missing")
		for _, n := range []string{"v", "w", "x"} {
			d, err := c.CreateTable(ctx, n, rowsSchema)
			require.NoError(t, err)
			require.NoError(t, d.Close())
		}

		st := c.Store()
		var entries []string
		require.NoError(t, st.List(ctx, keys.CatalogLogPrefix, func(a storage.Attrs) error {
			if _, ok := keys.ParseLogIn(keys.CatalogLogPrefix, a.Key); ok {
				entries = append(entries, a.Key)
			}
			return nil
		}))
		require.Len(t, entries, 4, "entries 5 to 8")
		x, err := c.Table(ctx, "x")
		require.NoError(t, err)
		for i, key := range entries {
			good, err := st.Get(ctx, key)
			require.NoError(t, err)
			bad := append([]byte(nil), good...)
			bad[len(bad)/2] ^= 0x40
			require.NoError(t, st.Put(ctx, key, bad))
			want := []string{key}
			if i == len(entries)-1 { // the only entry that names x
				want = append(want, keys.MakeTable(x.Dir))
			}
			problems := verifyCatalog(t, root)
			require.Equal(t, want, problemKeys(problems))
			require.ErrorIs(t, problems[0].Err, loch.ErrCorrupt)
			require.NoError(t, st.Put(ctx, key, good))
		}

		require.NoError(t, st.Delete(ctx, entries[1]))
		problems := verifyCatalog(t, root)
		require.Equal(t, []string{entries[1]}, problemKeys(problems))
		require.ErrorIs(t, problems[0].Err, loch.ErrNotFound)

		tb, err := c.Table(ctx, "t")
		require.NoError(t, err)
		var chunk string
		require.NoError(t, st.List(ctx, keys.MakeTable(tb.Dir)+"chunks/", func(a storage.Attrs) error {
			chunk = a.Key
			return nil
		}))
		require.NoError(t, st.Delete(ctx, chunk))
		problems = verifyCatalog(t, root)
		require.Equal(t, []string{entries[1], chunk}, problemKeys(problems))
		require.ErrorIs(t, problems[1].Err, loch.ErrNotFound)
	})
}

// TestLostNewestCatalogEntry deletes the newest catalog entry, the one
// that created table t, whose rows stay in its directory. Opening the
// catalog fails with ErrCorrupt naming the entry and the hint, rather than
// let t vanish; a writer holding the catalog open cannot create t again
// (into a new directory, leaving the old rows unnamed) nor take the lost
// number; Verify reports the lost entry and lists t's directory as named
// by no entry. RepairLog accepts the loss: the catalog opens without t,
// and Verify still lists its directory until gc deletes it.
func TestLostNewestCatalogEntry(t *testing.T) {
	onBackends(t, sortedKeys(backends), func(t *testing.T, root string) {
		c := mustCreate(t, root)
		d, err := c.CreateTable(ctx, "u", rowsSchema)
		require.NoError(t, err)
		require.NoError(t, d.Close())
		d, err = c.CreateTable(ctx, "t", rowsSchema)
		require.NoError(t, err)
		appendRows(t, d, 1, 2, 3)
		require.NoError(t, d.Close())
		tb, err := c.Table(ctx, "t")
		require.NoError(t, err)
		newest := keys.MakeLogIn(keys.CatalogLogPrefix, 3)
		st := c.Store()
		require.NoError(t, st.Delete(ctx, newest))

		_, err = Open(ctx, root)
		require.ErrorIs(t, err, loch.ErrCorrupt)
		require.ErrorContains(t, err, "read "+newest+": missing (entries 3 to 3), though _catalog/log/_latest names entry 3 and the highest entry is 2")
		require.ErrorContains(t, err, "loch verify --repair-log")
		_, err = c.Tables(ctx)
		require.ErrorIs(t, err, loch.ErrCorrupt)
		_, err = c.CreateTable(ctx, "t", rowsSchema)
		require.ErrorIs(t, err, loch.ErrCorrupt)
		require.ErrorIs(t, c.DropTable(ctx, "u"), loch.ErrCorrupt)
		_, err = st.Stat(ctx, newest)
		require.ErrorIs(t, err, loch.ErrNotFound, "no writer takes the lost number")

		unnamed := keys.MakeTable(tb.Dir)
		problems := verifyCatalog(t, root)
		require.Equal(t, []string{newest, unnamed}, problemKeys(problems))
		require.ErrorIs(t, problems[0].Err, loch.ErrCorrupt)
		require.ErrorContains(t, problems[1].Err, "named by no catalog entry")

		hint, high, err := RepairLog(ctx, root)
		require.NoError(t, err)
		require.Equal(t, []uint64{3, 2}, []uint64{hint, high})
		c2 := mustOpen(t, root)
		require.Equal(t, []string{"u"}, names(t, c2))
		require.Equal(t, []string{unnamed}, problemKeys(verifyCatalog(t, root)))
		d, err = c2.CreateTable(ctx, "t", rowsSchema)
		require.NoError(t, err)
		require.NoError(t, d.Close())
		tb2, err := c2.Table(ctx, "t")
		require.NoError(t, err)
		require.NotEqual(t, tb.Dir, tb2.Dir)
		require.True(t, strings.HasPrefix(problemKeys(verifyCatalog(t, root))[0], unnamed))
	})
}

// TestVerifyNoCatalog: Verify of a root without a catalog says so.
func TestVerifyNoCatalog(t *testing.T) {
	_, _, err := Verify(ctx, memURL())
	require.ErrorIs(t, err, ErrNoCatalog)
}
