package catalog

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

var ctx = context.Background()

// TestMain lets the test binary act as the creator process of
// TestCreateProcesses.
func TestMain(m *testing.M) {
	if spec := os.Getenv(envCreator); spec != "" {
		creator(spec)
		return
	}
	code := m.Run()
	testserver.StopAll()
	os.Exit(code)
}

var memCount atomic.Int64

func memURL() string { return fmt.Sprintf("mem://catalog-%d/lake", memCount.Add(1)) }

// backends are the roots the round-trip tests run on.
var backends = map[string]func(t *testing.T) string{
	"local": func(t *testing.T) string { return t.TempDir() + "/lake" },
	"mem":   func(t *testing.T) string { return memURL() },
	"s3":    func(t *testing.T) string { return testserver.MinIO(t).URL },
}

var rowsSchema = schema.Schema{Columns: []schema.Column{{Name: "n", DType: schema.Int64}}}

func appendRows(t *testing.T, d *loch.Dataset, ns ...int64) {
	t.Helper()
	for _, n := range ns {
		require.NoError(t, d.Append(ctx, loch.Row{"n": loch.Scalar(n)}))
	}
	_, err := d.Commit(ctx, fmt.Sprintf("%d rows", len(ns)))
	require.NoError(t, err)
}

func readRows(t *testing.T, d *loch.Dataset) []int64 {
	t.Helper()
	col, err := d.Column("n")
	require.NoError(t, err)
	all, err := col.ReadRange(ctx, 0, d.Len())
	require.NoError(t, err)
	var out []int64
	for _, s := range all {
		v, err := loch.As[int64](s.Data)
		require.NoError(t, err)
		out = append(out, v[0])
	}
	return out
}

func names(t *testing.T, c *Catalog) []string {
	t.Helper()
	ts, err := c.Tables(ctx)
	require.NoError(t, err)
	out := []string{}
	for _, tb := range ts {
		out = append(out, tb.Name)
	}
	return out
}

// onBackends runs fn as a subtest on a fresh root of each named backend.
func onBackends(t *testing.T, names []string, fn func(t *testing.T, root string)) {
	for _, name := range names {
		t.Run(name, func(t *testing.T) { fn(t, backends[name](t)) })
	}
}

// mustCreate creates a catalog at root, closed when the test ends.
func mustCreate(t *testing.T, root string) *Catalog {
	t.Helper()
	c, err := Create(ctx, root)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// mustOpen opens the catalog at root, closed when the test ends.
func mustOpen(t *testing.T, root string, opts ...Option) *Catalog {
	t.Helper()
	c, err := Open(ctx, root, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// allBackends adds fake-gcs-server and Azurite to backends.
var allBackends = map[string]func(t *testing.T) string{
	"gcs":   func(t *testing.T) string { return testserver.GCS(t).URL },
	"azure": func(t *testing.T) string { return testserver.Azurite(t).URL },
}

func TestRoundTrip(t *testing.T) {
	all := map[string]func(t *testing.T) string{}
	for k, v := range backends {
		all[k] = v
	}
	for k, v := range allBackends {
		all[k] = v
	}
	for _, name := range sortedKeys(all) {
		t.Run(name, func(t *testing.T) {
			root := all[name](t)
			_, err := Open(ctx, root)
			require.ErrorIs(t, err, ErrNoCatalog)
			require.ErrorIs(t, err, loch.ErrNotFound)

			c := mustCreate(t, root)
			_, err = Create(ctx, root)
			require.ErrorIs(t, err, loch.ErrExists)
			require.Equal(t, []string{}, names(t, c))

			frames, err := c.CreateTable(ctx, "Frames", rowsSchema)
			require.NoError(t, err)
			appendRows(t, frames, 1, 2, 3)
			require.NoError(t, frames.Close())
			labels, err := c.CreateTable(ctx, "labels", rowsSchema)
			require.NoError(t, err)
			appendRows(t, labels, 7)
			require.NoError(t, labels.Close())

			_, err = c.CreateTable(ctx, "frames", rowsSchema)
			require.ErrorIs(t, err, loch.ErrExists, "names compare case-insensitively")
			require.ErrorContains(t, err, `"frames" already exists (as "Frames")`)
			require.Equal(t, []string{"Frames", "labels"}, names(t, c))

			// Another handle on the same root sees the same tables, and a
			// table opened in another case is the same dataset.
			again := mustOpen(t, root)
			f, err := again.OpenTable(ctx, "FRAMES")
			require.NoError(t, err)
			require.Equal(t, []int64{1, 2, 3}, readRows(t, f))
			tb, err := again.Table(ctx, "frames")
			require.NoError(t, err)
			require.Equal(t, "Frames", tb.Name)
			require.True(t, strings.HasPrefix(tb.Dir, "frames-"), tb.Dir)
			require.Equal(t, f.URL(), tb.URL)
			// The table's URL opens the same dataset without the catalog.
			direct, err := loch.Open(ctx, tb.URL)
			require.NoError(t, err)
			require.Equal(t, []int64{1, 2, 3}, readRows(t, direct))
			require.NoError(t, direct.Close())

			// Version pinning through the ordinary options.
			v1 := f.Version()
			appendRows(t, f, 4)
			pinned, err := c.OpenTable(ctx, "frames", loch.WithVersion(v1))
			require.NoError(t, err)
			require.Equal(t, []int64{1, 2, 3}, readRows(t, pinned))
			require.True(t, pinned.ReadOnly())
			require.NoError(t, pinned.Close())

			// Rename: the data does not move, an open handle keeps working.
			require.NoError(t, c.RenameTable(ctx, "frames", "clips"))
			require.Equal(t, []string{"clips", "labels"}, names(t, c))
			_, err = c.OpenTable(ctx, "frames")
			require.ErrorIs(t, err, loch.ErrNotFound)
			require.NoError(t, f.Refresh(ctx))
			require.Equal(t, []int64{1, 2, 3, 4}, readRows(t, f))
			require.NoError(t, f.Close())
			clips, err := c.Table(ctx, "Clips")
			require.NoError(t, err)
			require.Equal(t, tb.Dir, clips.Dir)
			require.ErrorIs(t, c.RenameTable(ctx, "clips", "LABELS"), loch.ErrExists)
			require.ErrorIs(t, c.RenameTable(ctx, "nope", "other"), loch.ErrNotFound)
			require.NoError(t, c.RenameTable(ctx, "clips", "Clips"), "a change of case is a rename")
			require.Equal(t, []string{"Clips", "labels"}, names(t, c))

			// Drop.
			require.NoError(t, c.DropTable(ctx, "LABELS"))
			require.Equal(t, []string{"Clips"}, names(t, c))
			require.ErrorIs(t, c.DropTable(ctx, "labels"), loch.ErrNotFound)
			_, err = c.OpenTable(ctx, "labels")
			require.ErrorIs(t, err, loch.ErrNotFound)
			// A new table of a dropped name is a new, empty dataset.
			l2, err := c.CreateTable(ctx, "labels", rowsSchema)
			require.NoError(t, err)
			require.Equal(t, int64(0), l2.Len())
			require.NoError(t, l2.Close())
		})
	}
}

func TestBadNames(t *testing.T) {
	c, err := Create(ctx, memURL())
	require.NoError(t, err)
	defer c.Close()
	d, err := c.CreateTable(ctx, "ok", rowsSchema)
	require.NoError(t, err)
	require.NoError(t, d.Close())
	before, err := c.log.Latest(ctx)
	require.NoError(t, err)
	for _, bad := range []string{
		"", "a/b", "/abs", "..", "../up", "a..b", ".", `a\b`, "tab\there", "nul\x00", "del\x7f",
		"\u0085next", " lead", "trail ", "bad\xffutf8", "_loch", "_LOCH_tables", strings.Repeat("n", 256),
	} {
		_, err := c.CreateTable(ctx, bad, rowsSchema)
		require.ErrorIs(t, err, loch.ErrInvalidArgument, "create %q", bad)
		_, err = c.OpenTable(ctx, bad)
		require.ErrorIs(t, err, loch.ErrInvalidArgument, "open %q", bad)
		require.ErrorIs(t, c.DropTable(ctx, bad), loch.ErrInvalidArgument, "drop %q", bad)
		require.ErrorIs(t, c.RenameTable(ctx, "ok", bad), loch.ErrInvalidArgument, "rename to %q", bad)
	}
	after, err := c.log.Latest(ctx)
	require.NoError(t, err)
	require.Equal(t, before.Seq, after.Seq, "no bad name wrote an entry")
	var dirs []string
	require.NoError(t, c.store.List(ctx, keys.TablesPrefix, func(a storage.Attrs) error {
		dir, _, _ := strings.Cut(strings.TrimPrefix(a.Key, keys.TablesPrefix), "/")
		if !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
		return nil
	}))
	require.Len(t, dirs, 1, "no bad name wrote a table")
	for _, good := range []string{"a", "Frames", "episode.2024-01", "über_tables", "with space", "_private", strings.Repeat("n", 255)} {
		require.NoError(t, ValidName(good), good)
	}
}

func TestNewDir(t *testing.T) {
	for name, slug := range map[string]string{
		"Frames": "frames", "a b/c": "a_b_c", "über": "__ber", "日本": "t", "x.y": "x_y",
		strings.Repeat("A", 60): strings.Repeat("a", 48),
	} {
		if name == "日本" {
			slug = "______" // six bytes of UTF-8, each replaced
		}
		dir := newDir(name)
		require.Regexp(t, "^"+slug+"-[0-9a-f]{16}$", dir, name)
		require.NoError(t, checkDir(dir))
	}
	require.NotEqual(t, newDir("x"), newDir("x"), "directories are never reused")
	require.Regexp(t, "^t-[0-9a-f]{16}$", newDir(""))
}

// countingStore counts the operations made through it.
type countingStore struct {
	storage.Store
	gets, lists, others atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, key)
}

func (s *countingStore) ReadRange(ctx context.Context, key string, off int64, dst []byte) error {
	s.others.Add(1)
	return s.Store.ReadRange(ctx, key, off, dst)
}

func (s *countingStore) Stat(ctx context.Context, key string) (storage.Attrs, error) {
	s.others.Add(1)
	return s.Store.Stat(ctx, key)
}

func (s *countingStore) List(ctx context.Context, prefix string, fn func(storage.Attrs) error) error {
	s.lists.Add(1)
	return s.Store.List(ctx, prefix, fn)
}

// TestTablesReadsOnlyTheLog lists a catalog of 10,000 tables and checks
// that it took three reads (the hint, the newest entry, the missing next
// one) and no listing: no table is opened (their directories do not even
// exist here).
func TestTablesReadsOnlyTheLog(t *testing.T) {
	onBackends(t, []string{"mem", "s3"}, func(t *testing.T, root string) {
		c := mustCreate(t, root)
		const n = 10000
		e := &manifest.Catalog{Seq: 2, Prev: 1, Time: time.Now().UTC(), Tables: map[string]manifest.CatalogTable{}, Op: "many"}
		for i := range n {
			name := fmt.Sprintf("table_%05d", i)
			e.Tables[name] = manifest.CatalogTable{Dir: newDir(name), Created: e.Time}
		}
		require.NoError(t, c.log.Put(ctx, e))
		c.log.Hint(ctx, 2)

		st, err := storage.Open(ctx, root)
		require.NoError(t, err)
		cs := &countingStore{Store: st}
		defer st.Close()
		c2, err := Open(ctx, root, WithStore(cs))
		require.NoError(t, err)
		cs.gets.Store(0)
		tables, err := c2.Tables(ctx)
		require.NoError(t, err)
		require.Len(t, tables, n)
		require.Equal(t, "table_00000", tables[0].Name)
		require.Equal(t, "table_09999", tables[n-1].Name)
		require.Equal(t, int64(3), cs.gets.Load(), "hint, newest entry, the missing next one")
		require.Equal(t, int64(0), cs.lists.Load()+cs.others.Load(), "no listing, no other read")
	})
}

// TestModel runs random creates, drops and renames from two handles
// against an in-memory model of the catalog, comparing the listing after
// every step.
func TestModel(t *testing.T) {
	rng := testseed.Rand(t, 12)
	root := memURL()
	c1 := mustCreate(t, root)
	c2 := mustOpen(t, root)
	model := map[string]string{} // fold(name) -> name
	pool := []string{"a", "A", "b", "B", "frames", "Frames", "labels", "x.y", "über", "ÜBER"}
	for step := range 200 {
		c := []*Catalog{c1, c2}[rng.IntN(2)]
		name := pool[rng.IntN(len(pool))]
		have, exists := model[fold(name)]
		switch op := rng.IntN(3); op {
		case 0:
			d, err := c.CreateTable(ctx, name, rowsSchema)
			if exists {
				require.ErrorIs(t, err, loch.ErrExists, "step %d: create %q (have %q)", step, name, have)
				break
			}
			require.NoError(t, err, "step %d: create %q", step, name)
			require.NoError(t, d.Close())
			model[fold(name)] = name
		case 1:
			err := c.DropTable(ctx, name)
			if !exists {
				require.ErrorIs(t, err, loch.ErrNotFound, "step %d: drop %q", step, name)
				break
			}
			require.NoError(t, err, "step %d: drop %q", step, name)
			delete(model, fold(name))
		case 2:
			to := pool[rng.IntN(len(pool))]
			other, taken := model[fold(to)]
			err := c.RenameTable(ctx, name, to)
			switch {
			case !exists:
				require.ErrorIs(t, err, loch.ErrNotFound, "step %d: rename %q", step, name)
			case taken && other != have:
				require.ErrorIs(t, err, loch.ErrExists, "step %d: rename %q to %q", step, name, to)
			default:
				require.NoError(t, err, "step %d: rename %q to %q", step, name, to)
				delete(model, fold(name))
				model[fold(to)] = to
			}
		}
		var want []string
		for _, n := range model {
			want = append(want, n)
		}
		slices.SortFunc(want, func(a, b string) int { return strings.Compare(fold(a), fold(b)) })
		got := names(t, []*Catalog{c1, c2}[rng.IntN(2)])
		require.Equal(t, append([]string{}, want...), got, "step %d", step)
	}
}

// TestCreateRace creates one name from many goroutines on two handles:
// exactly one wins, the others get ErrExists, and the losers' directories
// are gone.
func TestCreateRace(t *testing.T) {
	onBackends(t, []string{"local", "mem"}, func(t *testing.T, root string) {
		c1 := mustCreate(t, root)
		c2 := mustOpen(t, root)
		const n = 8
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				d, err := []*Catalog{c1, c2}[i%2].CreateTable(ctx, []string{"race", "RACE"}[i%2], rowsSchema)
				if err == nil {
					appendRows(t, d, int64(i))
					d.Close()
				}
				errs[i] = err
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			if err == nil {
				require.Equal(t, -1, winner, "two winners")
				winner = i
				continue
			}
			require.ErrorIs(t, err, loch.ErrExists, "creator %d", i)
		}
		require.NotEqual(t, -1, winner)
		d, err := c1.OpenTable(ctx, "race")
		require.NoError(t, err)
		require.Equal(t, []int64{int64(winner)}, readRows(t, d))
		require.NoError(t, d.Close())
		rep, err := c1.GC(ctx, loch.GCOptions{Grace: 0, DryRun: true})
		require.NoError(t, err)
		require.Empty(t, rep.Deleted, "the losers removed their own directories")
	})
}

// TestDropKeepsReaders drops a table that a reader has open: the reader
// reads on, and garbage collection deletes the directory only once the
// grace period has passed since the drop.
func TestDropKeepsReaders(t *testing.T) {
	onBackends(t, []string{"local", "s3"}, func(t *testing.T, root string) {
		c := mustCreate(t, root)
		d, err := c.CreateTable(ctx, "doomed", rowsSchema)
		require.NoError(t, err)
		appendRows(t, d, 5, 6)
		keep, err := c.CreateTable(ctx, "kept", rowsSchema)
		require.NoError(t, err)
		appendRows(t, keep, 1)
		require.NoError(t, keep.Close())
		tb, err := c.Table(ctx, "doomed")
		require.NoError(t, err)

		require.NoError(t, c.DropTable(ctx, "doomed"))
		// An unnamed directory: a creation that never wrote its entry.
		orphan := newDir("orphan")
		ost, err := storage.Sub(c.store, keys.MakeTable(orphan))
		require.NoError(t, err)
		o, err := loch.Create(ctx, ost.URL(), rowsSchema, loch.WithStore(ost))
		require.NoError(t, err)
		require.NoError(t, o.Close())

		rep, err := c.GC(ctx, loch.GCOptions{Grace: time.Hour})
		require.NoError(t, err)
		require.Empty(t, rep.Deleted, "dropped within the grace period")
		require.Equal(t, []string{orphan}, dirNames(rep.Young), "stored within the grace period")
		require.Equal(t, []int64{5, 6}, readRows(t, d), "the reader reads on")
		require.Contains(t, rep.Tables, "kept")
		require.NotContains(t, rep.Tables, "doomed", "a dropped table is not collected as a table")

		// Two hours later, with the same grace: the drop and the
		// orphan's objects are older than it.
		c.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
		rep, err = c.GC(ctx, loch.GCOptions{Grace: time.Hour, DryRun: true})
		require.NoError(t, err)
		require.ElementsMatch(t, []string{tb.Dir, orphan}, dirNames(rep.Deleted), "dry run")
		require.Equal(t, []int64{5, 6}, readRows(t, d), "a dry run deletes nothing")
		// The log: create catalog, create doomed, create kept, drop
		// doomed; all but the newest are older than the grace period.
		require.Equal(t, 3, rep.LogEntries, "dry run")
		_, err = c.log.Read(ctx, 1)
		require.NoError(t, err, "a dry run deletes no entry")

		rep, err = c.GC(ctx, loch.GCOptions{Grace: time.Hour})
		require.NoError(t, err)
		require.ElementsMatch(t, []string{tb.Dir, orphan}, dirNames(rep.Deleted))
		require.Empty(t, rep.Young)
		require.Positive(t, rep.Deleted[0].Objects)
		require.NoError(t, d.Close())
		for _, dir := range []string{tb.Dir, orphan} {
			n := 0
			require.NoError(t, c.store.List(ctx, keys.MakeTable(dir), func(storage.Attrs) error { n++; return nil }))
			require.Zero(t, n, "directory %s is gone", dir)
		}
		k, err := c.OpenTable(ctx, "kept")
		require.NoError(t, err)
		require.Equal(t, []int64{1}, readRows(t, k), "live tables are untouched")
		require.NoError(t, k.Close())

		// Old entries are gone, the newest stays, and the catalog works
		// on: it still exists for Create, lists, and takes changes.
		require.Equal(t, 3, rep.LogEntries)
		for seq := uint64(1); seq <= 3; seq++ {
			_, err = c.log.Read(ctx, seq)
			require.ErrorIs(t, err, loch.ErrNotFound, "entry %d", seq)
		}
		_, err = Create(ctx, root)
		require.ErrorIs(t, err, loch.ErrExists, "a catalog whose entry 1 was collected still exists")
		require.NoError(t, c.store.Delete(ctx, keys.LatestIn(keys.CatalogLogPrefix)))
		again, err := Open(ctx, root)
		require.NoError(t, err, "found by listing the log")
		require.Equal(t, []string{"kept"}, names(t, again))
		n2, err := again.CreateTable(ctx, "new", rowsSchema)
		require.NoError(t, err)
		require.NoError(t, n2.Close())
		require.Equal(t, []string{"kept", "new"}, names(t, c))
		require.NoError(t, again.Close())
		rep, err = c.GC(ctx, loch.GCOptions{Grace: time.Hour})
		require.NoError(t, err)
		require.Equal(t, 1, rep.LogEntries, "the drop, which the first collection kept as the newest")
		require.Empty(t, rep.Deleted)
		// Now, not two hours later: the newest entry is within the grace
		// period, and reading back meets the entries collected before.
		c.now = time.Now
		rep, err = c.GC(ctx, loch.GCOptions{Grace: time.Hour})
		require.NoError(t, err)
		require.Zero(t, rep.LogEntries)
		require.Empty(t, rep.Deleted)
		require.Equal(t, []string{"kept", "new"}, names(t, c))
	})
}

func dirNames(rs []DirReport) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.Dir)
	}
	return out
}

// TestCorruptEntry checks that a catalog entry breaking the rules of §6 is
// refused as corrupt, naming the entry.
func TestCorruptEntry(t *testing.T) {
	for what, tables := range map[string]map[string]manifest.CatalogTable{
		"escaping dir":   {"t": {Dir: "../../etc"}},
		"nested dir":     {"t": {Dir: "a/b"}},
		"bad name":       {"a/b": {Dir: "a-0000000000000000"}},
		"same name":      {"t": {Dir: "t-1"}, "T": {Dir: "t-2"}},
		"same directory": {"a": {Dir: "x-1"}, "b": {Dir: "x-1"}},
	} {
		root := memURL()
		c, err := Create(ctx, root)
		require.NoError(t, err)
		require.NoError(t, c.log.Put(ctx, &manifest.Catalog{Seq: 2, Prev: 1, Tables: tables}))
		_, err = c.Tables(ctx)
		require.ErrorIs(t, err, loch.ErrCorrupt, what)
		require.ErrorContains(t, err, keys.MakeLogIn(keys.CatalogLogPrefix, 2), what)
		require.ErrorIs(t, c.DropTable(ctx, "t"), loch.ErrCorrupt, what)
		require.NoError(t, c.Close())
	}
}

func FuzzDecodeEntry(f *testing.F) {
	for _, e := range []manifest.Catalog{
		{Seq: 1, Tables: map[string]manifest.CatalogTable{}},
		{Seq: 3, Prev: 2, Tables: map[string]manifest.CatalogTable{"Frames": {Dir: "frames-0123456789abcdef"}, "b": {Dir: "b-0123456789abcdef"}}, Op: "create table b"},
	} {
		obj, err := manifest.Encode(manifest.KindCatalog, e)
		require.NoError(f, err)
		f.Add(obj)
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		e, err := decodeEntry(obj)
		if err != nil {
			return
		}
		for name, tb := range e.Tables {
			require.NoError(t, ValidName(name))
			require.NoError(t, checkDir(tb.Dir))
			require.False(t, strings.Contains(keys.MakeTable(tb.Dir), ".."))
		}
	})
}

// TestGCWhileWriting runs catalog gc (grace one hour) over and over while
// tables are created, written, renamed and dropped: no table that the
// catalog names loses anything, and a table dropped within the grace
// period stays readable through its handle.
func TestGCWhileWriting(t *testing.T) {
	onBackends(t, []string{"local", "mem"}, func(t *testing.T, root string) {
		c := mustCreate(t, root)
		stop := make(chan struct{})
		gcDone := make(chan error, 1)
		go func() {
			for {
				select {
				case <-stop:
					gcDone <- nil
					return
				default:
				}
				if _, err := c.GC(ctx, loch.GCOptions{Grace: time.Hour}); err != nil {
					gcDone <- err
					return
				}
			}
		}()
		var dropped []*loch.Dataset
		for i := range 12 {
			name := fmt.Sprintf("t%d", i)
			d, err := c.CreateTable(ctx, name, rowsSchema)
			require.NoError(t, err)
			appendRows(t, d, int64(i), int64(i+100))
			switch i % 3 {
			case 1:
				require.NoError(t, c.RenameTable(ctx, name, name+"-renamed"))
				require.NoError(t, d.Close())
			case 2:
				require.NoError(t, c.DropTable(ctx, name))
				dropped = append(dropped, d)
			default:
				require.NoError(t, d.Close())
			}
		}
		close(stop)
		require.NoError(t, <-gcDone)
		tables, err := c.Tables(ctx)
		require.NoError(t, err)
		require.Len(t, tables, 8)
		for _, tb := range tables {
			d, err := c.OpenTable(ctx, tb.Name)
			require.NoError(t, err)
			var i int64
			_, err = fmt.Sscanf(tb.Name, "t%d", &i)
			require.NoError(t, err)
			require.Equal(t, []int64{i, i + 100}, readRows(t, d), tb.Name)
			require.NoError(t, d.Close())
		}
		for _, d := range dropped {
			require.Len(t, readRows(t, d), 2, "dropped within the grace period: still readable")
			require.NoError(t, d.Close())
		}
	})
}

// TestPlaces: a catalog is not made at a dataset's root or inside a
// dataset, nor inside another catalog's reserved folders, and a dataset
// is not made at a catalog's root or inside its reserved folders; a
// refused creation writes nothing (issue 35 item 9: connect() on a
// dataset's folder wrote _catalog/ into it, and loch serve then showed an
// empty catalog instead of the dataset).
func TestPlaces(t *testing.T) {
	dir := t.TempDir()
	ds := dir + "/ds"
	d, err := loch.Create(ctx, ds, rowsSchema)
	require.NoError(t, err)
	require.NoError(t, d.Close())
	for _, tc := range []struct{ root, msg string }{
		{ds, "a loch dataset is there (log/00000000000000000001): a catalog cannot share a dataset's folder"},
		{ds + "/sub/deeper", "inside the loch dataset at " + ds},
		{"file://" + ds, "a loch dataset is there"},
	} {
		_, err := Open(ctx, tc.root, WithCreate())
		require.ErrorIs(t, err, loch.ErrInvalidArgument, tc.root)
		require.ErrorContains(t, err, tc.msg)
		_, err = Create(ctx, tc.root)
		require.ErrorIs(t, err, loch.ErrInvalidArgument, tc.root)
	}
	_, err = os.Stat(ds + "/_catalog")
	require.ErrorIs(t, err, os.ErrNotExist, "nothing written into the dataset")
	d, err = loch.Open(ctx, ds)
	require.NoError(t, err, "the dataset is untouched")
	require.NoError(t, d.Close())

	// The same through a store: a mem:// dataset's root.
	mem := memURL()
	d, err = loch.Create(ctx, mem, rowsSchema)
	require.NoError(t, err)
	require.NoError(t, d.Close())
	_, err = Open(ctx, mem, WithCreate())
	require.ErrorIs(t, err, loch.ErrInvalidArgument)

	cat := dir + "/lake"
	c, err := Create(ctx, cat)
	require.NoError(t, err)
	defer c.Close()
	for _, tc := range []struct{ url, msg string }{
		{cat, "a loch catalog is there (_catalog/log/): a dataset cannot share a catalog's folder"},
		{cat + "/tables/mine", "inside the folder tables/ that the catalog at " + cat},
		{cat + "/_catalog", "inside the folder _catalog/ that the catalog at " + cat},
		{cat + "/_catalog/log/x", "inside the folder _catalog/ that the catalog at " + cat},
	} {
		_, err := loch.Create(ctx, tc.url, rowsSchema)
		require.ErrorIs(t, err, loch.ErrInvalidArgument, tc.url)
		require.ErrorContains(t, err, tc.msg)
		if tc.url != cat {
			_, err = Create(ctx, tc.url)
			require.ErrorIs(t, err, loch.ErrInvalidArgument, tc.url)
			require.ErrorContains(t, err, tc.msg)
		}
	}
	_, err = os.Stat(cat + "/tables")
	require.ErrorIs(t, err, os.ErrNotExist, "nothing written into the catalog's folders")

	// Beside the reserved folders is anyone's; tables are the catalog's.
	other, err := loch.Create(ctx, cat+"/other", rowsSchema)
	require.NoError(t, err)
	require.NoError(t, other.Close())
	tbl, err := c.CreateTable(ctx, "frames", rowsSchema)
	require.NoError(t, err)
	require.NoError(t, tbl.Close())
	require.Equal(t, []string{"frames"}, names(t, c))
}
